package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drillConfig is a drill config whose clusters are never reached (the
// refusals below come first) and whose repository is repo.
func drillConfig(t *testing.T, repo string) string {
	t.Helper()
	return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [127.0.0.1:1]
  request_timeout: 1s
  retry_timeout: 1s
  topics:
    include: [orders]
target:
  bootstrap_servers: [127.0.0.1:2]
storage:
  backend: filesystem
  path: %s
`, repo))
}

// TestDrillBackupIDMissingRepository: a drill of an existing backup
// (--backup-id) reads the repository as list and verify do, so a
// storage.path that does not exist is refused with exit 2 naming it, and
// is not created (the drill created it, then said "holds no complete
// backup", and list said "no backups" afterwards).
func TestDrillBackupIDMissingRepository(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "no-such-repo")
	cfg := drillConfig(t, repo)
	for _, id := range []string{"latest", "20261129T074512.345Z-9f3a01bc"} {
		code, _, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", id)
		if code != exitUsage || !strings.Contains(stderr, repo) || !strings.Contains(stderr, "no such directory") {
			t.Errorf("--backup-id %s: exit %d, stderr:\n%s\nwant 2 naming %s as no such directory", id, code, stderr, repo)
		}
		if _, err := os.Stat(repo); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("--backup-id %s: storage.path %s exists after the refusal (err %v): the drill created it", id, repo, err)
		}
	}
}

// TestDrillAppCommandCheckedFirst: an application command whose program
// cannot run is refused with exit 2 naming it before the drill writes
// anything (the backup, the restore and the verify ran, then the shell
// exited 126).
func TestDrillAppCommandCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, command, want string }{
		{"a directory", dir, dir + " is a directory"},
		{"not on PATH", "kdr-no-such-command --bootstrap-servers \"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS\"", "kdr-no-such-command is not found on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			cfg := drillConfig(t, repo)
			code, _, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--app-command", tt.command)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "--app-command") {
				t.Errorf("exit %d, stderr:\n%s\nwant 2 with %q naming --app-command", code, stderr, tt.want)
			}
			if _, err := os.Stat(repo); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the repository %s was created (err %v): the refusal must come before the first write", repo, err)
			}
		})
	}
}

// TestListBackupsHint: the "no such backup" hint names kafkastreams-dr
// list -c FILE, which reads the repository as the config says (an S3
// endpoint included); the S3 hint was "aws s3 ls s3://..." without the
// configured --endpoint-url, and describe's named only "ls .../backups/".
func TestListBackupsHint(t *testing.T) {
	for _, loc := range []string{"s3://bucket/prefix", "/var/backups/app"} {
		h := listBackupsHint(loc, "list")
		if !strings.Contains(h, "kafkastreams-dr list -c FILE") || strings.Contains(h, "aws s3 ls") {
			t.Errorf("hint for %s = %q: want kafkastreams-dr list -c FILE and no aws s3 ls", loc, h)
		}
	}
	repo := t.TempDir()
	cfg := drillConfig(t, repo)
	code, _, stderr := runCLI(t, "describe", "-c", cfg, "--backup-id", "20991201T000000.000Z-deadbeef")
	if code != exitUsage || !strings.Contains(stderr, "kafkastreams-dr list -c "+cfg) {
		t.Errorf("describe of an unknown id: exit %d, want 2 with the hint kafkastreams-dr list -c %s\n%s", code, cfg, stderr)
	}
}
