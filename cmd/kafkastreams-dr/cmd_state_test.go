package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

func writeState(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStateCheckFlagsStaleCheckpointAfterRestore: after a restore, an
// instance whose .checkpoint was written before it (field case 19,
// docs/DOMAIN.md#field-case-19: an offset of the old
// numbering, far beyond the restored changelog's end) must wipe; exit 3
// and the wipe command as the next step.
func TestStateCheckFlagsStaleCheckpointAfterRestore(t *testing.T) {
	stateDir := t.TempDir()
	// Written before the restore below.
	writeState(t, filepath.Join(stateDir, "order-processor", "1_0", ".checkpoint"),
		"0\n1\norder-processor-order-totals-store-changelog 0 94826804\n")
	writeState(t, filepath.Join(stateDir, "order-processor", "0_1", ".checkpoint"),
		"0\n1\norder-processor-order-totals-store-changelog 1 2\n")

	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", cfg)
	if code != exitPartial || !strings.Contains(stderr, "state wipe --state-dir "+stateDir+" --application-id order-processor") {
		t.Fatalf("state check: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"1_0", "94826804", "0_1", "before restore"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("state check output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "must wipe") != 2 {
		t.Errorf("want both stores flagged must wipe:\n%s", stdout)
	}

	// Against another cluster (a drill's scratch cluster, say): the restore
	// into the target says nothing about it (regression: any restore of
	// the app counted, whichever cluster it went to). Its changelogs are
	// not there: unknown, exit 4 (it was 0, as if all clear).
	other := testkit.StartKfake(t, 1, kfake.ClusterID("scratch-cluster"))
	otherCfg := restoreConfig(t, other.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", otherCfg); code != exitUndecided || strings.Contains(stdout, "before restore") {
		t.Fatalf("state check against a cluster nothing was restored into: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Wiped, then checked again: nothing left.
	if code, stdout, stderr := runCLI(t, "state", "wipe", "--state-dir", stateDir, "--application-id", "order-processor", "--yes"); code != exitOK {
		t.Fatalf("state wipe: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", cfg); code != exitUsage || !strings.Contains(stdout, "no local state") {
		t.Fatalf("after the wipe: exit %d\n%s", code, stdout)
	}
}

func TestStateWipeRefuses(t *testing.T) {
	stateDir := t.TempDir()
	writeState(t, filepath.Join(stateDir, "billing-app", "0_0", ".checkpoint"), "0\n0\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"another application's directory", []string{"state", "wipe", "--state-dir", stateDir, "--application-id", "order-processor", "--yes"},
			exitUsage, `no local state of application.id "order-processor" under ` + stateDir + ` (it has state of: billing-app)`},
		{"an application directory as state.dir", []string{"state", "wipe", "--state-dir", filepath.Join(stateDir, "billing-app"), "--application-id", "billing-app", "--yes"},
			exitUsage, "pass its parent"},
		{"no confirmation off a terminal", []string{"state", "wipe", "--state-dir", stateDir, "--application-id", "billing-app"},
			exitUsage, "pass --yes"},
		{"missing flags", []string{"state", "wipe", "--state-dir", stateDir}, exitUsage, "--application-id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant it to say %q", code, tc.code, stderr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(stateDir, "billing-app", "0_0", ".checkpoint")); err != nil {
				t.Fatal("a refused wipe removed state")
			}
		})
	}
}

// TestStateWipeRefusesSystemShapedDirectory is a regression test: `state
// wipe --state-dir / --application-id etc --yes` removed /etc and exited
// 0 ("removed /etc (0 task directories)"). On a decoy shaped like /etc
// under a temporary directory: exit 2, each entry named, nothing removed.
func TestStateWipeRefusesSystemShapedDirectory(t *testing.T) {
	decoy := t.TempDir()
	for _, f := range []string{"passwd", "hosts", "ssl/certs/ca-certificates.crt"} {
		writeState(t, filepath.Join(decoy, "etc", f), "precious\n")
	}
	code, stdout, stderr := runCLI(t, "state", "wipe", "--state-dir", decoy, "--application-id", "etc", "--yes")
	if code != exitUsage || strings.Contains(stdout, "removed") {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}
	for _, want := range []string{"passwd (file)", "hosts (file)", "ssl/ (directory)", "nothing was removed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{"passwd", "hosts", "ssl/certs/ca-certificates.crt"} {
		if _, err := os.Stat(filepath.Join(decoy, "etc", f)); err != nil {
			t.Errorf("a refused wipe removed %s: %v", f, err)
		}
	}
}

// TestStateWipeDryRun: --dry-run lists every entry and removes none, with
// neither --yes nor a terminal.
func TestStateWipeDryRun(t *testing.T) {
	stateDir := t.TempDir()
	writeState(t, filepath.Join(stateDir, "order-processor", "kafka-streams-process-metadata"), `{"processId":"a73070e9-085a-4fc1-ba71-f82cb0d3bf4f"}`)
	writeState(t, filepath.Join(stateDir, "order-processor", "1_0", "rocksdb", "order-totals-store", "CURRENT"), "MANIFEST-000005\n")
	code, stdout, stderr := runCLI(t, "state", "wipe", "--state-dir", stateDir, "--application-id", "order-processor", "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		filepath.Join(stateDir, "order-processor", "1_0", "rocksdb", "order-totals-store", "CURRENT"),
		filepath.Join(stateDir, "order-processor", "kafka-streams-process-metadata"),
		"would remove " + filepath.Join(stateDir, "order-processor") + " (1 task directory, 2 files",
		"nothing was removed (dry run)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, "order-processor", "1_0", "rocksdb", "order-totals-store", "CURRENT")); err != nil {
		t.Fatalf("a dry run removed state: %v", err)
	}
}

// TestStateCheckNoStateIsNotAllClear is a regression test: `state check
// --state-dir /nonexistent` answered "nothing to wipe" and exited 0, so a
// typo gave an all-clear. A missing state.dir, and one without state of the
// application, are verdicts of their own with exit 2.
func TestStateCheckNoStateIsNotAllClear(t *testing.T) {
	base := t.TempDir()
	writeState(t, filepath.Join(base, "billing-app", "0_0", ".checkpoint"), "0\n0\n")
	writeState(t, filepath.Join(base, "started", "order-processor", "kafka-streams-process-metadata"), `{"processId":"a73070e9-085a-4fc1-ba71-f82cb0d3bf4f"}`)
	writeState(t, filepath.Join(base, "started", "order-processor", ".lock"), "")
	target := testkit.StartKfake(t, 1)
	cfg := restoreConfig(t, target.Addrs(), t.TempDir())
	tests := []struct {
		name, stateDir string
		want           []string
	}{
		{"a typo in --state-dir", filepath.Join(base, "nonexistent"), []string{"--state-dir " + filepath.Join(base, "nonexistent") + " does not exist", "the instance's state.dir"}},
		{"another application's state.dir", base, []string{`no local state of application.id "order-processor"`, "it has state of: billing-app", "check --state-dir and application_id"}},
		{"started, no task directory yet", filepath.Join(base, "started"), []string{`no local state of application.id "order-processor"`, "no task directories"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "state", "check", "--state-dir", tc.stateDir, "-c", cfg)
			if code != exitUsage || strings.Contains(stdout+stderr, "nothing to wipe") {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", w, stdout, stderr)
				}
			}
		})
	}
}

