package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoFilesWithSuffix returns the files under repo whose names end in suffix.
func repoFilesWithSuffix(t *testing.T, repo, suffix string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s file under %s: %v", suffix, repo, err)
	}
	return files
}

// TestHintsRunAsPrinted: the next command a hint names carries the
// command's own config file and the backup id, never a placeholder
// (-c FILE, <id>), so that it runs as printed: offsets translate and
// restore of damaged segments, and every reader of a latest backup whose
// manifest does not decode.
func TestHintsRunAsPrinted(t *testing.T) {
	segments := embeddedRepository(t)
	cfg := restoreConfig(t, startCluster(t, nil), segments)
	code, stdout, stderr := runCLI(t, "offsets", "show", "-c", cfg, "--json")
	if code != exitOK {
		t.Fatalf("offsets show: exit %d\n%s", code, stderr)
	}
	_, after, _ := strings.Cut(stdout, `"backup_id": "`)
	id, _, _ := strings.Cut(after, `"`)
	for _, f := range repoFilesWithSuffix(t, segments, ".kseg") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	manifest := embeddedRepository(t)
	mcfg := restoreConfig(t, startCluster(t, nil), manifest)
	mf := repoFilesWithSuffix(t, manifest, "manifest.json")[0]
	mid := filepath.Base(filepath.Dir(mf))
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"offsets translate of damaged segments", []string{"offsets", "translate", "-c", cfg},
			[]string{"kafkastreams-dr verify -c " + cfg + " --deep --backup-id " + id, "kafkastreams-dr list -c " + cfg}},
		{"restore of damaged segments", []string{"restore", "-c", cfg, "--dry-run"},
			[]string{"kafkastreams-dr verify -c " + cfg + " --deep --backup-id " + id, "kafkastreams-dr list -c " + cfg}},
		{"describe of an undecodable latest manifest", []string{"describe", "-c", mcfg},
			[]string{"kafkastreams-dr verify -c " + mcfg + " --backup-id " + mid, "kafkastreams-dr backup -c " + mcfg + " --full"}},
		{"offsets show of an undecodable latest manifest", []string{"offsets", "show", "-c", mcfg},
			[]string{"kafkastreams-dr verify -c " + mcfg + " --backup-id " + mid, "kafkastreams-dr backup -c " + mcfg + " --full"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runBounded(t, append([]string{"--log-level", "error"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (damage)", code, exitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			for _, placeholder := range []string{"-c FILE", "<id>", "--backup-id ID"} {
				if strings.Contains(stderr, placeholder) {
					t.Errorf("stderr holds the placeholder %q:\n%s", placeholder, stderr)
				}
			}
		})
	}
}
