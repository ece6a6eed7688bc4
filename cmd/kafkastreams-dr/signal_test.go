package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestHelperMain is not a test: TestBackupInterruptedBySIGINT runs the
// test binary as kafkastreams-dr itself, main and all, with the arguments
// in KDR_HELPER_MAIN_ARGS (a JSON array).
func TestHelperMain(t *testing.T) {
	args := os.Getenv("KDR_HELPER_MAIN_ARGS")
	if args == "" {
		t.Skip("helper process for TestBackupInterruptedBySIGINT")
	}
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(99)
	}
	os.Args = append([]string{"kafkastreams-dr"}, a...)
	main() // exits
}

// syncBuffer is a bytes.Buffer a subprocess's output can be copied into
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestBackupInterruptedBySIGINT runs kafkastreams-dr backup in a process
// of its own against a large topic whose fetches the broker slows down,
// scrapes its /metrics while it copies, sends it SIGINT in the middle of
// the copy and expects exit 130 with a summary line; the next backup
// resumes it and completes with every offset exactly once.
func TestBackupInterruptedBySIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess backup of 16 MiB")
	}
	const (
		partitions = 4
		perPart    = 4000
		valueSize  = 1024
	)
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if _, err := testkit.Admin(t, kf.Addrs()).CreateTopic(t.Context(), partitions, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), valueSize)
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: "big", Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: value})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Bool
	slow.Store(true)
	kf.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		if slow.Load() {
			time.Sleep(200 * time.Millisecond)
		}
		return nil, nil, false
	})

	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: big-app
source:
  bootstrap_servers: [%s]
  topics:
    include: [big]
storage:
  backend: filesystem
  path: %s
backup:
  segment_max_bytes: 256KiB
`, strings.Join(kf.Addrs(), ", "), repo))

	args, _ := json.Marshal([]string{"--log-level", "info", "--metrics-addr", "127.0.0.1:0", "backup", "-c", cfg})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KDR_HELPER_MAIN_ARGS="+string(args))
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})

	// The metrics URL is in the "serving metrics" log line.
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		for line := range strings.Lines(stderr.String()) {
			var rec struct{ Msg, URL string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving metrics" {
				url = rec.URL
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"serving metrics\" log line:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Scrape while it copies, until records are copied and segments
	// durable.
	var mfs = scrapeMetrics(t, url)
	for sum(metricValues(mfs, "kafkastreams_dr_backup_segments_total")) < 1 || sum(metricValues(mfs, "kafkastreams_dr_backup_records_total")) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the backup stored no segment in 30s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
		mfs = scrapeMetrics(t, url)
	}
	checkNames(t, mfs)
	copied := sum(metricValues(mfs, "kafkastreams_dr_backup_records_total"))
	lag := sum(metricValues(mfs, "kafkastreams_dr_backup_lag_records"))
	if copied <= 0 || copied >= partitions*perPart || lag <= 0 || copied+lag > partitions*perPart {
		t.Errorf("during the copy: records_total %v and lag_records %v, want a part of %d each", copied, lag, partitions*perPart)
	}
	t.Logf("scraped during the copy: %v records copied, %v offsets left", copied, lag)
	if _, ok := metricValues(mfs, "kafkastreams_dr_last_success_timestamp_seconds")["command=backup"]; ok {
		t.Error("last_success before the run ended")
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the backup did not stop within 30s of SIGINT:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitCancelled {
		t.Fatalf("exit code %d after SIGINT, want %d\nstdout:\n%s\nstderr:\n%s", code, exitCancelled, stdout.String(), stderr.String())
	}
	checkPlainStderr(t, "interrupted backup", strings.ReplaceAll(stderr.String(), "Error: interrupted\n"+backupInterruptHint+"\n", ""), "backup interrupted after ")
	if !strings.Contains(stderr.String(), "Error: interrupted\n"+backupInterruptHint) {
		t.Errorf("no \"Error: interrupted\" and what to do next:\n%s", stderr.String())
	}

	t.Logf("interrupted backup's stderr:\n%s", stderr.String())

	// The next run resumes the interrupted backup and completes it.
	slow.Store(false)
	code, out, errOut := runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
	if code != exitOK {
		t.Fatalf("backup after SIGINT: exit %d\n%s\n%s", code, out, errOut)
	}
	var res backupJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Errorf("the backup after SIGINT did not resume the interrupted one: %+v", res)
	}
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	for p := range int32(partitions) {
		got := backupcheck.Records(t, store, m, "big", p)
		if len(got) != perPart {
			t.Errorf("partition %d: %d records, want %d", p, len(got), perPart)
		}
		for i, r := range got {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d: every offset once, in order, is wanted", p, i, r.Offset)
			}
		}
	}
}
