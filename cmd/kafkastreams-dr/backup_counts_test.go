package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestBackupLogLineCountsAgree is a second new-user fault of issue 12: one
// backup said "13 topics (33 partitions)" on stdout and "topics":10,
// "partitions":24 in its "backup complete" log line (the tails' topics
// and partitions were in one and not the other). Both come from
// backup.Result.Counts; the log line names the tails' share apart.
func TestBackupLogLineCountsAgree(t *testing.T) {
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
	code, stdout, stderr := runCLI(t, "--log-level", "info", "backup", "-c", cfg)
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s", code, stderr)
	}
	o := counts(t, "stdout", lineWith(t, stdout, "this run"))
	var logged struct {
		Msg                string `json:"msg"`
		Topics             int    `json:"topics"`
		Partitions         int    `json:"partitions"`
		Records            int    `json:"records"`
		InFlightTopics     *int   `json:"in_flight_topics"`
		InFlightPartitions *int   `json:"in_flight_partitions"`
	}
	found := false
	for l := range strings.Lines(stderr) {
		if strings.Contains(l, `"backup complete"`) {
			if err := json.Unmarshal([]byte(l), &logged); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no \"backup complete\" log line:\n%s", stderr)
	}
	if logged.Records != o[0] || logged.Topics != o[1] || logged.Partitions != o[2] {
		t.Errorf("log line: %d records, %d topics, %d partitions; stdout %v (records, topics, partitions)", logged.Records, logged.Topics, logged.Partitions, o)
	}
	if logged.InFlightTopics == nil || logged.InFlightPartitions == nil || *logged.InFlightTopics == 0 || *logged.InFlightPartitions == 0 {
		t.Errorf("log line does not name the in-flight tails' share (in_flight_topics, in_flight_partitions): %+v", logged)
	}
}
