package restorer_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRestoreAllocationsPerRecord: a restore of 40,000 records with three
// headers each into a real Kafka 4.4 broker (its own process: only the
// restore's allocations count) allocates at most maxAllocsPerRecord heap
// objects per record, everything included (the segments' decode, the
// kgo.Records, franz-go's batching, the plan and the journal). Every
// object is the GC's work: the records phase's CPU went to malloc and GC
// as much as to the producer's codec (issue 13, docs/PERFORMANCE.md case
// a). The restore allocated 15.2 per record: a kgo.Record, its header
// slice apart and a produce callback of its own for each record, besides
// the decoded format.Record, key, value and headers (13.2 now: a
// kgo.Record with its headers is one object, one callback per chunk).
func TestRestoreAllocationsPerRecord(t *testing.T) {
	const (
		records            = 40_000
		maxAllocsPerRecord = 14.0
	)
	src := testkit.StartKfake(t, 1, kfake.SeedTopics(2, "orders"))
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: fmt.Appendf(nil, "customer-%d", i%977),
			Value: fmt.Appendf(nil, "%0300d", i), Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "%016x", i)}, {Key: "type", Value: []byte("order")}, {Key: "null", Value: nil}}})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store, Include: []string{"orders"}}); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	src.Close()
	dst := testkit.StartKafka(t)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	var restored int64
	for _, pr := range res.Partitions {
		restored += pr.Records
	}
	if restored != records {
		t.Fatalf("restored %d records, want %d", restored, records)
	}
	perRecord := float64(after.Mallocs-before.Mallocs) / records
	t.Logf("%.2f allocations and %.0f bytes allocated per record", perRecord, float64(after.TotalAlloc-before.TotalAlloc)/records)
	if perRecord > maxAllocsPerRecord {
		t.Errorf("the restore allocated %.2f heap objects per record, want at most %.1f", perRecord, maxAllocsPerRecord)
	}
}
