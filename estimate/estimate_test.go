package estimate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Tolerance is how far the projected restore time may be from a real
// restore of the same data: within a factor of 3 either way. A restore's
// speed depends on the target and the load of the machine; the estimate
// only promises the order of magnitude an operator plans an RTO with.
const tolerance = 3.0

// TestEstimateMatchesARealRestore: the estimate, measured from a first
// restore, projects the time of a second restore of the same backup into
// another cluster within the tolerance.
func TestEstimateMatchesARealRestore(t *testing.T) {
	src := testkit.StartKfake(t, 1)
	ctx := context.Background()
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"est-input", "est-app-store-changelog"} {
		if _, err := adm.CreateTopic(ctx, 3, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 30000 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%06d", i)), Value: []byte(fmt.Sprintf("value-%09d", i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	if _, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: "est-app", Include: []string{"est-*"}}); err != nil {
		t.Fatal(err)
	}

	// Before any restore: the stated default.
	e, err := estimate.Run(ctx, estimate.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if e.Throughput.Source != "default" || e.Throughput.RecordsPerSecond != estimate.DefaultRecordsPerSecond {
		t.Fatalf("throughput without reports: %+v", e.Throughput)
	}
	byName := map[string]estimate.Strategy{}
	for _, s := range e.Strategies {
		byName[s.Name] = s
	}
	if byName["changelog"].Records != 60000 || byName["rebuild"].Records != 30000 || byName["standby"].Note == "" {
		t.Fatalf("volumes: %+v", e.Strategies)
	}

	restore := func() time.Duration {
		dst := testkit.StartKfake(t, 1)
		began := time.Now()
		if _, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store}); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	restore() // measures the throughput
	e, err = estimate.Run(ctx, estimate.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if e.Throughput.Source != "measured" || len(e.Throughput.Reports) != 1 {
		t.Fatalf("throughput after a restore: %+v", e.Throughput)
	}
	projected := time.Duration(e.Strategies[0].RestoreSeconds * float64(time.Second))
	actual := restore()
	ratio := float64(actual) / float64(projected)
	t.Logf("projected %s, actual %s (ratio %.2f, %0.f records/s measured)", projected, actual, ratio, e.Throughput.RecordsPerSecond)
	if ratio > tolerance || ratio < 1/tolerance {
		t.Fatalf("a real restore took %s, the estimate said %s: outside a factor of %.0f", actual, projected, tolerance)
	}
}
