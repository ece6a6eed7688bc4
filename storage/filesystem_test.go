package storage_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

func TestFilesystemConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		dir := t.TempDir()
		b, err := storage.NewFilesystem(filepath.Join(dir, "repo"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Whatever the subtest did, no temporary file may survive it.
			if temps := findTemps(t, dir); len(temps) > 0 {
				t.Errorf("temporary files left behind: %q", temps)
			}
		})
		return b
	})
}

func findTemps(t *testing.T, root string) []string {
	t.Helper()
	var temps []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), storage.TempPrefix) {
			temps = append(temps, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return temps
}

func TestNewFilesystem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		root    string
		wantErr string // substring of the error, "" for success
	}{
		{"creates missing root and parents", filepath.Join(dir, "a", "b", "repo"), ""},
		{"existing directory", dir, ""},
		{"root is a file", file, file},
		{"root below a file", filepath.Join(file, "repo"), file},
		{"empty root", "", "empty root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := storage.NewFilesystem(tt.root)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewFilesystem(%q) = %v, want an error naming %q", tt.root, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(tt.root); err != nil || !fi.IsDir() {
				t.Errorf("root %q not created: %v", tt.root, err)
			}
			if b.Location() != tt.root {
				t.Errorf("Location() = %q, want %q", b.Location(), tt.root)
			}
		})
	}
}

func TestFilesystemLayoutAndTemps(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := storage.NewFilesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "topics/t/seg", strings.NewReader("data"), 4); err != nil {
		t.Fatal(err)
	}
	// Key "a/b/c" is the file <root>/a/b/c, so a repository can be copied
	// to S3 with any tool and read back by the S3 backend.
	got, err := os.ReadFile(filepath.Join(root, "topics", "t", "seg"))
	if err != nil || string(got) != "data" {
		t.Fatalf("object file = %q, %v; want \"data\"", got, err)
	}

	// A temp file left by a killed writer is neither listed nor kept forever.
	stale := filepath.Join(root, "topics", "t", storage.TempPrefix+"123")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := b.List(ctx, "", func(i storage.ObjectInfo) error { keys = append(keys, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "topics/t/seg" {
		t.Errorf("List = %q, want only topics/t/seg", keys)
	}
	if n, err := b.RemoveStaleTemps(ctx, "", time.Hour); err != nil || n != 0 {
		t.Errorf("RemoveStaleTemps(1h) = %d, %v; want 0 (the file is fresh)", n, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := b.RemoveStaleTemps(ctx, "", time.Hour); err != nil || n != 1 {
		t.Errorf("RemoveStaleTemps(1h) = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file still there: %v", err)
	}

	// Delete removes directories it leaves empty.
	if err := b.Delete(ctx, "topics/t/seg"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "topics")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty directory topics/ left after Delete: %v", err)
	}
}

// TestFilesystemNotRegularIsListedAndRefused: a FIFO or an empty directory
// under a key is listed (size 0) and Get and Stat refuse it with
// ErrNotRegular, never ErrNotFound; Get of a FIFO does not block. A
// directory holding other keys stays a "directory", not an object.
func TestFilesystemNotRegularIsListedAndRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	root := t.TempDir()
	b, err := storage.NewFilesystem(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "d/full/obj", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "d", "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := b.List(ctx, "d/", func(oi storage.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"d/empty", "d/fifo", "d/full/obj"}; !slices.Equal(keys, want) {
		t.Errorf("List = %q, want %q", keys, want)
	}
	for _, key := range []string{"d/fifo", "d/empty"} {
		done := make(chan error, 1)
		go func() {
			rc, err := b.Get(ctx, key)
			if err == nil {
				rc.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, storage.ErrNotRegular) || !strings.Contains(err.Error(), key) {
				t.Errorf("Get(%q) = %v, want ErrNotRegular naming the key", key, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("Get(%q) blocked", key)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, storage.ErrNotRegular) {
			t.Errorf("Stat(%q) = %v, want ErrNotRegular", key, err)
		}
	}
	if _, err := b.Get(ctx, "d/full"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get of a directory of keys = %v, want ErrNotFound", err)
	}
}
