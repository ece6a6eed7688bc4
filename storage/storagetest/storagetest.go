// Package storagetest is the conformance suite for storage.Backend: every
// backend (local directory, S3 on a real S3-compatible server, wrappers) runs
// the same table-driven tests, so code tested against one backend behaves
// the same on the others (kopia's blobtesting and restic's backend/test are
// the models).
//
// Usage, in a backend's _test.go:
//
//	func TestFilesystemConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Backend {
//			b, err := storage.NewFilesystem(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		})
//	}
//
// newBackend must return an empty backend, isolated from other calls; it is
// called once per subtest. Subtests run sequentially (not t.Parallel), so
// newBackend may rely on t.Setenv in the parent test.
package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// BigSize is the size in bytes of the suite's large objects: 13 MiB + 7,
// above the S3 backend's default part size (8 MiB) and minimum part size
// (5 MiB), so S3 Puts of it use a multipart upload.
const BigSize = 13<<20 + 7

// Content returns n deterministic pseudo-random bytes derived from seed
// (ChaCha8, whose output the Go project keeps stable). Equal arguments give
// byte-identical content in every run and on every platform.
func Content(seed string, n int) []byte {
	var s [32]byte
	copy(s[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// ContentSHA256 pins the SHA-256 of Content("conformance", BigSize). A
// backend passes the "Content" subtest only if it returns exactly these
// bytes, so all backends return byte-identical content (field case 24 A4,
// docs/DOMAIN.md#field-case-24).
const ContentSHA256 = "6fa16c7146fd670f7e3cc921a1c7e2930e11556f5faa2d7ae9031133888449e5"

// subtest is one case of the conformance suite. writes marks the cases
// that test writes themselves (PutIfAbsent, failing and cancelled Puts):
// RunReadOnly leaves them out, as it stores through the wrapped backend.
type subtest struct {
	name   string
	fn     func(t *testing.T, b storage.Backend)
	writes bool
}

// subtests is the conformance suite, in the order it runs.
var subtests = []subtest{
	{"PutGetRoundTrip", testPutGet, false},
	{"Overwrite", testOverwrite, false},
	{"Missing", testMissing, false},
	{"Delete", testDelete, false},
	{"ListOrderAndPrefix", testListOrder, false},
	{"ListStopsOnCallbackError", testListStop, false},
	{"ListPaginatesBeyond1000Keys", testListMany, false},
	{"PutIfAbsent", testPutIfAbsent, true},
	{"PutIfAbsentConcurrentOneWinner", testPutIfAbsentConcurrent, true},
	{"PutFailingReaderLeavesNothing", testPutFailingReader, true},
	{"PutSizeMismatchLeavesNothing", testPutSizeMismatch, true},
	{"PutCancelledLeavesNothing", testPutCancelled, true},
	{"InvalidKeysRejected", testInvalidKeys, false},
	{"ContentByteIdentical", testContent, false},
	{"Location", testLocation, false},
}

// Run runs the conformance suite against the backends newBackend returns.
func Run(t *testing.T, newBackend func(t *testing.T) storage.Backend) {
	t.Helper()
	for _, tt := range subtests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newBackend(t))
		})
	}
}

// RunStoredSize is Run for a wrapper that stores an object of n bytes as
// storedSize(n) bytes (storage.Encrypt: storage.EncryptedSize), the size
// its Stat and List report; every other rule of the suite is the same.
func RunStoredSize(t *testing.T, storedSize func(n int64) int64, newBackend func(t *testing.T) storage.Backend) {
	t.Helper()
	for _, tt := range subtests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, sized{newBackend(t), storedSize})
		})
	}
}

// sized carries RunStoredSize's storedSize to the subtests.
type sized struct {
	storage.Backend
	storedSize func(int64) int64
}

// stored is the size b's Stat and List report for an object of n bytes.
func stored(b storage.Backend, n int) int64 {
	if s, ok := b.(sized); ok {
		return s.storedSize(int64(n))
	}
	return int64(n)
}

// streamOnly hides every method but Read (no Seek, ReadAt, WriterTo, Len),
// as a pipe or a compressor would.
type streamOnly struct{ r io.Reader }

