package backup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// BenchmarkIncrementalOfALargeChangelog measures what the state digest
// costs an incremental backup of a large changelog: one partition of
// 200,000 records (100-byte values, 50,000 keys) backed up in full, then
// each iteration adds 100 records and runs an incremental backup, which
// reads the partition's earlier segments back to seed the digest. The
// sub-benchmark "external" backs the same topic up as an input (no
// digest) for comparison.
func BenchmarkIncrementalOfALargeChangelog(b *testing.B) {
	for _, changelog := range []bool{true, false} {
		name := "changelog"
		if !changelog {
			name = "external"
		}
		b.Run(name, func(b *testing.B) {
			kf := testkit.StartKfake(b, 1)
			cl := testkit.Client(b, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
			ctx := context.Background()
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "big"); err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 100)
			produceN := func(from, n int) {
				recs := make([]*kgo.Record, 0, n)
				for i := from; i < from+n; i++ {
					recs = append(recs, &kgo.Record{Topic: "big", Key: fmt.Appendf(nil, "key-%d", i%50000), Value: value})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 200000; i += 10000 {
				produceN(i, 10000)
			}
			store, _ := storage.NewFilesystem(b.TempDir())
			o := backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store, ApplicationID: "bench", Include: []string{"big"}}
			if changelog {
				o.SourceChangelogTopics = []string{"big"}
			}
			if _, err := backup.Run(ctx, o); err != nil {
				b.Fatal(err)
			}
			next := 200000
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				produceN(next, 100)
				next += 100
				b.StartTimer()
				if _, err := backup.Run(ctx, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
