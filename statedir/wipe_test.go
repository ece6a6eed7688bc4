package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// streams44Tree lays out <dir>/<app> as Kafka Streams 4.4 leaves it (seen
// with the real drill app, internal/testkit.StreamsApp): the process
// metadata and .lock, task directories with RocksDB key-value stores under
// rocksdb/<store>/ and segmented window stores under <store>/<store>.<id>/,
// a global store, a named topology's task, and a pre-4.3 .checkpoint.
func streams44Tree(t *testing.T, dir, app string) {
	t.Helper()
	a := filepath.Join(dir, app)
	writeFile(t, filepath.Join(a, ProcessMetadataFile), `{"processId":"a73070e9-085a-4fc1-ba71-f82cb0d3bf4f"}`)
	writeFile(t, filepath.Join(a, LockFile), "")
	for _, f := range []string{"000010.sst", "000021.log", "CURRENT", "IDENTITY", "LOCK", "LOG", "LOG.old.1796123455333362", "MANIFEST-000022", "OPTIONS-000024"} {
		writeFile(t, filepath.Join(a, "1_0", "rocksdb", "counts-store", f), "x")
		writeFile(t, filepath.Join(a, "1_0", "window-counts-store", "window-counts-store.1796120040000", f), "x")
		writeFile(t, filepath.Join(a, "global", "rocksdb", "category-labels-store", f), "x")
	}
	if err := os.MkdirAll(filepath.Join(a, "1_2", "window-counts-store"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(a, "0_1", CheckpointFile), "0\n1\n"+app+"-counts-store-changelog 1 42\n")
	writeFile(t, filepath.Join(a, "__orders__", "0_0", "rocksdb", "totals-store", "CURRENT"), "x")
}

// etcDecoy lays out <dir>/etc like a system directory: files, a
// subdirectory, a symbolic link, and one entry named like a task directory.
func etcDecoy(t *testing.T, dir string) []string {
	t.Helper()
	etc := filepath.Join(dir, "etc")
	files := []string{"passwd", "hosts", "ssl/certs/ca-certificates.crt", "0_0/README"}
	for _, f := range files {
		writeFile(t, filepath.Join(etc, f), "precious\n")
	}
	if err := os.Symlink("/usr/share/zoneinfo/UTC", filepath.Join(etc, "localtime")); err != nil {
		t.Fatal(err)
	}
	return files
}

func assertIntact(t *testing.T, dir string, files []string) {
	t.Helper()
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) == 0 {
			t.Errorf("%s was touched by a refused wipe: %v", f, err)
		}
	}
}

// TestWipeRefusesSystemShapedDirectory is a regression test: `state wipe
// --state-dir / --application-id etc --yes` removed /etc and exited 0.
// Here on a decoy shaped like /etc, under a temporary directory.
func TestWipeRefusesSystemShapedDirectory(t *testing.T) {
	decoy := t.TempDir()
	files := etcDecoy(t, decoy)
	_, err := Wipe(decoy, "etc")
	if err == nil {
		t.Fatal("a directory shaped like /etc was wiped")
	}
	for _, want := range []string{"passwd (file)", "hosts (file)", "ssl/ (directory)", "localtime (symbolic link)", "check --state-dir and --application-id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "0_0") {
		t.Errorf("the refusal names 0_0, a task directory's name:\n%v", err)
	}
	assertIntact(t, filepath.Join(decoy, "etc"), files)
}

// TestWipeRefusesUnknownEntries: Kafka Streams state with anything else in
// the application directory is not provably that application's state.
func TestWipeRefusesUnknownEntries(t *testing.T) {
	tests := []struct {
		name  string
		extra string // relative to the application directory
		want  string
	}{
		{"a file beside the task directories", "notes.txt", "notes.txt (file)"},
		{"a directory not named like a task", "backup-2024/x", "backup-2024/ (directory)"},
		{"a task-like name with a suffix", "0_1_old/x", "0_1_old/ (directory)"},
		{"a file in a named topology's directory", "__orders__/keep.txt", "__orders__/keep.txt (file)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			streams44Tree(t, dir, "drill-app")
			writeFile(t, filepath.Join(dir, "drill-app", tc.extra), "precious\n")
			_, err := Wipe(dir, "drill-app")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.want)
			}
			assertIntact(t, filepath.Join(dir, "drill-app"), []string{tc.extra, "1_0/rocksdb/counts-store/CURRENT", ProcessMetadataFile})
		})
	}
}

