package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
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

// countsRe finds "N records ... T topics (P partitions)" in one line.
var countsRe = regexp.MustCompile(`(\d+) records?\b.*?\b(\d+) topics? \((\d+) partitions?`)

func counts(t *testing.T, what, line string) [3]int {
	t.Helper()
	m := countsRe.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%s: no \"N records ... T topics (P partitions)\" in %q", what, line)
	}
	var c [3]int
	for i := range c {
		c[i], _ = strconv.Atoi(m[i+1])
	}
	return c
}

func lineWith(t *testing.T, out, prefix string) string {
	t.Helper()
	for l := range strings.Lines(out) {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return ""
}

// TestDrillCountsAgree: the embedded drill's story, its backup phase and
// its data line count the same records, topics and partitions, the
// in-flight tails included and said so (the story said 105 records of 8
// topics (15 partitions), the backup phase 105 records copied from 6
// topics (11 partitions): it counted the tails' records, not their
// topics).
func TestDrillCountsAgree(t *testing.T) {
	code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "--embedded", "--out", filepath.Join(t.TempDir(), "repo"))
	if code != exitOK {
		t.Fatalf("drill --embedded: exit %d\n%s\n%s", code, stdout, stderr)
	}
	story := strings.Join(strings.Fields(stdout[strings.Index(stdout, "2. backup"):strings.Index(stdout, "3. The source")]), " ")
	phase := lineWith(t, stdout, "backup ")
	data := lineWith(t, stdout, "data ")
	s, p, d := counts(t, "story", story), counts(t, "backup phase", phase), counts(t, "data", data)
	if s != p || p != d {
		t.Errorf("counts disagree: story %v %q, backup phase %v %q, data %v %q", s, story, p, phase, d, data)
	}
	for _, l := range []string{story, phase, data} {
		if !strings.Contains(l, "in-flight tails of") {
			t.Errorf("%q does not say the in-flight tails are counted", l)
		}
	}
}

// TestBackupCountsAgree: a backup's stdout and its stderr summary count
// the same records, and say what their topics and partitions count
// (stdout said 1192 records from 10 topics (21 partitions), stderr 11
// topics, 19 partitions: the tails' topics were in one and not the other).
func TestBackupCountsAgree(t *testing.T) {
	src := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(src.Addrs(), ", "), t.TempDir()))
	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg)
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s", code, stderr)
	}
	out := lineWith(t, stdout, "this run")
	sum := lineWith(t, stderr, "backup ")
	// stdout counts every topic and partition of the backup, stderr those
	// with new records (fewer or as many); both count the tails.
	o := counts(t, "stdout", out)
	m := regexp.MustCompile(`(\d+) topics?, (\d+) partitions? with new records \(in-flight tails included\), (\d+) records?`).FindStringSubmatch(sum)
	if m == nil {
		t.Fatalf("stderr summary %q does not say it counts topics and partitions with new records, in-flight tails included", sum)
	}
	topics, _ := strconv.Atoi(m[1])
	partitions, _ := strconv.Atoi(m[2])
	records, _ := strconv.Atoi(m[3])
	if records != o[0] || topics > o[1] || partitions > o[2] {
		t.Errorf("counts disagree: stdout %v %q, stderr %d records, %d topics, %d partitions %q", o, out, records, topics, partitions, sum)
	}
	if !strings.Contains(out, "in-flight tails of") {
		t.Errorf("stdout %q does not say the in-flight tails are counted", out)
	}
}
