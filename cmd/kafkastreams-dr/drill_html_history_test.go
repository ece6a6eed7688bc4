package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// historyDrillConfig seeds a one-broker kfake source with 20 records of
// orders (and the group's offsets: kfake answers a group it does not know
// with GROUP_ID_NOT_FOUND) and writes a config of order-processor over it,
// into a new filesystem repository; it returns the config file and the
// repository's directory.
func historyDrillConfig(t *testing.T) (cfg, repo string) {
	t.Helper()
	src := testkit.StartKfake(t, 1)
	seedOrders(t, testkit.Client(t, src.Addrs(), kgo.DefaultProduceTopic("orders")))
	repo = t.TempDir()
	return ordersDrillConfig(t, src.Bootstrap(), testkit.StartKfake(t, 1).Bootstrap(), repo), repo
}

// seedOrders creates the topic orders (2 partitions) through cl, whose
// default produce topic it is, produces 20 records to it and commits the
// group order-processor's offset 0 of partition 0 (kfake answers a group it
// does not know with GROUP_ID_NOT_FOUND, which fails a drill's offsets).
func seedOrders(t *testing.T, cl *kgo.Client) {
	t.Helper()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0})
	if err := adm.CommitAllOffsets(t.Context(), "order-processor", offs); err != nil {
		t.Fatal(err)
	}
}

// ordersDrillConfig writes the config of a drill of application
// order-processor's topic orders from the source at bootstrap src into
// the target at bootstrap target, with a filesystem repository at repo.
func ordersDrillConfig(t *testing.T, src, target, repo string) string {
	t.Helper()
	return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, src, target, repo))
}

// runHistoryDrill runs one drill of cfg with the latest backup (a new one
// when latest is false) into a new, empty kfake target, with args.
func runHistoryDrill(t *testing.T, cfg string, latest bool, args ...string) (stdout, stderr string) {
	t.Helper()
	a := []string{"--log-level", "error", "drill", "-c", cfg}
	if latest {
		a = append(a, "--backup-id", "latest", "--target-bootstrap-servers", testkit.StartKfake(t, 1).Bootstrap())
	}
	code, stdout, stderr := runCLI(t, append(a, args...)...)
	if code != exitOK {
		t.Fatalf("drill %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
	}
	return stdout, stderr
}

// TestDrillReportHistory: three drills on kfake into one repository, the
// last with --report: the page's history table is `drill history --json`
// of the same repository row for row (the last row this drill), the
// chart's points are the rows' RTO to scale, and the trend is the same.
func TestDrillReportHistory(t *testing.T) {
	t.Parallel()
	cfg, _ := historyDrillConfig(t)
	runHistoryDrill(t, cfg, false)
	runHistoryDrill(t, cfg, true)
	report := filepath.Join(t.TempDir(), "drill.html")
	stdout, stderr := runHistoryDrill(t, cfg, true, "--json", "--report", report, "--rto-growth-threshold", "35")
	if strings.Contains(stderr, "warning: the HTML report's history") {
		t.Errorf("a history warning:\n%s", stderr)
	}
	code, hist, herr := runCLI(t, "drill", "history", "-c", cfg, "--json", "--rto-growth-threshold", "35")
	if code != exitOK {
		t.Fatalf("drill history: exit %d\n%s\n%s", code, hist, herr)
	}
	p := readReportPage(t, report)
	if rows := p.Tables["history-table"]; len(rows) != 3 {
		t.Fatalf("history rows %q, want the 3 drills", rows)
	}
	testkit.CheckHistoryTable(t, p, []byte(hist))
	testkit.CheckReportPage(t, p, []byte(stdout)) // its last row is this drill
	if !strings.Contains(p.Text, "(threshold 35%)") || !strings.Contains(p.Text, "this drill the last") {
		t.Errorf("the page's trend is not at --rto-growth-threshold 35, or does not mark this drill:\n%s", p.Text)
	}
}

// TestDrillReportHistoryUnreadable: a drill whose repository holds a
// damaged drill report (drills/<id>/report.json that does not decode)
// passes and writes its page: the history of the readable drills, and the
// damaged one named as a warning on the page and on stderr.
func TestDrillReportHistoryUnreadable(t *testing.T) {
	t.Parallel()
	cfg, repo := historyDrillConfig(t)
	runHistoryDrill(t, cfg, false)
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := repository.DrillReportIDs(t.Context(), store)
	if err != nil || len(ids) != 1 {
		t.Fatalf("drill reports %v, %v", ids, err)
	}
	damaged := filepath.Join(repo, filepath.FromSlash(format.DrillReportKey(ids[0])))
	if err := os.WriteFile(damaged, []byte(`{"drill_id": "`), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "drill.html")
	_, stderr := runHistoryDrill(t, cfg, true, "--report", report)
	if !strings.Contains(stderr, "warning: the HTML report's history: skipped an unreadable drill report") || !strings.Contains(stderr, ids[0]) {
		t.Errorf("stderr does not warn of the damaged report %s:\n%s", ids[0], stderr)
	}
	p := readReportPage(t, report)
	rows := p.Tables["history-table"]
	if p.Outcome != "passed" || !p.IDs["history-warnings"] || !strings.Contains(p.Text, "skipped an unreadable drill report") || !strings.Contains(p.Text, ids[0]) {
		t.Errorf("the page (outcome %q) does not warn of the damaged report %s:\n%s", p.Outcome, ids[0], p.Text)
	}
	if len(rows) != 1 || rows[0][0] == ids[0] {
		t.Errorf("history rows %q, want this drill only", rows)
	}
	testkit.CheckHistoryChart(t, p)
}
