package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// staleCheckpointStateDir lays out field case 19's instance
// (docs/DOMAIN.md#field-case-19: local state pointing into the old
// numbering): core-app, task 1_2, a checkpoint at 94826804 on
// core-app-core-store-changelog partition 2, plus another application's
// state beside it.
func staleCheckpointStateDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "core-app", "1_2", CheckpointFile), "0\n1\ncore-app-core-store-changelog 2 94826804\n")
	writeFile(t, filepath.Join(dir, "core-app", "0_0", CheckpointFile), "0\n2\ncore-app-other-store-changelog 0 10\ninventory 0 -4\n")
	writeFile(t, filepath.Join(dir, "core-app", "kafka-streams-process-metadata"), "{}")
	writeFile(t, filepath.Join(dir, "billing-app", "0_1", CheckpointFile), "0\n0\n")
	return dir
}

// TestCheckFlagsStaleCheckpointAfterRestore is field case 19: a checkpoint
// of the old numbering, after a restore renumbered the changelog.
func TestCheckFlagsStaleCheckpointAfterRestore(t *testing.T) {
	dir := staleCheckpointStateDir(t)
	cps, err := Scan(dir, "core-app")
	if err != nil {
		t.Fatal(err)
	}
	ends := map[string]int64{"core-app-core-store-changelog/2": 1200, "core-app-other-store-changelog/0": 40}
	end := func(topic string, p int32) (int64, bool) {
		e, ok := ends[topic+"/"+string(rune('0'+p))]
		return e, ok
	}
	// Without a restore report: the offset beyond the new end is enough.
	got := Check("core-app", cps, end, nil)
	want := map[string]Verdict{"core-store": MustWipe, "other-store": OK, "inventory (source topic)": Unknown}
	for _, f := range got {
		if want[f.Store] != f.Verdict {
			t.Errorf("%s: %s (%s), want %s", f.Store, f.Verdict, f.Reason, want[f.Store])
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d findings, want 3: %+v", len(got), got)
	}
	// With a restore after the checkpoints were written: the in-range
	// checkpoint of a restored changelog is stale too (silent tail replay).
	last := &Restore{RestoreID: "r1", StartedAt: time.Now().Add(time.Hour), Restored: map[string]bool{"core-app-other-store-changelog/0": true}}
	for _, f := range Check("core-app", cps, end, last) {
		if f.Store == "other-store" && (f.Verdict != MustWipe || !strings.Contains(f.Reason, "before restore r1")) {
			t.Errorf("stale in-range checkpoint: %s (%s), want must wipe", f.Verdict, f.Reason)
		}
	}
	// A checkpoint modified after the restore is not enough to pass: a copy
	// or a touch gives that too (regression: it was ok). Without a RocksDB
	// store to date the task's state, it is unknown.
	last.StartedAt = time.Now().Add(-time.Hour)
	for _, f := range Check("core-app", cps, end, last) {
		if f.Store == "other-store" && (f.Verdict != Unknown || !strings.Contains(f.Reason, "a copy or touch")) {
			t.Errorf("checkpoint modified after the restore: %s (%s), want unknown", f.Verdict, f.Reason)
		}
	}
}

func TestReadCheckpointRejectsBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"wrong version": "1\n0\n",
		"short":         "0\n2\nt 0 1\n",
		"bad line":      "0\n1\nt zero 1\n",
		"bad count":     "0\nx\n",
		"empty":         "",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), CheckpointFile)
			writeFile(t, p, content)
			if _, err := ReadCheckpoint(p); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestWipeRemovesOnlyThatApplication(t *testing.T) {
	dir := staleCheckpointStateDir(t)
	n, err := Wipe(dir, "core-app")
	if err != nil || n != 2 {
		t.Fatalf("Wipe = %d, %v; want 2 checkpoints removed", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "core-app")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("core-app state still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "billing-app", "0_1", CheckpointFile)); err != nil {
		t.Fatal("another application's state was touched")
	}
}

func TestWipeRefuses(t *testing.T) {
	dir := staleCheckpointStateDir(t)
	tests := []struct {
		name, stateDir, app, want string
	}{
		{"another app's directory as state.dir", filepath.Join(dir, "billing-app"), "core-app", "one application's directory"},
		{"application without state here", dir, "fraud-app", "has state of: billing-app, core-app"},
		{"path in the application.id", dir, "../core-app", "invalid application.id"},
		{"missing state.dir", filepath.Join(dir, "nope"), "core-app", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Wipe(tc.stateDir, tc.app)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "core-app", "1_2", CheckpointFile)); err != nil {
				t.Fatal("refused wipe removed state")
			}
		})
	}
}

func TestWipeRefusesWhileLocked(t *testing.T) {
	dir := staleCheckpointStateDir(t)
	lock := filepath.Join(dir, "core-app", "1_2", ".lock")
	writeFile(t, lock, "")
	// Another process holds the lock, as a running Kafka Streams instance
	// would (POSIX record locks are per process: take it in a child).
	cmd := newLockHolder(t, lock)
	defer cmd()
	_, err := Wipe(dir, "core-app")
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
}

// TestCheckTaskWithoutCheckpoint: Kafka Streams 4.4 writes no .checkpoint
// for RocksDB stores (KIP-1035, found with the real drill app): a task
// directory whose state predates a restore must be wiped all the same.
func TestCheckTaskWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "drill-app", "1_0", "rocksdb", "counts-store", "000001.sst"), "x")
	cps, err := Scan(dir, "drill-app")
	if err != nil || len(cps) != 1 || cps[0].File {
		t.Fatalf("scan: %+v, %v", cps, err)
	}
	none := func(string, int32) (int64, bool) { return 0, false }
	if f := Check("drill-app", cps, none, nil); len(f) != 1 || f[0].Verdict != Unknown {
		t.Fatalf("no restore: %+v; want unknown", f)
	}
	last := &Restore{RestoreID: "r1", StartedAt: time.Now().Add(time.Hour), Restored: map[string]bool{"drill-app-counts-store-changelog/0": true}}
	if f := Check("drill-app", cps, none, last); len(f) != 1 || f[0].Verdict != MustWipe || !strings.Contains(f[0].Reason, "KIP-1035") {
		t.Fatalf("state older than the restore: %+v; want must wipe", f)
	}
}

// TestCheckMalformedCheckpoint is a regression test (new-user test): one
// bad .checkpoint aborted the whole check instead of judging that task.
func TestCheckMalformedCheckpoint(t *testing.T) {
	dir := staleCheckpointStateDir(t)
	writeFile(t, filepath.Join(dir, "core-app", "2_0", CheckpointFile), "0\n5\ngarbage\n")
	cps, err := Scan(dir, "core-app")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string, int32) (int64, bool) { return 0, false }
	var bad *Finding
	fs := Check("core-app", cps, none, nil)
	for i := range fs {
		if fs[i].Task == "2_0" {
			bad = &fs[i]
		}
	}
	if bad == nil || bad.Verdict != MustWipe || len(fs) != 4 {
		t.Fatalf("findings %+v: want the malformed task flagged and the others judged", fs)
	}
}
