package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
)

// TestRestoreInFlightThroughTheCLI: the sample's backup holds 8 records in
// flight in its repartition and FK subscription topics
// (docs/DOMAIN.md#in-flight), and says so (text and --json). The dry run shows them and that they will
// be restored; restore --skip-in-flight leaves them out, counts the loss
// exactly (per topic and in total) in the report and its warnings, and
// exits 3 (partial) with the way to bring them back; a restore without it
// brings them back and exits 0.
func TestRestoreInFlightThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	backupCfg := writeFile(t, "backup.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, audit-log, "order-processor-*"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(src.Addrs(), ", "), dir))
	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", backupCfg)
	if code != exitOK || !strings.Contains(stdout, "in flight    8 records held in the tails of 2 repartition topics (a changelog restore brings them back)") {
		t.Fatalf("backup: exit %d, want 0 saying it holds the 8 records in flight\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "--log-level", "error", "backup", "-c", backupCfg, "--json")
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil || res.InFlightRecords != 8 || len(res.InFlight) != 2 {
		t.Fatalf("backup --json: exit %d (%v), in flight %d records in %+v; want 8 in 2 topics\n%s\n%s", code, err, res.InFlightRecords, res.InFlight, stdout, stderr)
	}

	skipped := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, skipped.Addrs(), dir)
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--dry-run")
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
