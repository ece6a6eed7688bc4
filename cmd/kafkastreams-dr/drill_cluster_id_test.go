package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestDrillIntoFreshClustersWithOneClusterIDKeepsEachScorecard is a
// regression test (issue 15): a second drill of one backup into a fresh
// cluster whose cluster id equals the first target's (Docker's
// apache/kafka image keeps one default CLUSTER_ID, so CI drills hit it)
// reused the first drill's restore id and overwrote its restore report,
// and the first drill's signed scorecard then failed verify-report as
// tampered. Each drill now has its own restore and report, and both
// scorecards verify.
func TestDrillIntoFreshClustersWithOneClusterIDKeepsEachScorecard(t *testing.T) {
	t.Parallel()
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	const id = "5L6g3nShT-eMCtK--X86sw" // the apache/kafka image's default CLUSTER_ID
	target1, target2 := testkit.StartKfake(t, 3, kfake.ClusterID(id)), testkit.StartKfake(t, 3, kfake.ClusterID(id))
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, strings.Join(src.Addrs(), ", "), strings.Join(target1.Addrs(), ", "), repo))
	dir := t.TempDir()
	priv, pub := signingKey(t, dir, "drill-signing")
	sc1, sc2 := filepath.Join(dir, "scorecard-1.json"), filepath.Join(dir, "scorecard-2.json")
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--scorecard", sc1, "--sign-key-file", priv); code != exitOK {
		t.Fatalf("drill 1: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
		"--target-bootstrap-servers", target2.Bootstrap(), "--scorecard", sc2, "--sign-key-file", priv); code != exitOK {
		t.Fatalf("drill 2: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, card1 := envelopeOf(t, sc1)
	_, card2 := envelopeOf(t, sc2)
	if card1.RestoreID == "" || card1.RestoreID == card2.RestoreID {
		t.Errorf("the drills' restore ids are %q and %q: want one of its own for each", card1.RestoreID, card2.RestoreID)
	}
	reports, err := filepath.Glob(filepath.Join(repo, "restores", "*", "report.json"))
	if err != nil || len(reports) != 2 {
		t.Errorf("restore reports %v (%v): want one for each drill", reports, err)
	}
	for _, sc := range []string{sc1, sc2} {
		if code, stdout, stderr := runCLI(t, "drill", "verify-report", sc, "--public-key-file", pub, "-c", cfg); code != exitOK || !strings.Contains(stdout, "scorecard "+sc+" is valid") {
			t.Errorf("verify-report %s: exit %d\nstdout:\n%s\nstderr:\n%s", sc, code, stdout, stderr)
		}
	}
}
