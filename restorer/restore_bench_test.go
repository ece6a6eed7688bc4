package restorer_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// benchBackup backs up a topic "orders" of 4 partitions (40,000 records,
// keys of a few bytes, text values of 100 B to 2 KiB, one header) and
// returns the repository and the records' value bytes.
func benchBackup(b *testing.B) (storage.Backend, int64) {
	b.Helper()
	src := testkit.StartKfake(b, 1, kfake.SeedTopics(4, "orders"))
	cl := testkit.Client(b, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"order", "customer", "amount", "currency", "EUR", "status", "shipped", "pending", "item", "sku"}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var bytes int64
	for batch := range 10 {
		var recs []*kgo.Record
		for i := range 4000 {
			n := 100 + rng.IntN(1948)
			v := make([]byte, 0, n+16)
			for len(v) < n {
				v = fmt.Appendf(v, "%s=%d,", words[rng.IntN(len(words))], rng.IntN(100000))
			}
			bytes += int64(len(v))
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 4), Key: fmt.Appendf(nil, "c-%d", rng.IntN(5000)), Value: v,
				Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}}, Timestamp: base.Add(time.Duration(batch*4000+i) * time.Millisecond)})
		}
		if err := cl.ProduceSync(b.Context(), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	store, err := storage.NewFilesystem(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := backup.Run(b.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store, Include: []string{"orders"}}); err != nil {
		b.Fatal(err)
	}
	return store, bytes
}

var benchCodecs = []restorer.Compression{"none", "snappy", "lz4", "zstd"}

// BenchmarkRestore restores benchBackup's backup into a new 1-broker kfake
// per iteration, once per producer codec: the restorer's own CPU (decode,
// produce, offsets; kfake runs in the process), for CPU profiles and
// interleaved comparisons (docs/PERFORMANCE.md has the real broker's).
func BenchmarkRestore(b *testing.B) {
	store, bytes := benchBackup(b)
	for _, codec := range benchCodecs {
		b.Run(codec, func(b *testing.B) {
			b.SetBytes(bytes)
			for b.Loop() {
				dst := testkit.StartKfake(b, 1)
				if _, err := restorer.Run(b.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: codec}); err != nil {
					b.Fatal(err)
				}
				dst.Close()
			}
		})
	}
}

// BenchmarkRestoreKafka restores benchBackup's backup into one real Kafka
// 4.4 broker (a scratch cluster of this benchmark) per iteration, once per
// producer codec: round trips and the broker's own work count here. Each
// iteration deletes the restored topic and the restore's journal (in the
// benchmark's own repository under b.TempDir) so that the next one
// restores again.
func BenchmarkRestoreKafka(b *testing.B) {
	store, bytes := benchBackup(b)
	k := testkit.StartKafka(b)
	adm := testkit.Admin(b, k.Addrs())
	for _, codec := range benchCodecs {
		b.Run(codec, func(b *testing.B) {
			b.SetBytes(bytes)
			for b.Loop() {
				if _, err := restorer.Run(b.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: codec}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := adm.DeleteTopic(b.Context(), "orders"); err != nil {
					b.Fatal(err)
				}
				var journals []string
				if err := store.List(b.Context(), "restores/", func(oi storage.ObjectInfo) error { journals = append(journals, oi.Key); return nil }); err != nil {
					b.Fatal(err)
				}
				for _, key := range journals {
					if err := store.Delete(b.Context(), key); err != nil {
						b.Fatal(err)
					}
				}
				for range 100 {
					if ts, err := adm.ListTopics(b.Context(), "orders"); err == nil && !ts.Has("orders") {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRestoreManyPartitions restores a backup of 1,000 partitions
// of 20 small records each into a new 1-broker kfake per iteration: the
// round trips per partition decide here, not the bytes.
func BenchmarkRestoreManyPartitions(b *testing.B) {
	src := testkit.StartKfake(b, 1, kfake.SeedTopics(1000, "orders"))
	cl := testkit.Client(b, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 20_000 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 1000), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%0200d", i), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
	}
	if err := cl.ProduceSync(b.Context(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	store, err := storage.NewFilesystem(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := backup.Run(b.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store, Include: []string{"orders"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		dst := testkit.StartKfake(b, 1)
		if _, err := restorer.Run(b.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1}); err != nil {
			b.Fatal(err)
		}
		dst.Close()
	}
}

// BenchmarkRestorePrecheck restores benchBackup's backup into a new
// 1-broker kfake per iteration under each pre-check mode (issue 13: no
// decode done twice), reporting the precheck phase's share of each
// restore (precheck-ns/op): for interleaved comparisons, not a timed
// test.
func BenchmarkRestorePrecheck(b *testing.B) {
	store, bytes := benchBackup(b)
	for _, mode := range []restorer.Precheck{restorer.PrecheckDigest, restorer.PrecheckDeep} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(bytes)
			var precheck time.Duration
			for b.Loop() {
				obs := &phaseTimes{phases: map[string]time.Duration{}}
				dst := testkit.StartKfake(b, 1)
				if _, err := restorer.Run(b.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
					ReplicationFactor: 1, Compression: "snappy", Precheck: mode, Observer: obs}); err != nil {
					b.Fatal(err)
				}
				dst.Close()
				precheck += obs.phases["precheck"]
			}
			b.ReportMetric(float64(precheck.Nanoseconds())/float64(b.N), "precheck-ns/op")
		})
	}
}
