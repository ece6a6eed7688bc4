package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestPruneRemovesTempFilesOfKilledRuns: a run killed inside a put of the
// filesystem backend leaves its ".tmp-*" file, at the root when it was
// taking the lock or rewriting its heartbeat (the crash loop found one
// after a prune killed 92 ms in), under restores/ when it was a restore's
// journal. A backup removes those under segments/ and backups/ only, and
// nothing removed the others: they piled up. Prune, the repository's
// garbage collector, removes every temporary file older than an hour
// (well above the longest put, storage.Filesystem.RemoveStaleTemps), and
// keeps younger ones, which may be a live writer's.
func TestPruneRemovesTempFilesOfKilledRuns(t *testing.T) {
	repo := t.TempDir()
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	newest := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for n := range 3 {
		craftBackup(t, store, newest.Add(-time.Duration(n)*time.Hour), byte(n+1))
	}
	old, young := []string{".tmp-1", "restores/journals/.tmp-2", "segments/.tmp-3"}, []string{".tmp-4", "restores/journals/.tmp-5"}
	for _, f := range slices.Concat(old, young) {
		p := filepath.Join(repo, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"owner":"prune"`), 0o600); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(old, f) {
			at := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf("application_id: order-processor\nsource:\n  bootstrap_servers: [kafka:9092]\n  topics:\n    include: [orders]\nstorage:\n  backend: filesystem\n  path: %s\n", repo))
	if code, stdout, stderr := runCLI(t, "prune", "-c", cfg, "--keep-last", "1"); code != exitOK {
		t.Fatalf("prune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var temps []string
	for _, f := range repoFiles(t, repo) {
		if strings.HasPrefix(filepath.Base(f), storage.TempPrefix) {
			temps = append(temps, filepath.ToSlash(f))
		}
	}
	if !slices.Equal(temps, young) {
		t.Errorf("temporary files after prune: %v, want only the young ones %v (the hour-old %v removed)", temps, young, old)
	}
}
