package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Filesystem is a Backend storing each object as a regular file under a root
// directory: key "a/b/c" is the file <root>/a/b/c. Create it with
// NewFilesystem. It is safe for concurrent use by several goroutines and by
// several processes sharing the directory.
//
// Durability: Put writes a temporary file named ".tmp-*" in the destination
// directory, fsyncs it, renames it over the key and fsyncs the directory, so
// a crash leaves either the old object, the new one, or an unlisted temporary
// file (remove those with RemoveStaleTemps); under WithDeferredDirSyncs
// the directory fsyncs wait for DirSyncs.Sync. Objects are created with mode
// 0600 and directories with mode 0700: backups contain application data.
//
// Limitations compared with S3: a key cannot be both an object and a
// "directory" of other keys (storing "a" and "a/b" fails with an error), and
// ModTime has the filesystem's resolution.
type Filesystem struct {
	root string
}

var _ Backend = (*Filesystem)(nil)

// NewFilesystem returns a Filesystem backend rooted at the directory root,
// creating it (and its parents) if missing. The error names the path.
func NewFilesystem(root string) (*Filesystem, error) {
	if root == "" {
		return nil, errors.New("filesystem storage: empty root directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("filesystem storage %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("filesystem storage: create root directory %q: %w", abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("filesystem storage: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("filesystem storage: root %q is not a directory", abs)
	}
	return &Filesystem{root: abs}, nil
}

// Location returns the absolute root directory.
func (f *Filesystem) Location() string { return f.root }

func (f *Filesystem) path(key string) string {
	return filepath.Join(f.root, filepath.FromSlash(key))
}

// Put stores r under key atomically (temp file, fsync, rename, fsync of the
// directory). size is the expected length in bytes or -1; when size >= 0 and
// r yields a different number of bytes, Put fails and stores nothing. On any
// error, including ctx cancellation while reading r, the temporary file is
// removed and an existing object under key is left unchanged. Under a
// context of WithDeferredDirSyncs the directory fsyncs (of the key's
// directory and of the parents of directories it creates) are left to
// DirSyncs.Sync.
func (f *Filesystem) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	deferred := deferredDirSyncs(ctx)
	tmp, err := f.writeTemp(ctx, key, r, size, deferred)
	if err != nil {
		return err
	}
	dst := f.path(key)
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put %q: %w", key, err)
	}
	if deferred != nil {
		deferred.add(filepath.Dir(dst))
		return nil
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// PutIfAbsent stores data under key only if no object exists there: it
// writes and fsyncs a temporary file and hard-links it to the key, which
// fails atomically if the key exists (ErrExists). This is atomic across
// processes on local filesystems; on network filesystems it is as atomic as
// their link(2).
func (f *Filesystem) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	tmp, err := f.writeTemp(ctx, key, strings.NewReader(string(data)), int64(len(data)), nil)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	dst := f.path(key)
	if err := os.Link(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("put-if-absent %q: %w", key, ErrExists)
		}
		return fmt.Errorf("put-if-absent %q: %w", key, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("put-if-absent %q: %w", key, err)
	}
	return nil
}

// writeTemp copies r into a new fsynced temporary file in key's directory
// and returns its path. On error nothing is left behind. Directories it
// creates have their parents' fsyncs deferred to deferred (nil: done at
// once).
func (f *Filesystem) writeTemp(ctx context.Context, key string, r io.Reader, size int64, deferred *DirSyncs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("put %q: %w", key, err)
	}
	dir := filepath.Dir(f.path(key))
	var file *os.File
	// A concurrent Delete may remove the (empty) directory between creating
	// it and creating the temp file in it; try again a few times.
	for attempt := 0; ; attempt++ {
		if err := f.mkdirAll(dir, deferred); err != nil {
			return "", fmt.Errorf("put %q: %w", key, err)
		}
		var err error
		file, err = os.CreateTemp(dir, TempPrefix+"*")
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return "", fmt.Errorf("put %q: %w", key, err)
		}
	}
	tmp := file.Name()
	fail := func(err error) (string, error) {
		file.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("put %q: %w", key, err)
	}
	if _, err := io.Copy(file, checkedReader(ctx, r, size)); err != nil {
		return fail(err)
	}
	if err := file.Sync(); err != nil {
		return fail(err)
	}
	if err := file.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("put %q: %w", key, err)
	}
	return tmp, nil
}

// mkdirAll creates dir and missing parents below the root, fsyncing each
// parent after creating a child so the new entries survive a crash (or
// leaving that fsync to deferred when it is not nil).
func (f *Filesystem) mkdirAll(dir string, deferred *DirSyncs) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory (is a key also used as a directory?)", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) || dir == f.root || len(dir) < len(f.root) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := f.mkdirAll(parent, deferred); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if deferred != nil {
		deferred.add(parent)
		return nil
	}
	return syncDir(parent)
}

