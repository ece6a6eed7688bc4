package storage_test

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenPlain is the plaintext of testdata/envelope-v1.golden: two full
// chunks and a short last one.
var goldenPlain = bytes.Repeat([]byte("kafkastreams-dr envelope v1 "), 2*storage.EnvelopeChunkSize/28+100)

// TestEnvelopeGolden pins the envelope of docs/FORMAT.md ("Encryption"):
// an object sealed by this version (with fuzzKey, under fuzzObject) opens
// to its plaintext, and the key id of fuzzKey is what FORMAT.md's rule
// gives. A change to the construction, the AAD or the key derivation
// fails here: every encrypted repository would stop reading. -update
// writes a new golden object (a random salt and nonce prefix), for a new
// envelope version only.
func TestEnvelopeGolden(t *testing.T) {
	const path = "testdata/envelope-v1.golden"
	r := &storage.Keyring{}
	if err := r.Add(fuzzKey); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, seal(t, r, goldenPlain), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if id := storage.KeyID(fuzzKey); id != "6e1ea5e32049350a" && !*update {
		t.Errorf("KeyID(fuzzKey) = %s: the key id rule changed", id)
	}
	rc, err := storage.OpenEnvelope(r, fuzzObject, stored)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, goldenPlain) {
		t.Fatalf("the golden envelope opened to %d bytes (%v), want its %d bytes of plaintext", len(got), err, len(goldenPlain))
	}
	if int64(len(stored)) != storage.EncryptedSize(int64(len(goldenPlain))) || !strings.HasPrefix(string(stored), storage.EnvelopeMagic) {
		t.Errorf("the golden envelope is %d bytes, EncryptedSize says %d", len(stored), storage.EncryptedSize(int64(len(goldenPlain))))
	}
}
