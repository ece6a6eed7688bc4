package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildTools builds kdrbench and kafkastreams-dr into a temporary directory.
func buildTools(t *testing.T) (kdrbench, cli string) {
	t.Helper()
	if testing.Short() && os.Getenv("KDR_REQUIRE_TOOLS") != "1" {
		t.Skip("-short: the smoke test starts a Kafka broker")
	}
	dir := t.TempDir()
	kdrbench, cli = filepath.Join(dir, "kdrbench"), filepath.Join(dir, "kafkastreams-dr")
	for bin, pkg := range map[string]string{kdrbench: "./kdrbench", cli: "../../cmd/kafkastreams-dr"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return kdrbench, cli
}

// TestSmoke runs `kdrbench` on a real Kafka 4.4 broker and versitygw at a
// tiny scale (every case, one round, a few partitions) and checks that
// the document has every case, a table row for ours and for each
// baseline, and every target line; and that nothing is left behind.
func TestSmoke(t *testing.T) {
	kdrbench, cli := buildTools(t)
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	// No profiles (TestMarkdown checks their rendering): under a minute.
	cmd := exec.Command(kdrbench, "-out", out, "-bin", cli, "-many-partitions", "6", "-offset-partitions", "4", "-no-profile")
	cmd.Env = append(os.Environ(), "TMPDIR="+work, "BENCH_CASES=a,b,c,d,e", "BENCH_ROUNDS=1", "BENCH_SCALE=0.0005")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kdrbench: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"### (a) ", "### (b) ", "### (c) 6 partitions", "### (d) S3", "### (e) offsets of 4 partitions",
		"| kcat -C > /dev/null | 1 |", "| kcat -C | zstd -3 > file | 1 |", "| kcat -P | 1 |",
		"| kafkastreams-dr backup → dir | 1 |", "| kafkastreams-dr restore → dir | 1 |",
		"| kafkastreams-dr backup → S3 | 1 |", "| kafkastreams-dr restore → S3 | 1 |",
		"BENCH_CASES=a,b,c,d,e BENCH_ROUNDS=1 BENCH_MEMORY_ROUNDS=1 BENCH_SCALE=0.0005 BENCH_S3_CASE=c go run ./internal/bench/kdrbench",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q:\n%s", want, md)
		}
	}
	// OSO kafka-backup runs when KDR_OSO_KAFKA_BACKUP (or $PATH) names it:
	// its rows in (a) and (c), checked by the harness; else the document
	// says how to measure it.
	osoWants := []string{"To measure it, build it from its repository with cargo"}
	if oso, err := FindOSO(context.Background(), os.Getenv(OSOEnv)); err != nil {
		t.Fatal(err)
	} else if oso != "" {
		osoWants = []string{"| OSO kafka-backup backup → dir | 1 |", "| OSO kafka-backup restore → dir | 1 |", "x OSO kafka-backup restore → dir |"}
	}
	for _, want := range osoWants {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "### (b) "); n != 2 {
		t.Errorf("%d sections of case (b), want 2 (2 GiB and 4 GiB)", n)
	}
	for _, text := range TargetTexts {
		found := false
		for _, st := range []string{statusMet, statusNotMet, statusNotMeasured} {
			found = found || strings.Contains(md, fmt.Sprintf("- **%s**: %s.", st, text))
		}
		if !found {
			t.Errorf("document lacks the target %q", text)
		}
	}
	assertNothingLeft(t, work)
}

// A KDR_OSO_KAFKA_BACKUP that names no binary is a bad setting: exit 2,
// the variable and how to build OSO named, before any broker starts, and
// no document written.
func TestOSOBinaryMissing(t *testing.T) {
	kdrbench, cli := buildTools(t)
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	cmd := exec.Command(kdrbench, "-out", out, "-bin", cli)
	cmd.Env = append(os.Environ(), "TMPDIR="+work, OSOEnv+"="+filepath.Join(work, "no-such-kafka-backup"))
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit code %d (%v), want 2:\n%s", code, err, b)
	}
	for _, want := range []string{"kdrbench: KDR_OSO_KAFKA_BACKUP=", "is not an executable file", "cargo build --release"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("stderr lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "starting Apache Kafka") {
		t.Errorf("a broker was started for a bad setting:\n%s", b)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a bad setting wrote %s (stat: %v)", out, err)
	}
	assertNothingLeft(t, work)
}

// TestInterruptCleansUp sends SIGINT to kdrbench while it generates data:
// it exits 130, writes no document, and leaves no broker, versitygw or
// temporary data behind.
func TestInterruptCleansUp(t *testing.T) {
	kdrbench, cli := buildTools(t)
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	cmd := exec.Command(kdrbench, "-out", out, "-bin", cli)
	cmd.Env = append(os.Environ(), "TMPDIR="+work, "BENCH_CASES=a,d", "BENCH_SCALE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "case a: generating data") {
				once = true
				close(seen)
			}
		}
	}()
	select {
	case <-seen:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("kdrbench did not start generating within 3 minutes")
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("kdrbench still running a minute after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d (%v), want 130; stderr:\n%s", code, err, log.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted run wrote %s (stat: %v)", out, err)
	}
	assertNothingLeft(t, work)
}

// assertNothingLeft checks that work (the harness's TMPDIR) is empty and
// that no process runs with a path under it (the broker's and versitygw's
// command lines name their directories).
func assertNothingLeft(t *testing.T, work string) {
	t.Helper()
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), work) {
			t.Errorf("process %s still runs: %s", filepath.Base(filepath.Dir(p)), strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}
