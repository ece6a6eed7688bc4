package statedir

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testdata/streams-4.4 is two task directories and the process metadata of
// the real drill app (internal/testkit.StreamsApp, Kafka Streams 4.4.0,
// run twice on a real broker): RocksDB key-value and window stores, SST
// files, rotated LOGs, no .checkpoint (KIP-1035). Its stores' data dates
// from these times, by their SST table properties:
var (
	realBorn10 = time.Date(2026, 12, 1, 11, 10, 51, 0, time.UTC) // 1_0: rocksdb/counts-store/000010.sst
	realBorn12 = time.Date(2026, 12, 1, 11, 10, 56, 0, time.UTC) // 1_2: rocksdb/counts-store/000010.sst
)

// realState copies testdata/streams-4.4 into a temporary state.dir, as cp
// or os.CopyFS would (contents kept, new modification times), and sets
// every file's modification time to touched.
func realState(t *testing.T, touched time.Time) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/streams-4.4")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "drill-app", "1_2", "window-counts-store"), 0o755); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if err := os.Chtimes(p, touched, touched); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	return dir
}

func TestSSTCreatedReadsRealTableProperties(t *testing.T) {
	for _, tc := range []struct {
		file string
		want time.Time
	}{
		{"1_0/rocksdb/counts-store/000010.sst", realBorn10},
		{"1_0/rocksdb/counts-store/000011.sst", time.Date(2026, 12, 1, 11, 10, 54, 0, time.UTC)},
		{"1_0/window-counts-store/window-counts-store.1796120040000/000010.sst", time.Date(2026, 12, 1, 11, 10, 54, 0, time.UTC)},
		{"1_2/rocksdb/counts-store/000010.sst", realBorn12},
	} {
		got, err := sstCreated(filepath.Join("testdata/streams-4.4/drill-app", tc.file))
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.file, got.UTC(), err, tc.want)
		}
	}
	for name, content := range map[string]string{"short": "x", "not an SST": strings.Repeat("x", 100)} {
		p := filepath.Join(t.TempDir(), "000001.sst")
		writeFile(t, p, content)
		if _, err := sstCreated(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got, ok := rotatedLogTime("LOG.old.1796123455333362"); !ok || !got.Equal(time.UnixMicro(1796123455333362)) {
		t.Errorf("rotated LOG name: %v %v", got, ok)
	}
}

// TestCheckCopiedOrTouchedStateIsStale is a regression test: the verdict
// rested on file modification times, so state that predates a restore but
// was copied or touched after it passed (unknown with exit 0 for Kafka 4.x
// task directories, ok for a .checkpoint). The stores' own content says
// when their data first existed.
func TestCheckCopiedOrTouchedStateIsStale(t *testing.T) {
	last := &Restore{RestoreID: "r1", StartedAt: realBorn12.Add(10 * time.Minute), FinishedAt: realBorn12.Add(11 * time.Minute),
		Restored: map[string]bool{"drill-app-counts-store-changelog/0": true, "drill-app-counts-store-changelog/2": true}}
	dir := realState(t, last.FinishedAt.Add(time.Hour))
	// The pre-4.3 layout (or upgrade.from): a .checkpoint beside the stores.
	writeFile(t, filepath.Join(dir, "drill-app", "1_2", CheckpointFile), "0\n1\ndrill-app-counts-store-changelog 2 10\n")
	os.Chtimes(filepath.Join(dir, "drill-app", "1_2", CheckpointFile), last.FinishedAt.Add(time.Hour), last.FinishedAt.Add(time.Hour))
	cps, err := Scan(dir, "drill-app")
	if err != nil {
		t.Fatal(err)
	}
	end := func(string, int32) (int64, bool) { return 40, true }
	got := Check("drill-app", cps, end, last)
	want := map[string]string{"1_0": "holds data from 2026-12-01T11:10:51Z", "1_2": "holds data from 2026-12-01T11:10:56Z"}
	if len(got) != 2 {
		t.Fatalf("%d findings, want 2: %+v", len(got), got)
	}
	for _, f := range got {
		if f.Verdict != MustWipe || !strings.Contains(f.Reason, want[f.Task]) || !strings.Contains(f.Reason, "before restore r1") {
			t.Errorf("task %s %s: %s (%s); want must wipe saying %q", f.Task, f.Store, f.Verdict, f.Reason, want[f.Task])
		}
	}
}

// TestCheckStateBuiltAfterRestore: state whose stores all date, by their
// content, from after the restore is ok, a .checkpoint entry in it too;
// a store its content does not date yet leaves the task unknown.
func TestCheckStateBuiltAfterRestore(t *testing.T) {
	last := &Restore{RestoreID: "r1", StartedAt: realBorn10.Add(-10 * time.Minute), FinishedAt: realBorn10.Add(-9 * time.Minute),
		Restored: map[string]bool{"drill-app-counts-store-changelog/2": true}}
	dir := realState(t, realBorn12.Add(time.Minute))
	writeFile(t, filepath.Join(dir, "drill-app", "1_2", CheckpointFile), "0\n1\ndrill-app-counts-store-changelog 2 10\n")
	end := func(string, int32) (int64, bool) { return 40, true }
	cps, err := Scan(dir, "drill-app")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Check("drill-app", cps, end, last) {
		if f.Verdict != OK {
			t.Errorf("task %s %s: %s (%s); want ok", f.Task, f.Store, f.Verdict, f.Reason)
		}
	}

	// A store RocksDB has not flushed or reopened yet: nothing dates it.
	writeFile(t, filepath.Join(dir, "drill-app", "1_0", "rocksdb", "new-store", "CURRENT"), "MANIFEST-000005\n")
	writeFile(t, filepath.Join(dir, "drill-app", "1_0", "rocksdb", "new-store", "000004.log"), "")
	if cps, err = Scan(dir, "drill-app"); err != nil {
		t.Fatal(err)
	}
	for _, f := range Check("drill-app", cps, end, last) {
		if f.Task == "1_0" && (f.Verdict != Unknown || !strings.Contains(f.Reason, "rocksdb/new-store records no date")) {
			t.Errorf("task 1_0 with an undated store: %s (%s); want unknown naming it", f.Verdict, f.Reason)
		}
	}
}

// TestScanNamedTopology: a named topology's task directories are
// __<name>__/<subtopology>_<partition> (StateDirectory.getTaskDirectoryParentName).
func TestScanNamedTopology(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "__orders__", "0_1", CheckpointFile), "0\n1\napp-s-changelog 1 5\n")
	writeFile(t, filepath.Join(dir, "app", "0_0", CheckpointFile), "0\n0\n")
	cps, err := Scan(dir, "app")
	if err != nil || len(cps) != 2 || cps[1].Task != "__orders__/0_1" || len(cps[1].Entries) != 1 {
		t.Fatalf("Scan = %+v, %v; want 0_0 and __orders__/0_1", cps, err)
	}
}