// TestWipeRefusesSymlinks: a wipe never follows a symbolic link, and does
// not remove one either: the application directory as a link, and a link
// anywhere below it, are refused, and what they point to is left alone.
func TestWipeRefusesSymlinks(t *testing.T) {
	t.Run("inside a task directory", func(t *testing.T) {
		dir, outside := t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(outside, "precious"), "precious\n")
		streams44Tree(t, dir, "drill-app")
		if err := os.Symlink(outside, filepath.Join(dir, "drill-app", "1_0", "rocksdb", "other-store")); err != nil {
			t.Fatal(err)
		}
		_, err := Wipe(dir, "drill-app")
		if err == nil || !strings.Contains(err.Error(), "other-store: a symbolic link (to "+outside+")") {
			t.Fatalf("err = %v, want a refusal naming the link", err)
		}
		assertIntact(t, outside, []string{"precious"})
		assertIntact(t, filepath.Join(dir, "drill-app"), []string{"1_0/rocksdb/counts-store/CURRENT"})
	})
	t.Run("the application directory", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		streams44Tree(t, elsewhere, "drill-app")
		if err := os.Symlink(filepath.Join(elsewhere, "drill-app"), filepath.Join(dir, "drill-app")); err != nil {
			t.Fatal(err)
		}
		_, err := Wipe(dir, "drill-app")
		if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
			t.Fatalf("err = %v, want a refusal of the link", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "drill-app")); err != nil {
			t.Errorf("the link was removed: %v", err)
		}
		assertIntact(t, filepath.Join(elsewhere, "drill-app"), []string{"1_0/rocksdb/counts-store/CURRENT"})
	})
}

// TestWipeRefusesHomeDirectory is a regression test: a state.dir and
// application.id that name $HOME (a decoy HOME under a temporary
// directory) were wiped if it held anything that looked like a task.
func TestWipeRefusesHomeDirectory(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "users", "kafka")
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(home, "0_0", CheckpointFile), "0\n0\n")
	if err := os.Symlink(filepath.Join(base, "users"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stateDir, app, want string }{
		{filepath.Join(base, "users"), "kafka", "the home directory"},
		{filepath.Join(base, "link"), "kafka", "the home directory"}, // after resolving the state.dir's link
		{base, "users", "an ancestor of the home directory"},
	} {
		_, err := Wipe(tc.stateDir, tc.app)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Wipe(%s, %s) = %v, want a refusal saying %q", tc.stateDir, tc.app, err, tc.want)
		}
	}
	assertIntact(t, home, []string{"0_0/" + CheckpointFile})
}

// TestWipeStreams44Layout: everything Kafka Streams 4.4 writes goes, and
// nothing beside it.
func TestWipeStreams44Layout(t *testing.T) {
	dir := t.TempDir()
	streams44Tree(t, dir, "drill-app")
	writeFile(t, filepath.Join(dir, "billing-app", "0_0", CheckpointFile), "0\n0\n")
	n, err := Wipe(dir, "drill-app")
	if err != nil || n != 5 {
		t.Fatalf("Wipe = %d, %v; want 5 task directories (0_1, 1_0, 1_2, global, __orders__/0_0)", n, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "drill-app")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("drill-app still there: %v", err)
	}
	assertIntact(t, filepath.Join(dir, "billing-app"), []string{"0_0/" + CheckpointFile})
}

