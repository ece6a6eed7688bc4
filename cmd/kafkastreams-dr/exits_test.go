package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
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

// TestRestoreDamagedJournal is the second new-user pass: a restore whose
// journal (restores/journals/<backup>/<cluster>.json) does not decode
// exited 1 with "check target.bootstrap_servers ... the repository", and
// running it again cannot help. It exits 2 (damage) naming the journal's
// key and what deleting it means.
func TestRestoreDamagedJournal(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var journal string
	filepath.WalkDir(filepath.Join(repo, filepath.FromSlash(format.RestoreJournalsPrefix())), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			journal = path
		}
		return err
	})
	if journal == "" {
		t.Fatal("the restore wrote no journal")
	}
	if err := os.WriteFile(journal, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := filepath.Rel(repo, journal)
	key = filepath.ToSlash(key)
	for _, args := range [][]string{{"restore", "-c", cfg, "--yes"}, {"restore", "-c", cfg, "--dry-run"}} {
		code, _, stderr := runCLI(t, append([]string{"--log-level", "error"}, args...)...)
		t.Logf("%q:\n%s", args, stderr)
		if code != damageExitCode || !strings.Contains(stderr, key) || !strings.Contains(stderr, "delete") ||
			!strings.Contains(stderr, "as not its own") || strings.Contains(stderr, "check target.bootstrap_servers") {
			t.Errorf("%q: exit %d, want %d naming %s and what deleting it means", args, code, damageExitCode, key)
		}
	}
	if b, _ := os.ReadFile(journal); string(b) != "not json" {
		t.Errorf("the journal was changed: %q", b)
	}
}

// TestDamagedProgressManifest is the second new-user pass: an interrupted
// backup whose progress.json does not decode made backup exit 1 (running
// it again cannot help: exit 2), list suggest verify --backup-id ID, and
// verify say "the next backup resumes it", which is false. Each says to
// delete the progress.json: the next backup then starts a new run.
func TestDamagedProgressManifest(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	src := testkit.StartKfake(t, 1)
	// The topic exists: the backup's selection is accepted before the
	// repository is read (a refused backup writes nothing).
	if _, err := kadm.NewClient(testkit.Client(t, src.Addrs())).CreateTopic(t.Context(), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
storage:
  backend: filesystem
  path: %s
`, src.Bootstrap(), repo))
	key := format.ProgressKey(id)
	writeRepoObject(t, repo, key, `{"format_version": 1, "backup_id": "`)

	for _, args := range [][]string{{"backup", "-c", cfg}, {"list", "-c", cfg}, {"verify", "-c", cfg, "--backup-id", id}} {
		code, _, stderr := runCLI(t, append([]string{"--log-level", "error"}, args...)...)
		t.Logf("%q:\n%s", args, stderr)
		if code != damageExitCode || !strings.Contains(stderr, "delete "+key) || !strings.Contains(stderr, "new run") ||
			strings.Contains(stderr, "resumes it") || strings.Contains(stderr, "verify -c") {
			t.Errorf("%q: exit %d, want %d saying to delete %s (the next backup then starts a new run)", args, code, damageExitCode, key)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, filepath.FromSlash(key))); !strings.HasPrefix(string(b), `{"format_version"`) {
		t.Errorf("%s was changed: %q", key, b)
	}
}
