package restorer_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// backedUpOrders backs up topic "orders" (1 partition) holding n records
// of 64-byte values, with headers and timestamps.
func backedUpOrders(t *testing.T, n int) storage.Backend {
	t.Helper()
	src := testkit.StartKfake(t, 1, kfake.SeedTopics(1, "orders"))
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "k%d", i%97), Value: fmt.Appendf(nil, "%064d", i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{byte(i)}}}, Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
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
	return store
}

// TestForeignProducerMidRestoreIsCaught: another producer writes one
// record to the partition being restored once the restore's first records
// are acknowledged (between its chunks): the restore fails naming the
// topic and partition and another producer, and commits nothing
// (docs/DOMAIN.md#field-case-19 A4). It passed on the per-chunk
// ListEndOffsets check and must keep passing on the checks that replace
// it: the end once before the first produce and once after the last, and
// in between the offset each produce response assigned. With a small
// producer buffer the foreign record lands while the restore's records
// are still to come, and the offsets catch it ("landed at offset").
func TestForeignProducerMidRestoreIsCaught(t *testing.T) {
	store := backedUpOrders(t, 9000)
	for _, c := range []struct {
		name     string
		buffered int
		want     string
	}{
		{"default buffer", 0, "another producer is writing to it"},
		{"small buffer, caught by the produce offsets", 16 << 10, "landed at offset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := testkit.StartKfake(t, 1)
			foreign := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var (
				once    sync.Once
				written error
			)
			obs := restoredObserver{restored: func() {
				once.Do(func() {
					written = foreign.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("foreign")}).FirstErr()
				})
			}}
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1,
				MaxBufferedBytes: c.buffered, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})), Observer: obs})
			if written != nil {
				t.Fatalf("the foreign producer could not write: %v", written)
			}
			if err == nil {
				t.Fatalf("restore succeeded (committed %v) although another producer wrote to orders/0 during it", rep.Committed)
			}
			t.Logf("restore: %v", err)
			if !strings.Contains(err.Error(), "another producer") || !strings.Contains(err.Error(), `topic "orders" partition 0`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want another producer named on topic \"orders\" partition 0 (%s)", err, c.want)
			}
		})
	}
}
