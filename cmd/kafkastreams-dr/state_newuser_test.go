package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"unreadable report", cfg, "report.json"},
		{"storage.path missing", restoreConfig(t, target.Addrs(), missing), missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "--log-level", "error", "state", "check", "--state-dir", stateDir, "-c", tc.cfg)
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