func (s streamOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

func testPutGet(t *testing.T, b storage.Backend) {
	big := Content("big", BigSize)
	tests := []struct {
		name string
		key  string
		data []byte
		size int64 // size passed to Put: len(data) or -1
	}{
		{"empty object", "empty", nil, 0},
		{"empty object unknown size", "empty-stream", nil, -1},
		{"one byte", "one", []byte{42}, 1},
		{"small with unknown size", "dir/small", Content("small", 1000), -1},
		{"nested key", "backups/2024/topics/t/partition=0/00000000000000000000.seg", Content("seg", 4096), 4096},
		{"big streamed with unknown size", "big-stream", big, -1},
		{"big with known size", "big-known", big, int64(len(big))},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := b.Put(ctx, tt.key, streamOnly{bytes.NewReader(tt.data)}, tt.size); err != nil {
				t.Fatalf("Put(%q, %d bytes, size %d): %v", tt.key, len(tt.data), tt.size, err)
			}
			assertContent(t, b, tt.key, tt.data)
			info, err := b.Stat(ctx, tt.key)
			if err != nil {
				t.Fatalf("Stat(%q): %v", tt.key, err)
			}
			if info.Size != stored(b, len(tt.data)) || info.Key != tt.key {
				t.Errorf("Stat(%q) = key %q size %d, want key %q size %d", tt.key, info.Key, info.Size, tt.key, stored(b, len(tt.data)))
			}
			if info.ModTime.IsZero() {
				t.Errorf("Stat(%q).ModTime is zero", tt.key)
			}
			listed := listAll(t, b, tt.key)
			if len(listed) != 1 || listed[0].Key != tt.key || listed[0].Size != stored(b, len(tt.data)) {
				t.Errorf("List(%q) = %v, want just %q with size %d", tt.key, listed, tt.key, stored(b, len(tt.data)))
			}
		})
	}
}

func testOverwrite(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	first, second := Content("first", 3000), Content("second", 1200)
	put(t, b, "obj", first)
	put(t, b, "obj", second)
	assertContent(t, b, "obj", second)
	info, err := b.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != stored(b, len(second)) {
		t.Errorf("Stat size after overwrite = %d, want %d", info.Size, stored(b, len(second)))
	}
	if keys := listKeys(t, b, ""); !slices.Equal(keys, []string{"obj"}) {
		t.Errorf("List after overwrite = %q, want [obj]", keys)
	}
}

func testMissing(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "present", []byte("x"))
	for _, key := range []string{"absent", "dir/absent", "present/below-an-object", "presen"} {
		if rc, err := b.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("Get(%q) error = %v, want ErrNotFound", key, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Stat(%q) error = %v, want ErrNotFound", key, err)
		}
	}
}

