package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRelativeStoragePathFromAnotherDirectory: list run from another
// working directory opens the repository next to the config file, and
// config validate shows where it is (issue 9: a CronJob and a restore
// started in different directories saw different repositories).
func TestRelativeStoragePathFromAnotherDirectory(t *testing.T) {
	confDir := t.TempDir()
	store, err := storage.NewFilesystem(filepath.Join(confDir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	id := craftBackup(t, store, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), 1)
	cfg := filepath.Join(confDir, "app.yaml")
	if err := os.WriteFile(cfg, []byte("source:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\nstorage:\n  backend: filesystem\n  path: repo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCLI(t, "list", "-c", cfg)
	if code != exitOK || !strings.Contains(stdout, id) {
		t.Fatalf("list from another directory: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "config", "validate", "-c", cfg)
	if code != exitOK || !strings.Contains(stdout, filepath.Join(confDir, "repo")) {
		t.Fatalf("config validate does not show the resolved repository: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
