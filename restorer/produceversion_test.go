package restorer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestRestoreOnABrokerWithoutProduceV8 restores into a broker that offers
// Produce v9 and later only, as a later Kafka may (KIP-896 removed v0-v2
// in 4.0): a kfake cluster whose ApiVersions answer says so. The restore's
// producers send v8 only where every broker offers it, and else the
// version franz-go negotiates, with the batch cap that is safe there
// (restorer/limits.go, batchLimits); pinned to v8 regardless, franz-go
// failed every produce ("broker is too old").
func TestRestoreOnABrokerWithoutProduceV8(t *testing.T) {
	t.Parallel()
	k := testkit.StartKfake(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	real, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, testkit.Client(t, k.Addrs()))
	if err != nil {
		t.Fatal(err)
	}
	k.ControlKey(kmsg.ApiVersions.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		resp := *real
		resp.Version = req.GetVersion()
		resp.ApiKeys = slices.Clone(real.ApiKeys)
		for i := range resp.ApiKeys {
			if resp.ApiKeys[i].ApiKey == kmsg.Produce.Int16() {
				resp.ApiKeys[i].MinVersion = 9
			}
		}
		return &resp, nil, true
	})
	records := make([]format.Record, 500)
	for i := range records {
		records[i] = rec(time.Now().UnixMilli()-int64(i%2), fmt.Sprintf("key-%03d", i), fmt.Sprintf("value %d", i))
	}
	store := writeBackup(t, testTopic{name: "no-v8", records: records})
	if _, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: "none"}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	got := consumeAll(t, k.Addrs(), "no-v8", len(records))
	for i, r := range got {
		if string(r.Key) != fmt.Sprintf("key-%03d", i) || r.Offset != int64(i) {
			t.Fatalf("record %d restored as offset %d key %q", i, r.Offset, r.Key)
		}
	}
}