// Get opens the object's file. It returns ErrNotFound if there is no object
// under key (including when key names a directory of other keys), and
// ErrNotRegular when key names a FIFO, socket, device or empty directory
// (the type is checked before the file is opened, and opened without
// blocking, so that a FIFO never blocks the read).
func (f *Filesystem) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	p := f.path(key)
	if err := checkRegular(p); err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	file, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, mapFSErr(err))
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() { // replaced between the check and the open
		file.Close()
		return nil, fmt.Errorf("get %q: %w (%s)", key, ErrNotRegular, fi.Mode().Type())
	}
	return file, nil
}

// checkRegular returns nil when p is a regular file, ErrNotFound (wrapped)
// when nothing is there or p is a directory holding entries (a
// "directory" of other keys), and ErrNotRegular (wrapped, naming the
// type) for a FIFO, socket, device or empty directory.
func checkRegular(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return mapFSErr(err)
	}
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		entries, err := os.ReadDir(p)
		if err != nil {
			return mapFSErr(err)
		}
		if len(entries) > 0 {
			return ErrNotFound
		}
		return fmt.Errorf("%w (an empty directory)", ErrNotRegular)
	default:
		return fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
}

// Stat returns the file's size and modification time, ErrNotFound, or
// ErrNotRegular as Get does.
func (f *Filesystem) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %q: %w", key, err)
	}
	p := f.path(key)
	if err := checkRegular(p); err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %q: %w", key, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %q: %w", key, mapFSErr(err))
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete removes the object's file and then any directories left empty
// between it and the root. Deleting an absent key returns nil.
func (f *Filesystem) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	p := f.path(key)
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(mapFSErr(err), ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a "directory" of other keys is not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	// Best effort: remove now-empty parent directories so that the key
	// space behaves like S3's (no leftover "directories").
	for dir := filepath.Dir(p); dir != f.root && len(dir) > len(f.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// List calls fn for every object whose key starts with prefix, in
// lexicographic (byte-wise) key order, the same order as S3. Temporary
// files are skipped. Entries that are not regular files (a FIFO, socket,
// device or empty directory) are listed too, with size 0, so that a
// reader meets them and Get's ErrNotRegular names them as damage. It reads one directory at a time and only descends
// into directories that can hold matching keys. Objects written or deleted
// during the listing may or may not be seen.
func (f *Filesystem) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	return f.walk(ctx, f.root, "", prefix, fn)
}

func (f *Filesystem) walk(ctx context.Context, dir, dirKey, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && dir != f.root {
			return nil // removed by a concurrent Delete
		}
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	type entry struct {
		name string
		sort string // name, plus "/" for directories: gives byte-wise key order
		dir  bool
	}
	list := make([]entry, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, TempPrefix) {
			continue
		}
		isDir := e.IsDir()
		if isDir && emptyDir(filepath.Join(dir, name)) {
			// Listed as an entry whose Get fails with ErrNotRegular:
			// no Put makes one, so it is damage, never absence.
			isDir = false
		}
		s := name
		if isDir {
			s += "/"
		}
		list = append(list, entry{name: name, sort: s, dir: isDir})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].sort < list[j].sort })
	for _, e := range list {
		key := dirKey + e.sort
		if e.dir {
			// Descend only if keys under key can match prefix.
			if strings.HasPrefix(key, prefix) || strings.HasPrefix(prefix, key) {
				if err := f.walk(ctx, filepath.Join(dir, e.name), key, prefix, fn); err != nil {
					return err
				}
			}
			continue
		}
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed by a concurrent Delete
			}
			return fmt.Errorf("list %q: %w", prefix, err)
		}
		size := fi.Size()
		if !fi.Mode().IsRegular() {
			size = 0
		}
		if err := fn(ObjectInfo{Key: key, Size: size, ModTime: fi.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// RemoveStaleTemps removes temporary files (TempPrefix) older than olderThan
// left behind by crashed or killed writers below the key prefix dir (a
// directory key such as "segments", or "" for the whole root), and returns
// how many it removed. Use an age well above the longest expected Put (e.g.
// one hour) so files of running writers are kept, unless the caller knows
// no writer is active below dir (e.g. it holds a lock that every writer
// there takes first).
func (f *Filesystem) RemoveStaleTemps(ctx context.Context, dir string, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	n := 0
	start := f.root
	if dir != "" {
		if err := ValidateKey(dir); err != nil {
			return 0, err
		}
		start = filepath.Join(f.root, filepath.FromSlash(dir))
	}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(p); err == nil {
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("remove stale temporary files under %s: %w", f.root, err)
	}
	return n, nil
}

// emptyDir reports whether p is a directory with no entries at all
// (temporary files count as entries: a Put in progress made the
// directory).
func emptyDir(p string) bool {
	d, err := os.Open(p)
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// mapFSErr turns "no such file" and "not a directory" (a key below an
// object, e.g. "a/b" when "a" is an object) into ErrNotFound.
func mapFSErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w (%v)", ErrNotFound, err)
	}
	return err
}

// dirSynced, when set by a test (storage.CountDirSyncs), is called with
// every directory syncDir fsyncs.
var dirSynced func(dir string)

// syncDir fsyncs a directory so that entries created, renamed or removed
// in it are durable.
func syncDir(dir string) error {
	if dirSynced != nil {
		dirSynced(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && (errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)) {
		return nil // some filesystems cannot fsync directories
	}
	return err
}
