package backup_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// BenchmarkBackupManyPartitions runs backup.Run in this process on one
// topic of 2,000 partitions x 50 records of 200 bytes (kfake, one broker)
// into a local directory, so that a CPU profile (-cpuprofile) shows where
// a backup of many small partitions spends its time (issue 13: the
// progress manifest, directory fsyncs, one fetch per partition). The
// profile includes kfake's own work (it runs in this process).
func BenchmarkBackupManyPartitions(b *testing.B) {
	const partitions, perPartition, size = 2000, 50, 200
	kf := testkit.StartKfake(b, 1)
	cl := testkit.Client(b, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, "many"); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, size)
	for i := range val {
		val[i] = "0123456789abcdef"[(i*7)%16]
	}
	recs := make([]*kgo.Record, 0, partitions*perPartition)
	for p := range int32(partitions) {
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: "many", Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: val})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(partitions * perPartition * size)
	b.ResetTimer()
	for b.Loop() {
		store, err := storage.NewFilesystem(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
			ApplicationID: "many-app", Include: []string{"many"}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Records != partitions*perPartition {
			b.Fatalf("backed up %d records, want %d", res.Records, partitions*perPartition)
		}
	}
}