// TestProtectedPath judges paths only: no wipe is ever run on them.
func TestProtectedPath(t *testing.T) {
	home := "/home/kafka"
	for _, tc := range []struct {
		path string
		want string // "" when it may be wiped
	}{
		{"/", "the filesystem root"},
		{"/etc", "a system directory"},
		{"/etc/", "a system directory"},
		{"/usr/lib", "a system directory"},
		{"/var/lib", "a system directory"},
		{"/opt", "a system directory"},
		{"/home", "an ancestor of the home directory"},
		{"/home/kafka", "the home directory"},
		{"/home/kafka/state/order-processor", ""},
		{"/var/lib/kafka-streams/order-processor", ""},
		{"/tmp/kafka-streams/order-processor", ""},
		{"/data/order-processor", ""},
	} {
		if got := protectedPath(tc.path, home); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("protectedPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := protectedPath("/home/kafka", ""); got != "" {
		t.Errorf("without a known home: %q", got)
	}
}

// TestWipeDryRun: the plan lists what a wipe removes, and removes nothing.
func TestWipeDryRun(t *testing.T) {
	dir := t.TempDir()
	streams44Tree(t, dir, "drill-app")
	p, err := PlanWipe(dir, "drill-app")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0_1", "1_0", "1_2", "__orders__/0_0", "global"}
	if strings.Join(p.Tasks, ",") != strings.Join(want, ",") {
		t.Errorf("tasks %q, want %q", p.Tasks, want)
	}
	entries := strings.Join(p.Entries(), "\n")
	for _, e := range []string{".lock", ProcessMetadataFile, "1_0/rocksdb/counts-store/MANIFEST-000022", "1_2/window-counts-store/", "__orders__/"} {
		if !strings.Contains(entries, e) {
			t.Errorf("the plan lacks %s:\n%s", e, entries)
		}
	}
	var files int
	var size int64
	filepath.WalkDir(filepath.Join(dir, "drill-app"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			files, size = files+1, size+fi.Size()
		}
		return nil
	})
	if p.Files != files || p.Bytes != size {
		t.Errorf("plan: %d files, %d bytes; the tree has %d, %d", p.Files, p.Bytes, files, size)
	}
	assertIntact(t, filepath.Join(dir, "drill-app"), []string{ProcessMetadataFile, "1_0/rocksdb/counts-store/CURRENT", "0_1/" + CheckpointFile})
}

// TestWipeDeletesOnlyWhatWasChecked: the tree changes between the check
// and the removal (an instance starts, someone swaps a store for a link).
// The wipe removes only entries it checked, never follows the link, and
// says where it stopped.
func TestWipeDeletesOnlyWhatWasChecked(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, app, outside string)
		want   string
		kept   []string // relative to the application directory
	}{
		{"a file appears in a task directory", func(t *testing.T, app, _ string) {
			writeFile(t, filepath.Join(app, "1_0", "rocksdb", "counts-store", "000099.sst"), "new\n")
		}, "entries appeared in it after the check", []string{"1_0/rocksdb/counts-store/000099.sst"}},
		{"a task directory appears", func(t *testing.T, app, _ string) {
			writeFile(t, filepath.Join(app, "2_2", "rocksdb", "new-store", "CURRENT"), "new\n")
		}, "entries appeared in it after the check", []string{"2_2/rocksdb/new-store/CURRENT"}},
		{"a store directory is swapped for a link out of the tree", func(t *testing.T, app, outside string) {
			store := filepath.Join(app, "global", "rocksdb", "category-labels-store")
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, store); err != nil {
				t.Fatal(err)
			}
		}, "changed after the check", nil},
		{"a checked file is replaced", func(t *testing.T, app, _ string) {
			// As OffsetCheckpoint writes it: a .tmp file renamed over it.
			p := filepath.Join(app, "0_1", CheckpointFile)
			writeFile(t, p+".tmp", "0\n0\n")
			if err := os.Rename(p+".tmp", p); err != nil {
				t.Fatal(err)
			}
		}, "replaced after the check", []string{"0_1/" + CheckpointFile}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			for _, f := range []string{"000010.sst", "CURRENT", "LOG", "precious"} {
				writeFile(t, filepath.Join(outside, f), "precious\n")
			}
			streams44Tree(t, dir, "drill-app")
			p, err := PlanWipe(dir, "drill-app")
			if err != nil {
				t.Fatal(err)
			}
			app := filepath.Join(dir, "drill-app")
			tc.change(t, app, outside)
			n, err := p.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stopped after removing") {
				t.Fatalf("Execute = %d, %v; want it to stop saying %q", n, err, tc.want)
			}
			assertIntact(t, outside, []string{"000010.sst", "CURRENT", "LOG", "precious"})
			assertIntact(t, app, tc.kept)
		})
	}
}

// TestWipeRefusesSpecialFiles: Kafka Streams writes only files and
// directories; a named pipe (or a device, a socket) below the application
// directory is not its state.
func TestWipeRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	streams44Tree(t, dir, "drill-app")
	fifo := filepath.Join(dir, "drill-app", "1_0", "rocksdb", "counts-store", "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Wipe(dir, "drill-app")
	if err == nil || !strings.Contains(err.Error(), fifo+": a named pipe, not a file or directory") {
		t.Fatalf("err = %v, want a refusal naming the pipe", err)
	}
	assertIntact(t, filepath.Join(dir, "drill-app"), []string{"1_0/rocksdb/counts-store/CURRENT"})
}
