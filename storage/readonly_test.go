package storage_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

// TestReadOnlyFilesystemConformance runs the read subtests through
// storage.ReadOnly over a directory, and checks that every write is refused
// and leaves the directory as it was (no object, no temporary file).
func TestReadOnlyFilesystemConformance(t *testing.T) {
	storagetest.RunReadOnly(t, "verify", func(t *testing.T) (storage.Backend, storage.Backend) {
		dir := t.TempDir()
		b, err := storage.NewFilesystem(filepath.Join(dir, "repo"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if temps := findTemps(t, dir); len(temps) > 0 {
				t.Errorf("temporary files left behind: %q", temps)
			}
		})
		return b, storage.ReadOnly(b, "verify")
	})
}

// TestReadOnlyS3Conformance is the same on a real S3 server, behind a
// recording proxy: the refused writes send nothing that writes (no PUT,
// POST or DELETE reaches the server) and leave no multipart upload.
func TestReadOnlyS3Conformance(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	storagetest.RunReadOnly(t, "estimate", func(t *testing.T) (storage.Backend, storage.Backend) {
		prefix := "t-" + randomHex(t, 6) + "/repo"
		rw := newTestS3(t, srv, storage.S3Options{Prefix: prefix})
		rec, endpoint := startRecorder(t, srv, "127.0.0.1", nil)
		ro := storage.ReadOnly(newTestS3(t, srv, storage.S3Options{Prefix: prefix, Endpoint: endpoint, PathStyle: true}), "estimate")
		t.Cleanup(func() {
			for _, r := range rec.requests() {
				switch r.Method {
				case http.MethodGet, http.MethodHead:
				default:
					t.Errorf("the read-only backend sent %s %s", r.Method, r.URL)
				}
			}
		})
		return rw, ro
	})
}
