package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// planRow matches a row of the group offsets table: topic, partition,
// committed, translated, action.
var planRow = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+|-)\s+(\d+|-)\s+(?:(?:\d+|-)\s+)?(commit|drop)\b`)

// readBackRow matches a line of the offsets read back from the new cluster.
var readBackRow = regexp.MustCompile(`(?m)^  (\S+)/(\d+):\s+(?:committed (\d+)|never committed) on the lost cluster\s+-> (\d+|none) on the new one`)

// TestRestoreEmbedded is the README's quickstart, second half: the
// repository that `backup --embedded` wrote, restored into a new embedded
// cluster; the offsets read back from that cluster are the plan's.
func TestRestoreEmbedded(t *testing.T) {
	t.Parallel()
	repo := embeddedRepository(t)
	before := repositoryFiles(t, repo)
	code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "--embedded", "--from", repo)
	if code != exitOK {
		t.Fatalf("restore --embedded: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The embedded restore is a throwaway: its report, journal and lock are
	// not written into the repository it reads (new-user pass, issue 12: a
	// restores/ report of a cluster that is gone, which estimate then took
	// as a measured restore throughput).
	if after := repositoryFiles(t, repo); !slices.Equal(before, after) {
		t.Errorf("restore --embedded changed the repository:\nbefore %q\nafter  %q", before, after)
	}
	for _, w := range []string{"complete", "read back equal", "WIPE LOCAL STATE", "orders/0: committed 12 on the lost cluster -> 12 on the new one"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout does not contain %q:\n%s", w, stdout)
		}
	}
	for _, topic := range sample.BackedUp {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + `\s+\S+.*\screated\s`).MatchString(stdout) {
			t.Errorf("topic %s not in the table as created:\n%s", topic, stdout)
		}
	}

	planned := map[string]string{}
	for _, m := range planRow.FindAllStringSubmatch(stdout, -1) {
		tr := m[4]
		if m[5] == "drop" {
			tr = "none"
		}
		planned[m[1]+"/"+m[2]] = m[3] + " -> " + tr
	}
	readBack := map[string]string{}
	for _, m := range readBackRow.FindAllStringSubmatch(stdout, -1) {
		readBack[m[1]+"/"+m[2]] = cmp.Or(m[3], "-") + " -> " + m[4] // never committed: "-" in the plan's table
	}
	// The 6 offsets of the backup and the 3 in-flight partitions the group
	// never committed on the source.
	if len(planned) != 9 || fmt.Sprint(planned) != fmt.Sprint(readBack) {
		t.Errorf("offsets read back from the new cluster differ from the plan:\nplan      %v\nread back %v\n%s", planned, readBack, stdout)
	}
	// orders has no holes: its offsets translate to themselves; payments
	// lost its first 8 records to DeleteRecords before the backup.
	for tp, want := range map[string]string{"orders/0": "12 -> 12", "orders/1": "20 -> 20", "payments/0": "15 -> 7", sample.Repartition + "/0": "2 -> 0", sample.Repartition + "/1": "- -> 0"} {
		if planned[tp] != want {
			t.Errorf("%s: %q, want %q", tp, planned[tp], want)
		}
	}

	// --json: the report, parseable.
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "--embedded", "--from", repo, "--json")
	var rep restorer.Report
	if err := json.Unmarshal([]byte(stdout), &rep); code != exitOK || err != nil {
		t.Fatalf("--json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if !rep.Committed || !rep.WipeState || rep.Group == nil || len(rep.Topics) != len(sample.BackedUp)+2 || !strings.Contains(stderr, "IMPORTANT: ") { // and the 2 in-flight tails
		t.Errorf("--json report: %+v\nstderr: %s", rep, stderr)
	}
}

func TestRestoreEmbeddedNoRepository(t *testing.T) {
	empty := t.TempDir()
	// A directory that is not empty and holds no backup: backup --embedded
	// --out refuses it, so the hint must not propose it (new-user pass,
	// issue 12).
	full := t.TempDir()
	writeRepoObject(t, full, "cfg.yaml", "application_id: x\n")
	for _, tt := range []struct {
		name, from string
		want, not  []string
	}{
		{"missing directory", filepath.Join(empty, "nope"), []string{"does not exist", "backup --embedded --out"}, nil},
		{"empty directory", empty, []string{"no such backup", "holds no complete backup", "backup --embedded --out " + empty}, nil},
		{"directory that is not empty", full, []string{"holds no complete backup", "is not empty", "backup --embedded --out NEW_DIR"}, []string{"--out " + full}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "restore", "--embedded", "--from", tt.from)
			if code != exitUsage {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr contains %q:\n%s", w, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(empty, "nope")); !os.IsNotExist(err) {
		t.Errorf("restore --embedded created --from: %v", err)
	}
}

// TestOffsetsShowAndTranslate reads the group offsets of a repository made
// by `backup --embedded`, and predicts their translation.
func TestOffsetsShowAndTranslate(t *testing.T) {
	repo := embeddedRepository(t)
	cfg := restoreConfig(t, []string{"dr-kafka:9092"}, repo)

	code, stdout, stderr := runCLI(t, "offsets", "show", "-c", cfg)
	if code != exitOK {
		t.Fatalf("offsets show: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, re := range []string{
		`group order-processor in backup \S+: 6 committed offsets`,
		`(?m)^  state +Empty$`,
		`(?m)^TOPIC +PARTITION +OFFSET +CLASS$`,
		`(?m)^orders +0 +12 +external$`,
		`(?m)^customers +0 +9 +changelog$`,
		`(?m)^payments +0 +15 +external$`,
		`(?m)^` + sample.Repartition + ` +0 +2 +repartition$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("offsets show does not match %s:\n%s", re, stdout)
		}
	}

	code, stdout, _ = runCLI(t, "offsets", "show", "-c", cfg, "--json")
	var shown offsetsShowJSON
	if err := json.Unmarshal([]byte(stdout), &shown); code != exitOK || err != nil || shown.Group == nil || len(shown.Group.Offsets) != 6 || shown.BackupID == "" {
		t.Fatalf("offsets show --json: exit %d, %v: %+v\n%s", code, err, shown, stdout)
	}

	code, stdout, stderr = runCLI(t, "offsets", "translate", "-c", cfg)
	if code != exitOK {
		t.Fatalf("offsets translate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := map[string]string{}
	for _, m := range planRow.FindAllStringSubmatch(stdout, -1) {
		got[m[1]+"/"+m[2]] = m[3] + " -> " + m[4] + " " + m[5]
	}
	want := map[string]string{"orders/0": "12 -> 12 commit", "orders/1": "20 -> 20 commit", "orders/2": "5 -> 5 commit",
		"payments/0": "15 -> 7 commit",
		// The in-flight tail is restored: committed to its first record;
		// partition 1 was never committed on the source (tail from 0):
		// "-", not a committed 0.
		sample.Repartition + "/0": "2 -> 0 commit", sample.Repartition + "/1": "- -> 0 commit"}
	for tp, w := range want {
		if got[tp] != w {
			t.Errorf("%s: %q, want %q\n%s", tp, got[tp], w, stdout)
		}
	}
	if !strings.Contains(stdout, "group order-processor of backup "+shown.BackupID) {
		t.Errorf("translate does not name the backup %s:\n%s", shown.BackupID, stdout)
	}

	code, stdout, _ = runCLI(t, "offsets", "translate", "-c", cfg, "--strategy", "rebuild", "--json")
	var tr offsetsTranslateJSON
	if err := json.Unmarshal([]byte(stdout), &tr); code != exitOK || err != nil || tr.Group == nil || tr.Strategy != restorer.StrategyRebuild {
		t.Fatalf("offsets translate --strategy rebuild --json: exit %d, %v\n%s", code, err, stdout)
	}
	for _, op := range tr.Group.Offsets {
		if op.Action == "commit" && op.Translated != 0 {
			t.Errorf("rebuild: %s/%d translated to %d, want the start of the restored data (0)", op.Topic, op.Partition, op.Translated)
		}
	}

	// A repository without backups: exit 2 and how to list them.
	empty := restoreConfig(t, []string{"dr-kafka:9092"}, t.TempDir())
	for _, sub := range []string{"show", "translate"} {
		code, _, stderr = runCLI(t, "offsets", sub, "-c", empty)
		if code != exitUsage || !strings.Contains(stderr, "no such backup") || !strings.Contains(stderr, "/backups/") {
			t.Errorf("offsets %s on an empty repository: exit %d\n%s", sub, code, stderr)
		}
	}
}

// TestRestoreWithConfig restores the quickstart's repository with a config
// into a separate cluster: a dry run writes nothing, the restore commits
// the offsets the dry run planned, and running it again resumes.
func TestRestoreWithConfig(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)

	code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--dry-run")
	if code != exitOK {
		t.Fatalf("--dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"restore plan for backup", "records per partition:", "SOURCE_END", "TRANSLATED", "dry run: nothing was written"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("dry run does not contain %q:\n%s", w, stdout)
		}
	}
	planned := planRow.FindAllString(stdout, -1)
	topics, err := testkit.Admin(t, target.Addrs()).ListTopics(t.Context())
	if err != nil || len(topics) != 0 {
		t.Fatalf("after the dry run the target has topics %v (%v)", topics.Names(), err)
	}

	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes")
	if code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The 6 offsets of the backup and the 3 in-flight partitions the group
	// never committed on the source.
	if done := planRow.FindAllString(stdout, -1); len(planned) != 9 || fmt.Sprint(done) != fmt.Sprint(planned) {
		t.Errorf("committed offsets differ from the dry run's plan:\nplan %q\ndone %q", planned, done)
	}
	fetched, err := testkit.Admin(t, target.Addrs()).FetchOffsets(t.Context(), sample.AppID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range planRow.FindAllStringSubmatch(stdout, -1) {
		p, _ := strconv.Atoi(m[2])
		o, ok := fetched.Lookup(m[1], int32(p))
		if m[5] == "commit" && (!ok || strconv.FormatInt(o.At, 10) != m[4]) {
			t.Errorf("%s/%s on the target: %+v, the report says %s", m[1], m[2], o, m[4])
		}
	}

	// Again: the restore recognizes that it is complete and writes nothing,
	// not even the offsets (the group may have moved since).
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes")
	if code != exitOK || !strings.Contains(stdout, "was already complete: nothing written") {
		t.Errorf("second restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// repositoryFiles are the files under dir, as slash paths relative to it,
// sorted.
func repositoryFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}
