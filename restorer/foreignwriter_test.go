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

// hookObserver calls start on every RestoreStart event and restored on
// every Restored event.
type hookObserver struct{ start, restored func() }

func (o hookObserver) RestoreStart(string, int32, int64) { o.start() }
func (o hookObserver) Restored(string, int32, int64)     { o.restored() }
func (o hookObserver) RestoreEnd(string, int32, int64)   {}
func (o hookObserver) PhaseDone(string, time.Duration)   {}

// TestForeignProducerMidRestoreIsCaught: another producer writes one
// record to the partition being restored, once the restore's first chunk
// is acknowledged or just before its first produce: the restore fails
// naming the topic and partition and another producer, and commits
// nothing (docs/DOMAIN.md#field-case-19 A4). It passed on the per-chunk
// ListEndOffsets check and must keep passing on the checks that replace
// it: the offset each produce response assigned (the first record must
// land at the end preflight read), and the ends of every restored
// partition once all records are in (checkEnds). After the first chunk,
// the foreign record lands between the restore's records or after its
// last (franz-go has the rest in flight), and one of the two checks
// catches it; before the first produce, the offsets do.
func TestForeignProducerMidRestoreIsCaught(t *testing.T) {
	store := backedUpOrders(t, 9000)
	for _, c := range []struct {
		name    string
		atStart bool
		want    []string
	}{
		{"after the first chunk", false, []string{"another producer", "orders"}},
		{"before the first produce, caught by the produce offsets", true, []string{`topic "orders" partition 0: the restore's record landed at offset 1, but this restore wrote up to 0: another producer is writing to it`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := testkit.StartKfake(t, 1)
			foreign := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var (
				once    sync.Once
				written error
			)
			write := func() {
				once.Do(func() {
					written = foreign.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("foreign")}).FirstErr()
				})
			}
			obs := hookObserver{start: func() {}, restored: write}
			if c.atStart {
				obs = hookObserver{start: write, restored: func() {}}
			}
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1,
				Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})), Observer: obs})
			if written != nil {
				t.Fatalf("the foreign producer could not write: %v", written)
			}
			if err == nil {
				t.Fatalf("restore succeeded (committed %v) although another producer wrote to orders/0 during it", rep.Committed)
			}
			t.Logf("restore: %v", err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want it to say %q", err, w)
				}
			}
		})
	}
}
