package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestBackupLockHeldExitsEleven: a backup that finds the repository lock
// held by a live run (and --lock-wait 0) exits 11, restic's code for "the
// repository is already locked", not 2 (refused): a CronJob's
// podFailurePolicy and alerts tell "another run is using the repository"
// from "this can never work" (issue 9).
func TestBackupLockHeldExitsEleven(t *testing.T) {
	store, storageYAML := catalogRepos[0].open(t)
	_, cfg := threeBackups(t, store, storageYAML)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lock := fmt.Sprintf(`{"owner":"prune","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, now, now)
	if err := store.Put(t.Context(), format.LockKey, strings.NewReader(lock), int64(len(lock))); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "backup", "-c", cfg, "--lock-wait", "0")
	if code != 11 || !strings.Contains(stderr, "other-host") {
		t.Fatalf("backup of a locked repository: exit %d, want 11\n%s\n%s", code, stdout, stderr)
	}
	// The summary line says it did not run, as for a refusal, not "failed".
	if !strings.Contains(stderr, "backup refused") {
		t.Errorf("the summary line does not say the backup was refused:\n%s", stderr)
	}
}

// TestDrillLockHeldExitsEleven: a drill whose backup phase finds the lock
// held exits 11 too, naming the phase.
func TestDrillLockHeldExitsEleven(t *testing.T) {
	rep := &drill.Report{Phases: []drill.Phase{{Name: drill.PhaseBackup, Status: drill.StatusFailed, Locked: true,
		Error: "backup: repository is locked: /srv/repo/lock is held by prune (host other-host, pid 1)"}}}
	err := drillOutcome(rep, "app.yaml")
	if code := exitCode(t.Context(), err); code != 11 || !strings.Contains(err.Error(), "other-host") {
		t.Fatalf("drill with the lock held: exit %d (%v), want 11", code, err)
	}
}

// TestExitStatusHelpListsEveryCode: every command's --help lists exit 11.
func TestExitStatusHelpListsEveryCode(t *testing.T) {
	for _, args := range [][]string{{"backup", "--help"}, {"prune", "--help"}, {"restore", "--help"}, {"list", "--help"}, {"drill", "--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "\n  11   ") {
			t.Errorf("%v: exit %d, EXIT STATUS without 11:\n%s%s", args, code, stdout, stderr)
		}
	}
}

// TestExitStatusHelpOfDrillAndRestore is a second new-user fault of issue
// 11: drill's own EXIT STATUS paragraph left out 130 (an interrupted
// drill), and exit 1 said "cluster, storage or network error" though a
// restore that fails its state check exits 1 too.
func TestExitStatusHelpOfDrillAndRestore(t *testing.T) {
	code, stdout, stderr := runCLI(t, "drill", "--help")
	if code != 0 || !strings.Contains(stdout, "130 when the drill was interrupted") {
		t.Errorf("drill --help: exit %d, its EXIT STATUS of a drill does not name 130:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "restore", "--help")
	if code != 0 || !strings.Contains(stdout, "1    error: the run failed (cluster, storage or network error), or a restore\n       failed its state check") {
		t.Errorf("restore --help: exit %d, exit 1 does not name the failed state check:\n%s%s", code, stdout, stderr)
	}
}
