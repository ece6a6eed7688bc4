package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestStateCheckAfterAnInterruptedRestore is a regression test (second
// new-user pass): after a restore was interrupted (SIGINT: its journal is
// not complete, "run the same command again: the restore resumes"),
// state check said empty task directories were ok, exit 0, though the
// target's changelogs were partly written. An incomplete restore journal
// newer than the last complete restore makes the check unknown (exit 4),
// naming the unfinished restore and the fix.
func TestStateCheckAfterAnInterruptedRestore(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runBounded(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	emptyTasks := t.TempDir()
	for _, task := range []string{"0_0", "1_0"} {
		if err := os.MkdirAll(filepath.Join(emptyTasks, "order-processor", task), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Complete: empty task directories are ok.
	if code, stdout, stderr := runBounded(t, "--log-level", "error", "state", "check", "--state-dir", emptyTasks, "-c", cfg); code != exitOK {
		t.Fatalf("state check after a complete restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	journals, err := filepath.Glob(filepath.Join(repo, "restores", "journals", "*", "*.json"))
	if err != nil || len(journals) != 1 {
		t.Fatalf("restore journals under %s: %v, %v", repo, journals, err)
	}
	b, err := os.ReadFile(journals[0])
	if err != nil {
		t.Fatal(err)
	}
	var j format.RestoreJournal
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	// A later run of the same restore, interrupted: the journal as a run
	// leaves it before its offsets are committed.
	j.Complete, j.Committed, j.UpdatedAt = false, nil, time.Now().Add(time.Minute).UTC()
	if b, err = json.Marshal(j); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journals[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	key := format.RestoreJournalKey(j.BackupID, j.TargetClusterID)
	reports, err := filepath.Glob(filepath.Join(repo, "restores", "*", "report.json"))
	if err != nil || len(reports) != 1 {
		t.Fatalf("restore reports: %v, %v", reports, err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"newer than the last complete restore", func(*testing.T) {}},
		{"no complete restore at all", func(t *testing.T) {
			if err := os.RemoveAll(filepath.Dir(reports[0])); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			code, stdout, stderr := runBounded(t, "--log-level", "error", "state", "check", "--state-dir", emptyTasks, "-c", cfg)
			if code != exitUndecided || strings.Contains(stdout, "  ok  ") {
				t.Errorf("exit %d, want %d and no store ok\n%s\n%s", code, exitUndecided, stdout, stderr)
			}
			for _, want := range []string{"unfinished", key, j.BackupID, "run the restore again to completion"} {
				if !strings.Contains(stdout+stderr, want) {
					t.Errorf("output does not say %q:\n%s\n%s", want, stdout, stderr)
				}
			}
		})
	}
}
