package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestStateCheckLastRestoreUnknown is a regression test (second new-user
// pass): state written before a restore, checked when the last restore
// cannot be known (its report.json is garbage; storage.path has a typo),
// printed "ok  within the changelog" and exited 0, the only warning a log
// line that --log-level error hides (with the report readable it is must
// wipe, exit 3). No store is ok on the changelog alone then: unknown, exit
// 4, and the output says why.
func TestStateCheckLastRestoreUnknown(t *testing.T) {
	stateDir := t.TempDir()
	// Written before the restore below, within the restored changelog.
	writeState(t, filepath.Join(stateDir, "order-processor", "1_0", ".checkpoint"),
		"0\n1\norder-processor-order-totals-store-changelog 0 0\n")
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "state", "check", "--state-dir", stateDir, "-c", cfg); code != exitPartial {
		t.Fatalf("state check with the report readable: exit %d, want %d\n%s\n%s", code, exitPartial, stdout, stderr)
	}
	reports, err := filepath.Glob(filepath.Join(repo, "restores", "*", "report.json"))
	if err != nil || len(reports) == 0 {
		t.Fatalf("no restore report under %s: %v", repo, err)
	}
	for _, r := range reports {
		if err := os.WriteFile(r, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(t.TempDir(), "typo", "repo")
	// Third new-user pass: a state.dir holding only empty task directories
	// printed "ok  the task directory holds no state" and exited 0 with the
	// last restore unknown.
	emptyTasks := t.TempDir()
	for _, task := range []string{"0_0", "1_0"} {
		if err := os.MkdirAll(filepath.Join(emptyTasks, "order-processor", task), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, cfg, stateDir, want string
	}{
		{"unreadable report", cfg, stateDir, "report.json"},
		{"storage.path missing", restoreConfig(t, target.Addrs(), missing), stateDir, missing},
		{"unreadable report, empty task directories", cfg, emptyTasks, "report.json"},
		{"storage.path missing, empty task directories", restoreConfig(t, target.Addrs(), missing), emptyTasks, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "--log-level", "error", "state", "check", "--state-dir", tc.stateDir, "-c", tc.cfg)
			t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			if code != exitUndecided {
				t.Errorf("exit %d, want %d (unknown: not an all-clear)", code, exitUndecided)
			}
			if strings.Contains(stdout, "  ok  ") || !strings.Contains(stdout, "  unknown  ") {
				t.Errorf("want the store unknown, none ok:\n%s", stdout)
			}
			if !strings.Contains(stdout, "cannot be known") || !strings.Contains(stdout, tc.want) {
				t.Errorf("stdout does not say why the last restore cannot be known (%q):\n%s", tc.want, stdout)
			}
		})
	}
}

// TestStateCheckNeverOKUnseen is a regression test (second new-user pass),
// after a restore into the cluster:
//   - a symbolic link in a task directory (0_0/store.bin to a file from
//     before the restore, 0_0/rocksdb to a stale store directory) was
//     ignored: "ok  the task directory holds no state", exit 0, while state
//     wipe refuses the link. Now unknown, exit 4, naming the link;
//   - an empty but valid .checkpoint ("0\n0\n") beside a custom store file
//     modified before the restore printed an empty table, exit 0 (must
//     wipe without the .checkpoint). Now must wipe, exit 3, naming it.
func TestStateCheckNeverOKUnseen(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	old := time.Now().Add(-48 * time.Hour)
	elsewhere := t.TempDir()
	writeState(t, filepath.Join(elsewhere, "store.bin"), "x")
	writeState(t, filepath.Join(elsewhere, "counts-store", "000010.sst"), "x")
	for _, p := range []string{filepath.Join(elsewhere, "store.bin"), filepath.Join(elsewhere, "counts-store", "000010.sst")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, task string)
		code  int
		want  string
	}{
		{"link to a stale file", func(t *testing.T, task string) {
			if err := os.Symlink(filepath.Join(elsewhere, "store.bin"), filepath.Join(task, "store.bin")); err != nil {
				t.Fatal(err)
			}
		}, exitUndecided, "symbolic link store.bin"},
		{"link to a stale store directory", func(t *testing.T, task string) {
			if err := os.Symlink(filepath.Join(elsewhere, "counts-store"), filepath.Join(task, "rocksdb")); err != nil {
				t.Fatal(err)
			}
		}, exitUndecided, "symbolic link rocksdb"},
		{"empty checkpoint beside a stale custom store", func(t *testing.T, task string) {
			writeState(t, filepath.Join(task, ".checkpoint"), "0\n0\n")
			writeState(t, filepath.Join(task, "custom-store.bin"), "x")
			if err := os.Chtimes(filepath.Join(task, "custom-store.bin"), old, old); err != nil {
				t.Fatal(err)
			}
		}, exitPartial, "custom-store.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := t.TempDir()
			task := filepath.Join(stateDir, "order-processor", "0_0")
			if err := os.MkdirAll(task, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, task)
			code, stdout, stderr := runCLI(t, "--log-level", "error", "state", "check", "--state-dir", stateDir, "-c", cfg)
			if code != tc.code || strings.Contains(stdout, "  ok  ") || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit %d, want %d, no store ok, the output naming %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}
