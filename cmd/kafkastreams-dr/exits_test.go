package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// writeRepoObject writes content at key in the directory repository repo.
func writeRepoObject(t *testing.T, repo, key, content string) {
	t.Helper()
	p := filepath.Join(repo, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyDamagedManifestHintNamesConfig is the second new-user pass:
// verify -c p.yaml of a backup whose manifest is truncated printed the
// ways out with "-c FILE"; they name the command's own config file, so
// that they run as printed.
func TestVerifyDamagedManifestHintNamesConfig(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	repo := t.TempDir()
	cfg := restoreConfig(t, []string{"127.0.0.1:1"}, repo)
	writeRepoObject(t, repo, format.ManifestKey(id), `{"format_version": 1, "backup_id": "`)
	for _, args := range [][]string{{"verify", "-c", cfg}, {"verify", "-c", cfg, "--backup-id", id}, {"verify", "-c", cfg, "--deep", "--backup-id", "latest"},
		{"describe", "-c", cfg, "--backup-id", id}, {"offsets", "show", "-c", cfg, "--backup-id", id}, {"restore", "-c", cfg, "--dry-run", "--backup-id", id}} {
		code, _, stderr := runCLI(t, args...)
		t.Logf("%q:\n%s", args, stderr)
		if code != damageExitCode || !strings.Contains(stderr, "kafkastreams-dr list -c "+cfg) ||
			!strings.Contains(stderr, "kafkastreams-dr backup -c "+cfg+" --full") || strings.Contains(stderr, "FILE") || strings.Contains(stderr, "<id>") {
			t.Errorf("%q: exit %d, want %d with hints naming %s", args, code, damageExitCode, cfg)
		}
	}
}
