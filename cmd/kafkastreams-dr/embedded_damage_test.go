package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRestoreEmbeddedOfADamagedBackup is a new user's fault: restore
// --embedded --from DIR of a backup with a damaged segment exited 1 with
// no hint, where the restore of the same repository with a config exits 2
// (refused before the first write) with the verify / older --backup-id
// hint. The embedded restore now says the same, with
// the backup's id and the repository directory in the hint.
func TestRestoreEmbeddedOfADamagedBackup(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		// Found by the pre-check (SHA-256, size) before the first write.
		{"a byte flipped", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }},
		{"a truncated segment", func(b []byte) []byte { return b[:len(b)/2] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := embeddedRepository(t)
			id, key := damageFirstSegment(t, repo, tt.damage)
			args := []string{"--log-level", "error", "restore", "--embedded", "--from", repo}
			code, stdout, stderr := runBounded(t, args...)
			t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
			if code != damageExitCode {
				t.Errorf("exit %d, want 2 (a damaged backup, refused before the first write)", code)
			}
			for _, want := range []string{key, "is damaged", "verify", "--deep", "--backup-id " + id, "storage.path " + repo, "nothing was written"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
			for _, bad := range []string{"run the same command again", "--backup-id ID", "<id>"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr says %q", bad)
				}
			}
		})
	}
}

// damageFirstSegment rewrites the first segment the latest backup of the
// directory repository repo names with damage(its bytes), and returns the
// backup's id and the segment's key.
func damageFirstSegment(t *testing.T, repo string, damage func([]byte) []byte) (id, key string) {
	t.Helper()
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			if len(p.Segments) > 0 && key == "" {
				key = p.Segments[0].Key
			}
		}
	}
	if key == "" {
		t.Fatal("the embedded backup has no segment")
	}
	path := filepath.Join(repo, filepath.FromSlash(key))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, damage(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return m.BackupID, key
}

// TestRestoreDryRunRunsNoPreCheck pins what restore --help and the README
// now say (a new user's doc fault: they said --dry-run "does not read the
// segments in full", while it decodes some): a dry run decodes only the
// segments whose statistics say a record may break a target limit, so a
// segment damaged elsewhere passes the dry run; the restore's pre-check
// then refuses it. verify --deep is what checks every segment.
func TestRestoreDryRunRunsNoPreCheck(t *testing.T) {
	repo := embeddedRepository(t)
	_, key := damageFirstSegment(t, repo, func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b })
	code, stdout, stderr := runBounded(t, "--log-level", "error", "restore", "--embedded", "--from", repo, "--dry-run")
	if code != exitOK || !strings.Contains(stdout, "dry run: nothing was written") {
		t.Errorf("dry run: exit %d, want 0 (no pre-check)\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runBounded(t, "--log-level", "error", "restore", "--embedded", "--from", repo)
	if code != damageExitCode || !strings.Contains(stderr, key) {
		t.Errorf("restore: exit %d, want 2 naming %s\n%s", code, key, stderr)
	}
	_, help, _ := runCLI(t, "restore", "--help")
	help = strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"--dry-run runs no such pre-check", "verify --deep checks every segment"} {
		if !strings.Contains(help, want) {
			t.Errorf("restore --help does not say %q", want)
		}
	}
	if strings.Contains(help, "does not read the segments in full") {
		t.Error("restore --help still says --dry-run does not read the segments in full")
	}
}
