package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

// newKey returns a fresh random repository key.
func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, storage.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// ring returns a keyring of keys, the first the primary.
func ring(t testing.TB, keys ...[]byte) *storage.Keyring {
	t.Helper()
	r := &storage.Keyring{}
	for _, k := range keys {
		if err := r.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func newDir(t testing.TB) (*storage.Filesystem, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	b, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func TestEncryptedFilesystemConformance(t *testing.T) {
	key := newKey(t)
	storagetest.RunStoredSize(t, storage.EncryptedSize, func(t *testing.T) storage.Backend {
		b, _ := newDir(t)
		return storage.Encrypt(b, ring(t, key), nil)
	})
}

func TestEncryptedS3Conformance(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	key := newKey(t)
	storagetest.RunStoredSize(t, storage.EncryptedSize, func(t *testing.T) storage.Backend {
		return storage.Encrypt(newTestS3(t, srv, storage.S3Options{}), ring(t, key), nil)
	})
}

// Every size around the chunk boundaries round-trips, is stored as
// EncryptedSize says (known or unknown size), and is stored sealed: the
// raw object holds none of the plaintext.
func TestEncryptRoundTrip(t *testing.T) {
	const c = storage.EnvelopeChunkSize
	b, _ := newDir(t)
	e := storage.Encrypt(b, ring(t, newKey(t)), nil)
	ctx := context.Background()
	for _, n := range []int{0, 1, 15, 16, c - 1, c, c + 1, 2 * c, 3*c + 17} {
		for _, size := range []int64{int64(n), -1} {
			data := bytes.Repeat([]byte("order-4711 "), n/11+1)[:n]
			key := "segments/x/orders/0/" + strings.Repeat("0", 19) + "1.kseg"
			if err := e.Put(ctx, key, bytes.NewReader(data), size); err != nil {
				t.Fatalf("put %d bytes (size %d): %v", n, size, err)
			}
			if got := getAll(t, e, key); !bytes.Equal(got, data) {
				t.Fatalf("%d bytes: read back %d bytes that differ", n, len(got))
			}
			info, err := b.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != storage.EncryptedSize(int64(n)) {
				t.Errorf("%d bytes: stored %d bytes, EncryptedSize says %d", n, info.Size, storage.EncryptedSize(int64(n)))
			}
			raw := getAll(t, b, key)
			if !bytes.HasPrefix(raw, []byte(storage.EnvelopeMagic)) {
				t.Errorf("%d bytes: the stored object does not begin with the envelope magic", n)
			}
			if n >= 11 && bytes.Contains(raw, []byte("order-4711")) {
				t.Errorf("%d bytes: the stored object holds the plaintext", n)
			}
		}
	}
}

func getAll(t testing.TB, b storage.Backend, key string) []byte {
	t.Helper()
	data, err := readEnc(b, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return data
}

func readEnc(b storage.Backend, key string) ([]byte, error) {
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// A stored object changed in any way fails to open, naming the object,
// and wraps ErrCorrupt (a changed key id: the *KeyError of a key not
// configured); no plaintext of a chunk that does not authenticate is
// returned.
func TestEncryptDetectsTampering(t *testing.T) {
	const c = storage.EnvelopeChunkSize
	const h = storage.EnvelopeHeaderSize
	sealed := c + 16
	data := bytes.Repeat([]byte{'r'}, 3*c+100)
	tests := []struct {
		name   string
		change func(raw, other []byte) []byte
		noKey  bool // the key id was changed: ErrNoKey, not ErrCorrupt
	}{
		{"a byte of the first chunk flipped", func(raw, _ []byte) []byte { raw[h+5] ^= 1; return raw }, false},
		{"a byte of the last chunk flipped", func(raw, _ []byte) []byte { raw[len(raw)-20] ^= 0x80; return raw }, false},
		{"a tag byte flipped", func(raw, _ []byte) []byte { raw[len(raw)-1] ^= 1; return raw }, false},
		{"the salt changed", func(raw, _ []byte) []byte { raw[h-12] ^= 1; return raw }, false},
		{"the nonce prefix changed", func(raw, _ []byte) []byte { raw[h-1] ^= 1; return raw }, false},
		{"the version changed", func(raw, _ []byte) []byte { raw[8] = 2; return raw }, false},
		{"the algorithm changed", func(raw, _ []byte) []byte { raw[9] = 7; return raw }, false},
		{"the key id changed", func(raw, _ []byte) []byte { raw[10] ^= 1; return raw }, true},
		{"truncated inside the header", func(raw, _ []byte) []byte { return raw[:h-3] }, false},
		{"only the header", func(raw, _ []byte) []byte { return raw[:h] }, false},
		{"truncated at a chunk boundary", func(raw, _ []byte) []byte { return raw[:h+2*sealed] }, false},
		{"truncated inside a chunk", func(raw, _ []byte) []byte { return raw[:h+sealed+100] }, false},
		{"the last chunk dropped", func(raw, _ []byte) []byte { return raw[:h+3*sealed] }, false},
		{"one byte appended", func(raw, _ []byte) []byte { return append(raw, 0) }, false},
		{"a chunk appended again", func(raw, _ []byte) []byte { return append(raw, raw[h:h+sealed]...) }, false},
		{"two chunks swapped", func(raw, _ []byte) []byte {
			out := append([]byte{}, raw[:h]...)
			out = append(out, raw[h+sealed:h+2*sealed]...)
			out = append(out, raw[h:h+sealed]...)
			return append(out, raw[h+2*sealed:]...)
		}, false},
		{"the object of another key (swapped)", func(_, other []byte) []byte { return other }, false},
		{"another object's header", func(raw, other []byte) []byte { copy(raw, other[:h]); return raw }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newDir(t)
			e := storage.Encrypt(b, ring(t, newKey(t)), nil)
			ctx := context.Background()
			for _, k := range []string{"segments/a/t/0/1.kseg", "segments/a/t/0/2.kseg"} {
				if err := e.Put(ctx, k, bytes.NewReader(data), -1); err != nil {
					t.Fatal(err)
				}
			}
			raw, other := getAll(t, b, "segments/a/t/0/1.kseg"), getAll(t, b, "segments/a/t/0/2.kseg")
			changed := tt.change(raw, other)
			if err := b.Put(ctx, "segments/a/t/0/1.kseg", bytes.NewReader(changed), -1); err != nil {
				t.Fatal(err)
			}
			got, err := readEnc(e, "segments/a/t/0/1.kseg")
			if err == nil {
				t.Fatalf("read %d bytes of a tampered object without an error", len(got))
			}
			if !strings.Contains(err.Error(), "segments/a/t/0/1.kseg") {
				t.Errorf("the error does not name the object: %v", err)
			}
			if tt.noKey != errors.Is(err, storage.ErrNoKey) || tt.noKey == storage.IsCorrupt(err) {
				t.Errorf("error %v: ErrNoKey %v, ErrCorrupt %v; want ErrNoKey %v", err, errors.Is(err, storage.ErrNoKey), storage.IsCorrupt(err), tt.noKey)
			}
			if len(got)%storage.EnvelopeChunkSize != 0 || !bytes.Equal(got, data[:len(got)]) {
				t.Errorf("returned %d bytes before the error: not whole authenticated chunks of the object", len(got))
			}
		})
	}
}

// Without the key, or with others only, Get refuses before reading,
// naming the key id the object needs and those configured, never the key.
// The keyring of a rotation (k2 primary, k1 previous) reads both, writes
// with k2.
func TestEncryptKeys(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	id1, id2 := storage.KeyID(k1), storage.KeyID(k2)
	b, _ := newDir(t)
	ctx := context.Background()
	if err := storage.Encrypt(b, ring(t, k1), nil).Put(ctx, "old", strings.NewReader("under k1"), -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "plain", strings.NewReader("written before encryption"), -1); err != nil {
		t.Fatal(err)
	}
	rotated := storage.Encrypt(b, ring(t, k2, k1), func(k string) bool { return k == "lock" })
	if err := rotated.Put(ctx, "new", strings.NewReader("under k2"), -1); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"old", "new", "plain"} {
		if _, err := readEnc(rotated, k); err != nil {
			t.Errorf("rotated keyring reads %s: %v", k, err)
		}
	}
	if raw := getAll(t, b, "new"); !bytes.Contains(raw, mustHex(t, id2)) {
		t.Errorf("the new object's header does not hold the primary key id %s", id2)
	}
	tests := []struct {
		name string
		ring *storage.Keyring
		key  string
		want []string
	}{
		{"no key configured", nil, "old", []string{"object old is encrypted with key id " + id1, "no encryption key is configured"}},
		{"only the new key", ring(t, k2), "old", []string{"key id " + id1, "configured key ids: " + id2}},
		{"only the old key", ring(t, k1), "new", []string{"key id " + id2, "configured key ids: " + id1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := storage.Encrypt(b, tt.ring, nil).Get(ctx, tt.key)
			var ke *storage.KeyError
			if !errors.As(err, &ke) || !errors.Is(err, storage.ErrNoKey) {
				t.Fatalf("Get = %v, want a *KeyError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, k := range [][]byte{k1, k2} {
				if strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(k)) {
					t.Errorf("the error holds key material: %v", err)
				}
			}
		})
	}
	// The locks stay plaintext: PutIfAbsent compares the bytes given.
	if err := rotated.PutIfAbsent(ctx, "lock", []byte(`{"run":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if raw := getAll(t, b, "lock"); string(raw) != `{"run":"x"}` {
		t.Errorf("the lock was stored as %q, want its plaintext", raw)
	}
	// So do the keys plaintext names (a lock's heartbeat, a Put).
	if err := rotated.Put(ctx, "lock", strings.NewReader(`{"run":"y"}`), -1); err != nil {
		t.Fatal(err)
	}
	if raw := getAll(t, b, "lock"); string(raw) != `{"run":"y"}` {
		t.Errorf("the lock's heartbeat was stored as %q, want its plaintext", raw)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

func TestParseKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	tests := []struct {
		name, text, wantErr string
	}{
		{"openssl output with its newline", good + "\n", ""},
		{"surrounding spaces", "  " + good + " ", ""},
		{"empty", "\n", "empty"},
		{"not base64", "not*base64!", "not valid base64"},
		{"16 bytes", base64.StdEncoding.EncodeToString(make([]byte, 16)), "decodes to 16 bytes, not 32"},
		{"33 bytes", base64.StdEncoding.EncodeToString(make([]byte, 33)), "decodes to 33 bytes, not 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := storage.ParseKey([]byte(tt.text))
			if tt.wantErr == "" {
				if err != nil || len(k) != 32 {
					t.Fatalf("ParseKey = %d bytes, %v", len(k), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "openssl rand -base64 32") {
				t.Fatalf("ParseKey error %v, want %q and the fix", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), strings.TrimSpace(tt.text)) && strings.TrimSpace(tt.text) != "" {
				t.Errorf("the error quotes the key text: %v", err)
			}
		})
	}
	if a, b := storage.KeyID(bytes.Repeat([]byte{7}, 32)), storage.KeyID(bytes.Repeat([]byte{8}, 32)); a == b || len(a) != 16 {
		t.Errorf("key ids %q and %q: want 16 hex digits, different for different keys", a, b)
	}
}

// Reading and writing a 32 MiB object through Encrypt holds a few chunks,
// not the object: the bytes allocated stay under 1 MiB each way.
func TestEncryptAllocatesChunksNotTheObject(t *testing.T) {
	b, _ := newDir(t)
	e := storage.Encrypt(b, ring(t, newKey(t)), nil)
	ctx := context.Background()
	const n = 32 << 20
	put := func() {
		if err := e.Put(ctx, "big", io.LimitReader(zeros{}, n), n); err != nil {
			t.Fatal(err)
		}
	}
	read := func() {
		rc, err := e.Get(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if m, err := io.CopyBuffer(io.Discard, rc, make([]byte, 32<<10)); err != nil || m != n {
			t.Fatalf("read %d bytes, %v", m, err)
		}
	}
	for _, step := range []struct {
		name string
		fn   func()
	}{{"put", put}, {"get", read}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		step.fn()
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s of a %d MiB object allocated %d KiB: it holds more than a few chunks", step.name, n>>20, alloc>>10)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// BenchmarkEncrypt measures the wrapper's cost over a local directory in
// MB/s of plaintext: Put and Get of a 64 MiB object, plaintext (no key)
// and encrypted.
func BenchmarkEncrypt(b *testing.B) {
	const n = 64 << 20
	for _, enc := range []bool{false, true} {
		name := "plaintext"
		r := &storage.Keyring{}
		if enc {
			name = "aes-256-gcm"
			r = ring(b, newKey(b))
		}
		dir := b.TempDir()
		fs, err := storage.NewFilesystem(dir)
		if err != nil {
			b.Fatal(err)
		}
		e := storage.Encrypt(fs, r, nil)
		ctx := context.Background()
		b.Run("put/"+name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				if err := e.Put(ctx, "obj", io.LimitReader(zeros{}, n), n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("get/"+name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				rc, err := e.Get(ctx, "obj")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
		_ = os.RemoveAll(dir)
	}
}
