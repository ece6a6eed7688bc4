package backup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// BenchmarkBackup measures `kafkastreams-dr backup` as a separate process
// backing up partitions x 50 000 records of 200 bytes from a kfake cluster
// into a local directory: throughput (MB/s of record values) and the
// process's peak resident memory (max-RSS-MiB), which must stay flat as
// partitions and records grow because records stream into segments and
// segments stream into storage.
func BenchmarkBackup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "kafkastreams-dr")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kafkastreams-dr").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for _, partitions := range []int32{1, 4} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			benchBackup(b, bin, partitions)
		})
	}
}

func benchBackup(b *testing.B, bin string, partitions int32) {
	kf := testkit.StartKfake(b, 1)
	cl := testkit.Client(b, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	const perPartition, size = 50000, 200
	val := make([]byte, size)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for p := range partitions {
		recs := make([]*kgo.Record, 0, perPartition)
		for i := range perPartition {
			v := append([]byte(fmt.Sprintf("%08d", i)), val[8:]...)
			recs = append(recs, &kgo.Record{Topic: "bench", Partition: p, Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(partitions) * perPartition * size)
	var maxRSS int64
	for b.Loop() {
		dir := b.TempDir()
		cfg := filepath.Join(dir, "bench.yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`application_id: bench-app
source:
  bootstrap_servers: [%s]
  topics: {include: [bench]}
storage: {backend: filesystem, path: %s}
backup: {segment_max_bytes: 8MiB}
`, strings.Join(kf.Addrs(), ", "), filepath.Join(dir, "repo"))), 0o600)
		cmd := exec.Command(bin, "backup", "-c", cfg, "--log-level", "warn")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("backup: %v\n%s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = max(maxRSS, ru.Maxrss) // KiB on Linux
		}
	}
	b.ReportMetric(float64(maxRSS)/1024, "max-RSS-MiB")
}
