package backup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// BenchmarkBackup measures `kafkastreams-dr backup` as a separate process
// backing up partitions x records of 200 bytes from a kfake cluster
// into a local directory: throughput (MB/s of record values) and the
// process's peak resident memory (max-RSS-MiB), which must stay flat as
// partitions and records grow because records stream into segments and
// segments stream into storage.
func BenchmarkBackup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "kafkastreams-dr")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kafkastreams-dr").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		partitions   int32
		perPartition int
	}{{1, 50000}, {1, 200000}, {4, 50000}} {
		b.Run(fmt.Sprintf("partitions=%d/records=%d", c.partitions, c.perPartition), func(b *testing.B) {
			benchBackup(b, bin, c.partitions, c.perPartition)
		})
	}
}

func benchBackup(b *testing.B, bin string, partitions int32, perPartition int) {
	kf := testkit.StartKfake(b, 1)
	cl := testkit.Client(b, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	const size = 200
	// Hex text: compresses about 2:1, like typical JSON payloads, so the
	// decompressed fetch responses are realistic.
	rnd := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, size*1024)
	for i := range val {
		val[i] = "0123456789abcdef"[rnd.IntN(16)]
	}
	for p := range partitions {
		recs := make([]*kgo.Record, 0, perPartition)
		for i := range perPartition {
			off := (i * 37) % (len(val) - size)
			v := val[off : off+size]
			recs = append(recs, &kgo.Record{Topic: "bench", Partition: p, Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(partitions) * int64(perPartition) * size)
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
		if os.Getenv("KDR_BENCH_OUTPUT") != "" {
			cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
		}
		var outBuf strings.Builder
		cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// rusage's maxrss would include the test process's memory (the
		// child starts as a vfork of it), so poll the child's own
		// high-water mark instead.
		hwm := make(chan int64)
		go func() { hwm <- pollHWM(cmd.Process.Pid) }()
		err := cmd.Wait()
		maxRSS = max(maxRSS, <-hwm)
		out := outBuf.String()
		if err != nil {
			b.Fatalf("backup: %v\n%s", err, out)
		}
		if os.Getenv("KDR_BENCH_OUTPUT") != "" {
			b.Logf("%s", out)
		}
	}
	b.ReportMetric(float64(maxRSS)/1024, "max-RSS-MiB")
}

// pollHWM returns the largest VmHWM (peak resident set, KiB) that
// /proc/PID/status shows until the process is gone.
func pollHWM(pid int) int64 {
	var peak int64
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || strings.Contains(string(b), "State:\tZ") {
			return peak
		}
		for _, line := range strings.Split(string(b), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
				peak = max(peak, kb)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}
