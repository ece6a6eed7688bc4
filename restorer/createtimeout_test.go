package restorer_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestCreateTopicsTimeoutWhoseTopicTheBrokerCreated: a CreateTopics whose
// answer is REQUEST_TIMED_OUT while the broker did create the topic (the
// controller was slow; Kafka's CreateTopics timeout does not undo the
// creation) is not the end of the restore: the topic, found with the
// partitions and configs asked for and empty, is the restore's own, and
// every record is restored exactly once in the same run. The restore
// failed on it, and a re-run refused the topic once it held records
// (issue 14).
func TestCreateTopicsTimeoutWhoseTopicTheBrokerCreated(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	other := kadm.NewClient(testkit.Client(t, dst.Addrs()))
	var injected atomic.Int32
	dst.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		cr := req.(*kmsg.CreateTopicsRequest)
		if cr.ValidateOnly || len(cr.Topics) != 1 || injected.Load() > 0 {
			return nil, nil, false
		}
		injected.Add(1)
		// The broker creates it (another client's request, let through
		// while this one sleeps), and this answer says it timed out.
		ct := cr.Topics[0]
		configs := map[string]*string{}
		for _, c := range ct.Configs {
			configs[c.Name] = c.Value
		}
		done := make(chan error, 1)
		go func() {
			_, err := other.CreateTopic(ctx, ct.NumPartitions, ct.ReplicationFactor, configs, ct.Topic)
			done <- err
		}()
		var cerr error
		dst.SleepControl(func() { cerr = <-done })
		if cerr != nil {
			t.Errorf("creating %s behind the timed-out request: %v", ct.Topic, cerr)
		}
		resp := cr.ResponseKind().(*kmsg.CreateTopicsResponse)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = ct.Topic, kerr.RequestTimedOut.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if injected.Load() == 0 {
		t.Fatal("no CreateTopics was answered REQUEST_TIMED_OUT")
	}
	if err != nil {
		t.Fatalf("restore after a CreateTopics that timed out but created its topic: %v", err)
	}
	if !rep.Committed {
		t.Fatal("offsets not committed")
	}
	restoredOnce(t, store, m, dst.Addrs())
}