// TestStateCheckStateCopiedAfterRestore is a regression test: Kafka 4.x
// state (offsets inside RocksDB, KIP-1035) copied into place after a
// restore has new modification times, and passed (unknown, exit 0). The
// copy is of a real Kafka Streams 4.4 state directory
// (statedir/testdata/streams-4.4, whose SST files date its data from
// 2026-12-01, before any restore this test runs).
func TestStateCheckStateCopiedAfterRestore(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stateDir := t.TempDir()
	if err := os.CopyFS(filepath.Join(stateDir, "order-processor"), os.DirFS("../../statedir/testdata/streams-4.4/drill-app")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", cfg)
	if code != exitPartial {
		t.Fatalf("state check of state copied after the restore: exit %d, want %d\n%s\n%s", code, exitPartial, stdout, stderr)
	}
	for _, want := range []string{"1_0", "1_2", "holds data from 2026-12-01T11:10:51Z", "rocksdb/counts-store/000010.sst"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("state check output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestStateCheckDoesNotCreateRepository is a regression test: state check
// only reads the repository (the last restore's report), but it opened the
// storage as a backup does, so a mistyped storage.path was created as an
// empty directory and the check went on silently without the last restore.
// The path stays absent, and stderr says why the last restore is unknown.
func TestStateCheckDoesNotCreateRepository(t *testing.T) {
	stateDir := t.TempDir()
	writeState(t, filepath.Join(stateDir, "order-processor", "1_0", ".checkpoint"),
		"0\n1\norder-processor-order-totals-store-changelog 0 2\n")
	missing := filepath.Join(t.TempDir(), "typo", "repo")
	target := testkit.StartKfake(t, 1)
	cfg := restoreConfig(t, target.Addrs(), missing)
	_, stdout, stderr := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", cfg)
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state check created storage.path %s (stat: %v)\nstdout:\n%s\nstderr:\n%s", missing, err, stdout, stderr)
	}
	for _, want := range []string{"cannot open the repository", missing, "no such directory"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestStateCheckStatePredatingRebuild is a regression test (new user, Kafka
// 4.4): after `restore --strategy rebuild` (no changelog on the target), a
// state dir whose store has an SST modified in 2020 and a rotated LOG of
// 2023 printed both tasks unknown ("the changelog partition is not on the
// cluster") and exited 0. A file predating the restore decides it: must
// wipe, exit 3; the header names the boundary, the restore's finish.
// Unknown alone is not an all-clear either: exit 4.
func TestStateCheckStatePredatingRebuild(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--strategy", "rebuild", "--yes"); code != exitOK {
		t.Fatalf("restore --strategy rebuild: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stateDir := t.TempDir()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, task := range []string{"0_0", "1_0"} {
		store := filepath.Join(stateDir, "order-processor", task, "rocksdb", "order-totals-store")
		writeState(t, filepath.Join(store, "000010.sst"), "x")
		writeState(t, filepath.Join(store, "LOG.old.1700000000000000"), "")
		writeState(t, filepath.Join(stateDir, "order-processor", task, ".checkpoint"), "0\n1\norder-processor-order-totals-store-changelog 0 7\n")
		if err := os.Chtimes(filepath.Join(store, "000010.sst"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, "state", "check", "--state-dir", stateDir, "-c", cfg)
	if code != exitPartial || strings.Count(stdout, "must wipe") != 2 || !strings.Contains(stdout, "strategy rebuild") {
		t.Fatalf("state check of state predating a rebuild restore: exit %d, want %d and both tasks must wipe\n%s\n%s", code, exitPartial, stdout, stderr)
	}
	if !strings.Contains(stdout, "finished ") || strings.Contains(stdout, "(started ") {
		t.Errorf("the header does not name the boundary (the restore's finish):\n%s", stdout)
	}

	// State written after the restore, with no store to date it: unknown,
	// which is no all-clear.
	fresh := t.TempDir()
	writeState(t, filepath.Join(fresh, "order-processor", "0_0", ".checkpoint"), "0\n1\norder-processor-order-totals-store-changelog 0 7\n")
	code, stdout, stderr = runCLI(t, "state", "check", "--state-dir", fresh, "-c", cfg)
	if code != exitUndecided || strings.Contains(stdout, "must wipe") || !strings.Contains(stderr, "could not be judged") {
		t.Fatalf("state check with unknown verdicts only: exit %d, want %d\n%s\n%s", code, exitUndecided, stdout, stderr)
	}
}
