package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRestoreInFlightThroughTheCLI: the sample's backup holds 8 records in
// flight in its repartition and FK subscription topics
// (docs/DOMAIN.md#in-flight). The dry run shows them and that they will
// be restored; restore --skip-in-flight leaves them out, counts the loss
// exactly (per topic and in total) in the report and its warnings, and
// exits 3 (partial) with the way to bring them back; a restore without it
// brings them back and exits 0.
func TestRestoreInFlightThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include}); err != nil {
		t.Fatal(err)
	}

	skipped := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, skipped.Addrs(), dir)
	code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--dry-run")
	if code != exitOK || !strings.Contains(stdout, "in flight    8 records in 2 repartition topics: will be restored") ||
		!regexp.MustCompile(regexp.QuoteMeta(sample.Repartition)+`\s+repartition \(in-flight tail\)\s+create\s+3\s`).MatchString(stdout) {
		t.Fatalf("restore --dry-run: exit %d, want 0 showing the 8 records in flight to restore\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--skip-in-flight", "--yes")
	if code != exitPartial {
		t.Fatalf("restore --skip-in-flight: exit %d, want %d (partial)\n%s\n%s", code, exitPartial, stdout, stderr)
	}
	for _, want := range []string{
		regexp.QuoteMeta("in flight    8 records in 2 repartition topics: NOT all restored (--skip-in-flight, or left out by --topics): 8 records lost"),
		regexp.QuoteMeta(sample.Repartition) + `\s+3 partitions\s+7 records`,
		regexp.QuoteMeta(sample.FKTopic) + `\s+1 partition\s+1 record`,
		regexp.QuoteMeta("8 records in flight in repartition topics at the backup are not restored (" + sample.Repartition + ": 7, " + sample.FKTopic + ": 1)"),
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("restore --skip-in-flight report does not say %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "is partial: 8 records in flight") || !strings.Contains(stderr, "restore without --skip-in-flight") {
		t.Errorf("restore --skip-in-flight error does not name the loss and the way out:\n%s", stderr)
	}
	if topics := restorecheck.Topics(t, testkit.Admin(t, skipped.Addrs())); topics[sample.Repartition] != 0 || topics[sample.FKTopic] != 0 {
		t.Errorf("--skip-in-flight created the internal topics: %v", topics)
	}

	restored := testkit.StartKfake(t, 3)
	cfg = restoreConfig(t, restored.Addrs(), dir)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK || !strings.Contains(stdout, "in flight    8 records in 2 repartition topics: were restored") {
		t.Fatalf("restore: exit %d, want 0 with the 8 records in flight restored\n%s\n%s", code, stdout, stderr)
	}
	if topics := restorecheck.Topics(t, testkit.Admin(t, restored.Addrs())); topics[sample.Repartition] != 3 || topics[sample.FKTopic] != 1 {
		t.Errorf("restore did not create the internal topics with the source's partitions: %v", topics)
	}
}
