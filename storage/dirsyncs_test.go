package storage_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestFilesystemDeferredDirSyncs is a regression test (issue 13): every
// Put fsynced its directory, and the parent of each directory it created,
// so a backup of 2,000 partitions (a segment directory each) fsynced the
// topic's directory 2,000 times. Under WithDeferredDirSyncs the puts
// fsync no directory; Sync fsyncs each pending one once, and the objects
// are readable in between (read-after-write).
func TestFilesystemDeferredDirSyncs(t *testing.T) {
	root := t.TempDir()
	f, err := storage.NewFilesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	count, restore := storage.CountDirSyncs()
	defer restore()
	d := storage.NewDirSyncs()
	ctx := storage.WithDeferredDirSyncs(t.Context(), d)
	var keys []string
	for p := range 20 {
		for s := range 3 {
			keys = append(keys, fmt.Sprintf("segments/b1/topic/%d/%020d.kseg", p, s))
		}
	}
	for _, k := range keys {
		if err := f.Put(ctx, k, strings.NewReader(k), int64(len(k))); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); len(n) != 0 {
		t.Fatalf("deferred puts fsynced directories: %v", n)
	}
	for _, k := range keys {
		if got := get(t, f, k); got != k {
			t.Fatalf("%s holds %q before Sync, want %q", k, got, k)
		}
	}
	want := []string{root, filepath.Join(root, "segments"), filepath.Join(root, "segments", "b1"), filepath.Join(root, "segments", "b1", "topic")}
	for p := range 20 {
		want = append(want, filepath.Join(root, "segments", "b1", "topic", fmt.Sprint(p)))
	}
	slices.Sort(want)
	if got := d.Pending(); !slices.Equal(got, want) {
		t.Fatalf("pending directory fsyncs %q, want %q", got, want)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	n := count()
	for _, dir := range want {
		if n[dir] != 1 {
			t.Errorf("directory %s fsynced %d times by Sync, want once", dir, n[dir])
		}
	}
	if len(n) != len(want) || len(d.Pending()) != 0 {
		t.Errorf("Sync fsynced %v and left %q pending, want each of %q once and none pending", n, d.Pending(), want)
	}

	// Without the context a Put fsyncs its directory at once, as before.
	if err := f.Put(t.Context(), "segments/b1/topic/0/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if got := count()[filepath.Join(root, "segments", "b1", "topic", "0")]; got != 2 {
		t.Errorf("an undeferred Put fsynced its directory %d times in all, want once more than Sync did", got)
	}
	if len(d.Pending()) != 0 {
		t.Errorf("an undeferred Put left %q pending", d.Pending())
	}
}

func get(t *testing.T, f storage.Backend, key string) string {
	t.Helper()
	rc, err := f.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
