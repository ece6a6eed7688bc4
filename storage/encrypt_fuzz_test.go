package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// fuzzKey is the key of FuzzEnvelope's keyring (a fixed test key, so that
// the committed seeds in testdata/fuzz/FuzzEnvelope open).
var fuzzKey = bytes.Repeat([]byte{0x4b}, storage.KeySize)

const fuzzObject = "segments/20261201T000000.000Z-00000000/orders/0/00000000000000000000.kseg"

// FuzzEnvelope feeds arbitrary stored bytes to the envelope decoder
// (Encrypt's Get): it never panics, reads at most one chunk ahead, and
// either returns an error that names the object and wraps ErrCorrupt or
// ErrNoKey (or returns a non-envelope object unchanged), or returns a
// plaintext whose EncryptedSize is exactly the stored size.
func FuzzEnvelope(f *testing.F) {
	r := &storage.Keyring{}
	if err := r.Add(fuzzKey); err != nil {
		f.Fatal(err)
	}
	for _, n := range []int{0, 1, 100, storage.EnvelopeChunkSize, storage.EnvelopeChunkSize + 1} {
		f.Add(seal(f, r, bytes.Repeat([]byte("v"), n)))
	}
	f.Add([]byte(storage.EnvelopeMagic))
	f.Add([]byte(`{"format":"kafkastreams-dr/backup"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := storage.OpenEnvelope(r, fuzzObject, data)
		var plain []byte
		if err == nil {
			plain, err = io.ReadAll(rc)
			rc.Close()
		}
		isEnvelope := bytes.HasPrefix(data, []byte(storage.EnvelopeMagic))
		switch {
		case !isEnvelope && (err != nil || !bytes.Equal(plain, data)):
			t.Fatalf("a plaintext object of %d bytes read as %d bytes, %v", len(data), len(plain), err)
		case isEnvelope && err != nil:
			if !storage.IsCorrupt(err) && !errors.Is(err, storage.ErrNoKey) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrNoKey", err)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(fuzzObject)) {
				t.Fatalf("error %v does not name the object", err)
			}
		case isEnvelope && storage.EncryptedSize(int64(len(plain))) != int64(len(data)):
			t.Fatalf("opened %d stored bytes into %d plaintext bytes, which seal to %d", len(data), len(plain), storage.EncryptedSize(int64(len(plain))))
		}
	})
}

// seal returns the stored bytes of plain written through Encrypt with r.
func seal(t testing.TB, r *storage.Keyring, plain []byte) []byte {
	t.Helper()
	b, _ := newDir(t)
	if err := storage.Encrypt(b, r, nil).Put(context.Background(), fuzzObject, bytes.NewReader(plain), int64(len(plain))); err != nil {
		t.Fatal(err)
	}
	return getAll(t, b, fuzzObject)
}