func testDelete(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if err := b.Delete(ctx, "never-existed"); err != nil {
		t.Errorf("Delete of an absent key = %v, want nil", err)
	}
	if err := b.Delete(ctx, "no/such/dir/key"); err != nil {
		t.Errorf("Delete of an absent nested key = %v, want nil", err)
	}
	put(t, b, "a/b/c", []byte("abc"))
	put(t, b, "a/keep", []byte("keep"))
	if err := b.Delete(ctx, "a/b/c"); err != nil {
		t.Fatalf("Delete(a/b/c): %v", err)
	}
	if _, err := b.Stat(ctx, "a/b/c"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, "a/b/c"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if keys := listKeys(t, b, ""); !slices.Equal(keys, []string{"a/keep"}) {
		t.Errorf("List after Delete = %q, want [a/keep]", keys)
	}
	// The key space must be reusable after a Delete: "a/b" was a
	// "directory" of a/b/c and now becomes an object.
	put(t, b, "a/b", []byte("now an object"))
	assertContent(t, b, "a/b", []byte("now an object"))
}

func testListOrder(t *testing.T, b storage.Backend) {
	// Byte-wise order differs from a naive directory walk: '-' (0x2d) and
	// '.' (0x2e) sort before '/' (0x2f), '0' (0x30) after it.
	keys := []string{"dir/b/c", "dir-x", "dir/a", "dir0", "dir/b-c", "dir.y", "dir/b/d/e", "e", "dir/b0", "Z", "dir/a.txt"}
	for i, k := range keys {
		put(t, b, k, Content(k, i))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	tests := []struct {
		prefix string
	}{{""}, {"dir"}, {"dir/"}, {"dir/b"}, {"dir/b/"}, {"dir/a"}, {"e"}, {"nothing"}, {"dir/b/d/e"}, {"dir/b/d/e/"}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("prefix %q", tt.prefix), func(t *testing.T) {
			var want []string
			for _, k := range sorted {
				if strings.HasPrefix(k, tt.prefix) {
					want = append(want, k)
				}
			}
			got := listAll(t, b, tt.prefix)
			var gotKeys []string
			for _, info := range got {
				gotKeys = append(gotKeys, info.Key)
				if wantSize := stored(b, slices.Index(keys, info.Key)); info.Size != wantSize {
					t.Errorf("List(%q): %q has size %d, want %d", tt.prefix, info.Key, info.Size, wantSize)
				}
			}
			if !slices.Equal(gotKeys, want) {
				t.Errorf("List(%q) = %q, want %q", tt.prefix, gotKeys, want)
			}
		})
	}
}

func testListStop(t *testing.T, b storage.Backend) {
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		put(t, b, k, []byte(k))
	}
	stop := errors.New("enough")
	var seen []string
	err := b.List(context.Background(), "", func(info storage.ObjectInfo) error {
		seen = append(seen, info.Key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("List error = %v, want the callback's error", err)
	}
	if !slices.Equal(seen, []string{"k1", "k2"}) {
		t.Errorf("List called fn for %q, want [k1 k2] and then stop", seen)
	}
}

func testListMany(t *testing.T, b storage.Backend) {
	const n = 1037 // more than one 1000-key S3 page
	keys := make([]string, n)
	for i := range keys {
		// Unpadded numbers, so lexicographic order differs from numeric.
		keys[i] = fmt.Sprintf("many/seg-%d", i)
	}
	parallel(t, 16, len(keys), func(i int) error {
		return b.Put(context.Background(), keys[i], bytes.NewReader([]byte{byte(i)}), 1)
	})
	put(t, b, "many-not-in-prefix", []byte("x"))
	put(t, b, "mana", []byte("x"))
	slices.Sort(keys)
	got := listKeys(t, b, "many/")
	if len(got) != n {
		t.Fatalf("List(many/) returned %d keys, want %d (pagination stopped early?)", len(got), n)
	}
	if !slices.Equal(got, keys) {
		t.Errorf("List(many/) keys differ from the %d keys written, or are out of order", n)
	}
	if all := listKeys(t, b, ""); len(all) != n+2 {
		t.Errorf("List(\"\") returned %d keys, want %d", len(all), n+2)
	}
}

func testPutIfAbsent(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if err := b.PutIfAbsent(ctx, "locks/lock", []byte("first")); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	if err := b.PutIfAbsent(ctx, "locks/lock", []byte("second")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrExists", err)
	}
	assertContent(t, b, "locks/lock", []byte("first"))
	put(t, b, "plain", []byte("by Put"))
	if err := b.PutIfAbsent(ctx, "plain", []byte("x")); !errors.Is(err, storage.ErrExists) {
		t.Errorf("PutIfAbsent over a Put object = %v, want ErrExists", err)
	}
	if err := b.PutIfAbsent(ctx, "empty-lock", nil); err != nil {
		t.Errorf("PutIfAbsent of empty data: %v", err)
	}
	assertContent(t, b, "empty-lock", nil)
	if err := b.Delete(ctx, "locks/lock"); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIfAbsent(ctx, "locks/lock", []byte("after delete")); err != nil {
		t.Errorf("PutIfAbsent after Delete: %v", err)
	}
	if keys := listKeys(t, b, ""); !slices.Equal(keys, []string{"empty-lock", "locks/lock", "plain"}) {
		t.Errorf("List = %q: leftovers from PutIfAbsent?", keys)
	}
}

func testPutIfAbsentConcurrent(t *testing.T, b storage.Backend) {
	const writers = 8
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("lock-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, writers)
		start := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = b.PutIfAbsent(context.Background(), key, []byte(fmt.Sprintf("writer %d", i)))
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%s: writers %d and %d both won", key, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, storage.ErrExists):
				t.Errorf("%s: writer %d: %v, want nil or ErrExists", key, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no writer won: %v", key, errs)
		}
		assertContent(t, b, key, []byte(fmt.Sprintf("writer %d", winner)))
	}
}

// failingReader yields data[:failAfter] and then fails with err.
type failingReader struct {
	data      []byte
	failAfter int
	err       error
	off       int
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.off >= r.failAfter {
		return 0, r.err
	}
	n := copy(p, r.data[r.off:r.failAfter])
	r.off += n
	return n, nil
}

var errBoom = errors.New("storagetest: reader failed on purpose")

func testPutFailingReader(t *testing.T, b storage.Backend) {
	old := []byte("old content stays")
	tests := []struct {
		name      string
		key       string
		existing  []byte // object stored before the failing Put, nil for none
		total     int
		failAfter int
		size      int64
	}{
		{"new key, fails at once", "new-0", nil, 1000, 0, -1},
		{"new key, small object fails midway", "new-small", nil, 1000, 500, -1},
		{"new key, small object with size fails midway", "new-small-sized", nil, 1000, 500, 1000},
		{"new key, big object fails after the first part", "new-big", nil, BigSize, 9 << 20, -1},
		{"new key, big object with size fails after the first part", "new-big-sized", nil, BigSize, 9 << 20, BigSize},
		{"existing key, small object", "old-small", old, 1000, 500, -1},
		{"existing key, big object", "old-big", old, BigSize, 9 << 20, -1},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.existing != nil {
				put(t, b, tt.key, tt.existing)
			}
			r := &failingReader{data: Content(tt.key, tt.total), failAfter: tt.failAfter, err: errBoom}
			err := b.Put(ctx, tt.key, r, tt.size)
			if !errors.Is(err, errBoom) {
				t.Fatalf("Put with a failing reader = %v, want an error wrapping the reader's", err)
			}
			if tt.existing == nil {
				assertAbsent(t, b, tt.key)
			} else {
				assertContent(t, b, tt.key, tt.existing)
			}
		})
	}
}