// TestCheckFollowsLinkedTaskDirectory: Kafka Streams finds task
// directories with File.isDirectory(), which follows symbolic links, and
// uses the state behind one; the check judges it too (it only reads).
func TestCheckFollowsLinkedTaskDirectory(t *testing.T) {
	last := &Restore{RestoreID: "r1", StartedAt: realBorn12.Add(10 * time.Minute), FinishedAt: realBorn12.Add(11 * time.Minute),
		Restored: map[string]bool{"drill-app-counts-store-changelog/0": true}}
	src := realState(t, last.FinishedAt.Add(time.Hour))
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "drill-app", ProcessMetadataFile), "{}")
	if err := os.Symlink(filepath.Join(src, "drill-app", "1_0"), filepath.Join(dir, "drill-app", "1_0")); err != nil {
		t.Fatal(err)
	}
	cps, err := Scan(dir, "drill-app")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string, int32) (int64, bool) { return 0, false }
	f := Check("drill-app", cps, none, last)
	if len(f) != 1 || f[0].Task != "1_0" || f[0].Verdict != MustWipe {
		t.Fatalf("findings %+v; want 1_0 (behind a link) must wipe", f)
	}
}

// TestCheckStatePredatingRebuildRestore is a regression test (new user,
// Kafka 4.4): after a `restore --strategy rebuild` the changelogs are not
// on the target, and state older than the restore (an SST modified in
// 2020, a rotated LOG of 2023) was judged per .checkpoint entry as unknown
// ("the changelog partition is not on the cluster"), exit 0. A file or a
// store predating the restore decides the task whatever the changelog
// says: the app rebuilds its state from the restored input, so stale state
// counts those records twice.
func TestCheckStatePredatingRebuildRestore(t *testing.T) {
	dir := t.TempDir()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, task := range []string{"0_0", "0_1"} {
		store := filepath.Join(dir, "myapp", task, "rocksdb", "counts")
		writeFile(t, filepath.Join(store, "000010.sst"), "not an SST: dates nothing")
		writeFile(t, filepath.Join(store, "LOG.old.1700000000000000"), "")
		writeFile(t, filepath.Join(dir, "myapp", task, CheckpointFile), "0\n1\nmyapp-counts-changelog "+task[2:]+" 42\n")
		if err := os.Chtimes(filepath.Join(store, "000010.sst"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	restore := time.Now().Add(-time.Minute)
	last := &Restore{RestoreID: "r1", Strategy: "rebuild", StartedAt: restore, FinishedAt: restore.Add(30 * time.Second),
		Restored: map[string]bool{"events/0": true, "events/1": true}}
	cps, err := Scan(dir, "myapp")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string, int32) (int64, bool) { return 0, false } // rebuild: no changelog on the target
	got := Check("myapp", cps, none, last)
	if len(got) != 2 {
		t.Fatalf("%d findings, want 2: %+v", len(got), got)
	}
	for _, f := range got {
		if f.Verdict != MustWipe || !strings.Contains(f.Reason, "before restore r1") || !strings.Contains(f.Reason, "rebuild") {
			t.Errorf("task %s %s: %s (%s); want must wipe, naming the rebuild restore r1", f.Task, f.Store, f.Verdict, f.Reason)
		}
	}

	// A rebuild that restored no partition at all (every record past
	// --to-time) is a restore into the cluster all the same.
	last.Restored = map[string]bool{}
	for _, f := range Check("myapp", cps, none, last) {
		if f.Verdict != MustWipe {
			t.Errorf("rebuild with no partition restored: task %s %s: %s (%s); want must wipe", f.Task, f.Store, f.Verdict, f.Reason)
		}
	}
}

// TestRestoreBoundaryIsFinish: state written after a restore started but
// before it finished was built from a half-restored cluster: the boundary
// is the report's finished_at (its started_at only when it has none).
func TestRestoreBoundaryIsFinish(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &Restore{StartedAt: start, FinishedAt: start.Add(time.Hour)}
	if !r.Boundary().Equal(start.Add(time.Hour)) {
		t.Errorf("boundary %v, want the finish %v", r.Boundary(), start.Add(time.Hour))
	}
	r.FinishedAt = time.Time{}
	if !r.Boundary().Equal(start) {
		t.Errorf("boundary without a finish %v, want the start %v", r.Boundary(), start)
	}
}
