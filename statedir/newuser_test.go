package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newUserRestore is a changelog restore that finished an hour ago and
// renumbered core-app's changelog partition 0.
func newUserRestore() *Restore {
	at := time.Now().Add(-time.Hour)
	return &Restore{RestoreID: "r1", StartedAt: at.Add(-time.Minute), FinishedAt: at,
		Restored: map[string]bool{"core-app-counts-store-changelog/0": true}}
}

func within(string, int32) (int64, bool) { return 100, true }

// TestCheckRestoreUnknownIsNoAllClear is a regression test (second
// new-user pass): when the last restore cannot be known (its report does
// not decode, storage.path does not exist), a checkpoint within the
// changelog was ok, "within the changelog", although state from before a
// restore would be stale. No entry is ok on the strength of the changelog
// alone then: unknown, naming why the restore is unknown.
func TestCheckRestoreUnknownIsNoAllClear(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "core-app", "0_0", CheckpointFile), "0\n1\ncore-app-counts-store-changelog 0 7\n")
	writeFile(t, filepath.Join(dir, "core-app", "0_1", CheckpointFile), "0\n1\ncore-app-counts-store-changelog 1 700\n")
	cps, err := Scan(dir, "core-app")
	if err != nil {
		t.Fatal(err)
	}
	why := "restores/r9/report.json does not decode"
	f := Check("core-app", cps, within, &Restore{Unknown: why})
	if len(f) != 2 {
		t.Fatalf("findings %+v; want two", f)
	}
	if f[0].Verdict != Unknown || !strings.Contains(f[0].Reason, why) {
		t.Errorf("0_0 within the changelog, last restore unknown: %+v; want unknown naming %q", f[0], why)
	}
	// Beyond the changelog's end is stale whatever the restore.
	if f[1].Verdict != MustWipe {
		t.Errorf("0_1 beyond the changelog's end: %+v; want must wipe", f[1])
	}
}

// TestCheckSymlinkInTaskIsNoAllClear is a regression test (second new-user
// pass): a symbolic link in a task directory (store.bin to a file from
// before the restore, rocksdb to a stale store directory) was ignored:
// "the task directory holds no state", ok, while state wipe refuses the
// link. It makes the task unknown, naming the link.
func TestCheckSymlinkInTaskIsNoAllClear(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour)
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "store.bin"), "x")
	writeFile(t, filepath.Join(elsewhere, "counts-store", "000010.sst"), "x")
	for _, p := range []string{filepath.Join(elsewhere, "store.bin"), filepath.Join(elsewhere, "counts-store", "000010.sst")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, link, to string
		checkpoint     bool
	}{
		{"file", "store.bin", "store.bin", false},
		{"store directory", "rocksdb", "counts-store", false},
		{"file beside a checkpoint", "store.bin", "store.bin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			task := filepath.Join(dir, "core-app", "0_0")
			if err := os.MkdirAll(task, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.checkpoint {
				writeFile(t, filepath.Join(task, CheckpointFile), "0\n1\ncore-app-counts-store-changelog 1 7\n")
			}
			if err := os.Symlink(filepath.Join(elsewhere, tc.to), filepath.Join(task, tc.link)); err != nil {
				t.Fatal(err)
			}
			cps, err := Scan(dir, "core-app")
			if err != nil {
				t.Fatal(err)
			}
			for name, last := range map[string]*Restore{"no restore": nil, "after a restore": newUserRestore()} {
				f := Check("core-app", cps, within, last)
				if len(f) != 1 || f[0].Verdict == OK || !strings.Contains(f[0].Reason, tc.link) || !strings.Contains(f[0].Reason, "symbolic link") {
					t.Errorf("%s: findings %+v; want one, not ok, naming the symbolic link %s", name, f, tc.link)
				}
			}
		})
	}
}

// TestCheckEmptyCheckpointWithStaleFile is a regression test (second
// new-user pass): a task with an empty but valid .checkpoint ("0\n0\n")
// and a custom store file modified before the restore gave no finding at
// all (an empty table, exit 0); without the .checkpoint it was must wipe.
// Any file modified before the restore means must wipe.
func TestCheckEmptyCheckpointWithStaleFile(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "core-app", "0_0")
	writeFile(t, filepath.Join(task, CheckpointFile), "0\n0\n")
	writeFile(t, filepath.Join(task, "custom-store.bin"), "x")
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(task, "custom-store.bin"), old, old); err != nil {
		t.Fatal(err)
	}
	cps, err := Scan(dir, "core-app")
	if err != nil {
		t.Fatal(err)
	}
	f := Check("core-app", cps, within, newUserRestore())
	if len(f) != 1 || f[0].Verdict != MustWipe || !strings.Contains(f[0].Reason, "custom-store.bin") {
		t.Fatalf("findings %+v; want one, must wipe, naming custom-store.bin", f)
	}
	// No restore recorded: nothing dates it, and no entry to judge.
	if f := Check("core-app", cps, within, nil); len(f) != 1 || f[0].Verdict != Unknown {
		t.Fatalf("no restore: findings %+v; want one, unknown", f)
	}
}

// TestCheckEmptyTaskRestoreUnknownIsNoAllClear is a regression test (third
// new-user pass): with the last restore unknown (storage.path missing, a
// report that does not decode), a state directory holding only empty task
// directories was ok, "the task directory holds no state", and state check
// exited 0, although it could not judge anything. A check that could not
// know the last restore says no task is ok: unknown, naming why.
func TestCheckEmptyTaskRestoreUnknownIsNoAllClear(t *testing.T) {
	dir := t.TempDir()
	for _, task := range []string{"0_0", "1_0"} {
		if err := os.MkdirAll(filepath.Join(dir, "core-app", task), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cps, err := Scan(dir, "core-app")
	if err != nil {
		t.Fatal(err)
	}
	why := "cannot open the repository: /nowhere: no such directory"
	f := Check("core-app", cps, within, &Restore{Unknown: why})
	if len(f) != 2 {
		t.Fatalf("findings %+v; want two", f)
	}
	for _, x := range f {
		if x.Verdict != Unknown || !strings.Contains(x.Reason, why) {
			t.Errorf("empty task %s, last restore unknown: %+v; want unknown naming %q", x.Task, x, why)
		}
	}
	// With no restore recorded, or after a known one, an empty task
	// directory holds nothing stale: ok.
	for name, last := range map[string]*Restore{"no restore": nil, "after a restore": newUserRestore()} {
		if f := Check("core-app", cps, within, last); len(f) != 2 || f[0].Verdict != OK || f[1].Verdict != OK {
			t.Errorf("%s: findings %+v; want two, ok", name, f)
		}
	}
}