func testPutSizeMismatch(t *testing.T, b storage.Backend) {
	tests := []struct {
		name string
		data []byte
		size int64
	}{
		{"reader shorter than size", Content("short", 5), 10},
		{"reader longer than size", Content("long", 10), 5},
		{"empty reader with size", nil, 1},
		{"big reader shorter than size", Content("bigshort", BigSize), BigSize + 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("mismatch-%d", i)
			if err := b.Put(context.Background(), key, streamOnly{bytes.NewReader(tt.data)}, tt.size); err == nil {
				t.Fatalf("Put of %d bytes declared as %d succeeded, want an error", len(tt.data), tt.size)
			}
			assertAbsent(t, b, key)
		})
	}
}

// cancellingReader yields data and calls cancel once cancelAfter bytes
// have been read; it keeps yielding data, so only the ctx check stops Put.
type cancellingReader struct {
	data        []byte
	cancelAfter int
	cancel      context.CancelFunc
	off         int
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.off >= r.cancelAfter {
		r.cancel()
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	end := min(len(r.data), r.off+len(p))
	if r.off < r.cancelAfter {
		end = min(end, r.cancelAfter)
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}

func testPutCancelled(t *testing.T, b storage.Backend) {
	tests := []struct {
		name        string
		total       int
		cancelAfter int // -1: cancelled before Put starts
		existing    []byte
	}{
		{"cancelled before Put", 1000, -1, nil},
		{"cancelled while reading a small object", 1000, 100, nil},
		{"cancelled while reading a big object", BigSize, 9 << 20, nil},
		{"cancelled over an existing object", BigSize, 9 << 20, []byte("old")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("cancel-%d", i)
			if tt.existing != nil {
				put(t, b, key, tt.existing)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &cancellingReader{data: Content(key, tt.total), cancelAfter: tt.cancelAfter, cancel: cancel}
			if tt.cancelAfter < 0 {
				cancel()
			}
			err := b.Put(ctx, key, r, -1)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Put = %v, want an error wrapping context.Canceled", err)
			}
			if tt.existing == nil {
				assertAbsent(t, b, key)
			} else {
				assertContent(t, b, key, tt.existing)
			}
		})
	}
}

func testInvalidKeys(t *testing.T, b storage.Backend) {
	keys := []string{
		"", "/abs", "trailing/", "a//b", ".", "..", "a/./b", "a/../b", "../escape", "a/..",
		`back\slash`, "nul\x00byte", "a/" + storage.TempPrefix + "x", strings.Repeat("k", 1025),
	}
	ctx := context.Background()
	for _, key := range keys {
		t.Run(fmt.Sprintf("%.40q", key), func(t *testing.T) {
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, storage.ErrInvalidKey) {
					t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, key, err)
				} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
					t.Errorf("%s(%q) error %q does not name the key", op, key, err)
				}
			}
			check("Put", b.Put(ctx, key, strings.NewReader("x"), 1))
			check("PutIfAbsent", b.PutIfAbsent(ctx, key, []byte("x")))
			rc, err := b.Get(ctx, key)
			if err == nil {
				rc.Close()
			}
			check("Get", err)
			_, err = b.Stat(ctx, key)
			check("Stat", err)
			check("Delete", b.Delete(ctx, key))
		})
	}
	if keys := listKeys(t, b, ""); len(keys) != 0 {
		t.Errorf("invalid keys stored objects: %q", keys)
	}
	for _, prefix := range []string{"/", "/abs", "a//", "../", `a\`} {
		if err := b.List(ctx, prefix, func(storage.ObjectInfo) error { return nil }); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("List(%q) = %v, want ErrInvalidKey", prefix, err)
		}
	}
}

func testContent(t *testing.T, b storage.Backend) {
	data := Content("conformance", BigSize)
	if got := sha256Hex(data); got != ContentSHA256 {
		t.Fatalf("Content generator changed: SHA-256 %s, pinned %s", got, ContentSHA256)
	}
	put(t, b, "content/segment", data)
	rc, err := b.Get(context.Background(), "content/segment")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatalf("read content/segment: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ContentSHA256 {
		t.Errorf("SHA-256 of stored content = %s, want %s", got, ContentSHA256)
	}
}

func testLocation(t *testing.T, b storage.Backend) {
	if b.Location() == "" {
		t.Error("Location() is empty")
	}
}

// put stores data under key or fails the test.
func put(t *testing.T, b storage.Backend, key string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// assertContent checks that Get(key) returns exactly want.
func assertContent(t *testing.T, b storage.Backend, key string, want []byte) {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) returned %d bytes (SHA-256 %.12s), want %d bytes (SHA-256 %.12s)",
			key, len(got), sha256Hex(got), len(want), sha256Hex(want))
	}
}

// assertAbsent checks that key is neither readable nor listed, and that
// nothing at all is listed under it (no partial or temporary objects).
func assertAbsent(t *testing.T, b storage.Backend, key string) {
	t.Helper()
	if _, err := b.Stat(context.Background(), key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
	}
	if infos := listAll(t, b, ""); slices.ContainsFunc(infos, func(i storage.ObjectInfo) bool { return strings.HasPrefix(i.Key, key) }) {
		t.Errorf("List shows leftovers of %q: %v", key, infos)
	}
}

func listAll(t *testing.T, b storage.Backend, prefix string) []storage.ObjectInfo {
	t.Helper()
	var out []storage.ObjectInfo
	err := b.List(context.Background(), prefix, func(info storage.ObjectInfo) error {
		out = append(out, info)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return out
}

func listKeys(t *testing.T, b storage.Backend, prefix string) []string {
	t.Helper()
	var keys []string
	for _, info := range listAll(t, b, prefix) {
		keys = append(keys, info.Key)
	}
	return keys
}

// parallel runs fn(0..n-1) on workers goroutines and fails on the first error.
func parallel(t *testing.T, workers, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
