package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestRestoreReportNotARegularFile is a regression test (second new-user
// pass): a restore report that is a FIFO or a directory (made by hand in a
// local repository) counted as "no restore": state check said every empty
// task ok (exit 0), estimate said no restore ran, verify --against-cluster
// exited 0. Now it is a damaged report naming its key, as a truncated one
// is: state check unknown (exit 4), verify --against-cluster exit 1,
// estimate names it as left out; no read blocks on the FIFO.
func TestRestoreReportNotARegularFile(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runBounded(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reports, err := filepath.Glob(filepath.Join(repo, "restores", "*", "report.json"))
	if err != nil || len(reports) != 1 {
		t.Fatalf("restore reports under %s: %v, %v", repo, reports, err)
	}
	report := reports[0]
	key := strings.TrimPrefix(filepath.ToSlash(report), filepath.ToSlash(repo)+"/")
	emptyTasks := t.TempDir()
	for _, task := range []string{"0_0", "1_0"} {
		if err := os.MkdirAll(filepath.Join(emptyTasks, "order-processor", task), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []struct {
		name string
		make func(p string) error
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			if err := os.RemoveAll(report); err != nil {
				t.Fatal(err)
			}
			if err := kind.make(report); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runBounded(t, "--log-level", "error", "state", "check", "--state-dir", emptyTasks, "-c", cfg)
			if code != exitUndecided || strings.Contains(stdout, "  ok  ") || !strings.Contains(stdout, key) || !strings.Contains(stdout, "not a regular file") {
				t.Errorf("state check: exit %d, want %d, no store ok, naming %s as not a regular file\n%s\n%s", code, exitUndecided, key, stdout, stderr)
			}
			code, stdout, stderr = runBounded(t, "verify", "-c", cfg, "--against-cluster")
			if code != exitError || !strings.Contains(stderr, "restore report "+key+" is damaged") || strings.Contains(stdout, "OK") {
				t.Errorf("verify --against-cluster: exit %d, want %d naming %s as damaged\n%s\n%s", code, exitError, key, stdout, stderr)
			}
			code, stdout, stderr = runBounded(t, "estimate", "-c", cfg, "--no-cluster")
			if code != exitOK || !strings.Contains(stdout+stderr, key) {
				t.Errorf("estimate: exit %d, want %d naming %s as left out\n%s\n%s", code, exitOK, key, stdout, stderr)
			}
		})
	}
}
