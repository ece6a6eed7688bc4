package restorer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// listOffsetsFaults makes the target's brokers answer ListOffsets for each
// partition with code for the partition's first n requests, as Kafka does
// (NOT_LEADER_OR_FOLLOWER) for a while right after CreateTopics although
// metadata already names a leader. It returns how many partition answers
// it failed.
func listOffsetsFaults(dst *testkit.Kfake, n int, code int16) func() int {
	var (
		mu     sync.Mutex
		seen   = map[string]int{}
		failed int
	)
	dst.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		lr := req.(*kmsg.ListOffsetsRequest)
		mu.Lock()
		defer mu.Unlock()
		fail := false
		for _, rt := range lr.Topics {
			for _, rp := range rt.Partitions {
				k := fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)
				if seen[k] < n {
					fail = true
				}
				seen[k]++
			}
		}
		if !fail {
			return nil, nil, false
		}
		resp := lr.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range lr.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
				failed++
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return failed }
}

// TestRestoreIntoNewTopicsRetriesNotLeader is a regression test: right
// after CreateTopics a real broker answers ListOffsets with
// NOT_LEADER_OR_FOLLOWER for a while although metadata names a leader, and
// the first flush of a restore failed with "another producer is writing to
// it" (issue 9: 16 of 26 runs on Kafka 4.4). The restore waits until every
// new partition answers and retries retriable per-partition errors.
func TestRestoreIntoNewTopicsRetriesNotLeader(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	failed := listOffsetsFaults(dst, 3, kerr.NotLeaderForPartition.Code)
	ctx := context.Background()
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if err != nil {
		t.Fatalf("restore into new topics whose partitions answer NOT_LEADER_OR_FOLLOWER at first: %v", err)
	}
	if failed() == 0 {
		t.Fatal("no ListOffsets answer was failed: the test injected nothing")
	}
	if !rep.Committed {
		t.Fatal("offsets not committed")
	}
	for _, tp := range m.Topics {
		for _, pc := range tp.PartitionCuts {
			got, err := sample.ReadCommitted(ctx, dst.Addrs(), tp.Name, map[int32]int64{pc.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != pc.Records {
				t.Fatalf("%s/%d: %d records on the target, the backup has %d", tp.Name, pc.Partition, len(got), pc.Records)
			}
		}
	}
}

// TestRestoreReportsANonRetriableListOffsetsError: a partition error that
// is not retriable is reported as what it is, naming the topic, the
// partition and Kafka's error code, never as another producer writing.
func TestRestoreReportsANonRetriableListOffsetsError(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	listOffsetsFaults(dst, 1<<30, kerr.UnsupportedVersion.Code)
	_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
	if err == nil {
		t.Fatal("restore succeeded although every ListOffsets answer failed")
	}
	var re *restorer.RefusedError
	if errors.As(err, &re) || strings.Contains(err.Error(), "another producer") {
		t.Fatalf("err = %v; want the broker's error, not a refusal or another producer", err)
	}
	for _, want := range []string{"UNSUPPORTED_VERSION", "error code 35", "partition "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to say %q", err, want)
		}
	}
}

// TestValidateOnlyCreateTopicsTimeoutIsNotARefusal is a regression test
// (issue 9): a validate-only CreateTopics that timed out said the topic
// "cannot be created on the target" (a refusal, exit 2). A retriable error
// is transient: it is retried, and the restore goes on once the target
// answers.
func TestValidateOnlyCreateTopicsTimeoutIsNotARefusal(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	var mu sync.Mutex
	timedOut := 0
	dst.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		cr := req.(*kmsg.CreateTopicsRequest)
		mu.Lock()
		defer mu.Unlock()
		if !cr.ValidateOnly || timedOut >= 3 {
			return nil, nil, false
		}
		timedOut++
		resp := cr.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range cr.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	if _, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store}); err != nil {
		t.Fatalf("restore whose first validate-only CreateTopics requests time out: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if timedOut != 3 {
		t.Fatalf("%d validate-only CreateTopics requests timed out, want 3", timedOut)
	}
}
