package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// RunReadOnly runs the conformance suite's read subtests against a
// read-only wrapper, and checks that it refuses every write and writes
// nothing. newBackends returns an empty, isolated backend rw and the
// wrapper ro around it (storage.ReadOnly(rw, command)); it is called once
// per subtest.
//
// In the read subtests (Get, Stat, List, Location: round trips, overwrites,
// missing keys, listing order and pages, key validation, byte-identical
// content) the suite writes through rw and reads through ro, so ro must
// return exactly what rw stored. In "WritesRefused" every write through ro
// (Put of a new and of an existing key, known and unknown size, PutIfAbsent,
// Delete, and the optional maintenance writes) must fail with an error
// wrapping storage.ErrReadOnly that names the key and command, must not read
// the Put's body, and rw must hold afterwards exactly the objects it held
// before, byte for byte.
func RunReadOnly(t *testing.T, command string, newBackends func(t *testing.T) (rw, ro storage.Backend)) {
	t.Helper()
	for _, tt := range subtests {
		if tt.writes {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			rw, ro := newBackends(t)
			if ro.Location() != rw.Location() {
				t.Errorf("read-only Location() = %q, want the wrapped backend's %q", ro.Location(), rw.Location())
			}
			tt.fn(t, writeThrough{Backend: ro, rw: rw})
		})
	}
	t.Run("WritesRefused", func(t *testing.T) {
		rw, ro := newBackends(t)
		testWritesRefused(t, command, rw, ro)
	})
}

// writeThrough is a read-only backend whose writes go to the backend it
// wraps: the read subtests store their objects through rw and check them
// through the read-only wrapper.
type writeThrough struct {
	storage.Backend // the read-only wrapper: Get, Stat, List, Location
	rw              storage.Backend
}

func (w writeThrough) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return w.rw.Put(ctx, key, r, size)
}

func (w writeThrough) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return w.rw.PutIfAbsent(ctx, key, data)
}

func (w writeThrough) Delete(ctx context.Context, key string) error {
	return w.rw.Delete(ctx, key)
}

// unreadBody fails the test when a refused Put reads its body.
type unreadBody struct{ t *testing.T }

func (u unreadBody) Read([]byte) (int, error) {
	u.t.Error("a refused Put read its body")
	return 0, io.EOF
}

func testWritesRefused(t *testing.T, command string, rw, ro storage.Backend) {
	ctx := context.Background()
	seed := map[string][]byte{
		"backups/20240101T000000Z-aaaa/manifest.json": Content("manifest", 700),
		"segments/t/0/00000000000000000000.seg":       Content("segment", 5000),
		"lock":                                        []byte("held by someone else"),
	}
	for k, v := range seed {
		put(t, rw, k, v)
	}
	before := listAll(t, rw, "")

	check := func(op, key string, err error) {
		t.Helper()
		switch {
		case !errors.Is(err, storage.ErrReadOnly):
			t.Errorf("%s(%q) through the read-only wrapper = %v, want ErrReadOnly", op, key, err)
		case !strings.Contains(err.Error(), fmt.Sprintf("%q", key)):
			t.Errorf("%s(%q): error %q does not name the key", op, key, err)
		case !strings.Contains(err.Error(), command):
			t.Errorf("%s(%q): error %q does not name the command %q", op, key, err, command)
		}
	}
	for _, tt := range []struct {
		key  string
		size int64
	}{
		{"backups/20240101T000000Z-aaaa/manifest.json", 700}, // replace
		{"segments/t/0/00000000000000000000.seg", -1},        // replace, streamed
		{"new/object", 3},
		{"new/big", int64(BigSize)},
		{"new/streamed", -1},
	} {
		check("Put", tt.key, ro.Put(ctx, tt.key, unreadBody{t}, tt.size))
	}
	for _, key := range []string{"lock", "new/lock"} {
		check("PutIfAbsent", key, ro.PutIfAbsent(ctx, key, []byte("mine")))
	}
	for _, key := range []string{"lock", "segments/t/0/00000000000000000000.seg", "never-existed"} {
		check("Delete", key, ro.Delete(ctx, key))
	}
	// The optional maintenance writes a backup runs through type
	// assertions must be refused too, not silently absent.
	if a, ok := ro.(interface {
		AbortStaleUploads(context.Context, time.Duration) (int, error)
	}); !ok {
		t.Error("the read-only wrapper has no AbortStaleUploads: a caller's type assertion would silently skip a write instead of being refused")
	} else if n, err := a.AbortStaleUploads(ctx, 0); n != 0 || !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("AbortStaleUploads = %d, %v; want 0, ErrReadOnly", n, err)
	}
	if c, ok := ro.(interface {
		RemoveStaleTemps(context.Context, string, time.Duration) (int, error)
	}); !ok {
		t.Error("the read-only wrapper has no RemoveStaleTemps: a caller's type assertion would silently skip a write instead of being refused")
	} else {
		n, err := c.RemoveStaleTemps(ctx, "segments", 0)
		if n != 0 {
			t.Errorf("RemoveStaleTemps = %d, want 0", n)
		}
		check("RemoveStaleTemps", "segments", err)
	}
	if c, ok := ro.(interface {
		CheckConditionalWrites(context.Context, string) error
	}); !ok {
		t.Error("the read-only wrapper has no CheckConditionalWrites: a caller's type assertion would silently skip a write instead of being refused")
	} else {
		check("CheckConditionalWrites", "probe", c.CheckConditionalWrites(ctx, "probe"))
	}

	after := listAll(t, rw, "")
	if !slices.Equal(keysOf(before), keysOf(after)) {
		t.Errorf("objects after the refused writes = %q, want the %q that were there", keysOf(after), keysOf(before))
	}
	for k, want := range seed {
		rc, err := rw.Get(ctx, k)
		if err != nil {
			t.Errorf("Get(%q) after the refused writes: %v", k, err)
			continue
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q after the refused writes: %d bytes (err %v), want the %d bytes stored before", k, len(got), err, len(want))
		}
	}
	// Reads through the wrapper still work after the refusals.
	assertContent(t, ro, "lock", seed["lock"])
}

func keysOf(infos []storage.ObjectInfo) []string {
	out := make([]string, 0, len(infos))
	for _, i := range infos {
		out = append(out, i.Key)
	}
	return out
}
