package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// myAppTopology is my-app's Topology#describe(): orders regrouped
// through a repartition topic into a count, written to order-counts.
const myAppTopology = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> counts-repartition-sink
      <-- KSTREAM-SOURCE-0000000000
    Sink: counts-repartition-sink (topic: counts-repartition)
      <-- KSTREAM-KEY-SELECT-0000000001
  Sub-topology: 1
    Source: counts-repartition-source (topics: [counts-repartition])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts-store])
      --> KSTREAM-SINK-0000000003
      <-- counts-repartition-source
    Sink: KSTREAM-SINK-0000000003 (topic: order-counts)
      <-- KSTREAM-AGGREGATE-0000000002
`

// topologyCluster is a kfake cluster with my-app's topics, my-app-v1's
// changelog (a decoy: no group of my-app-v1, no other_application_ids)
// and an unrelated topic; cfg is a config for it with the extra keys.
func topologyCluster(t *testing.T, extra string) (cfg, topologyFile string) {
	t.Helper()
	brokers := startCluster(t, map[string]string{
		"orders": "", "order-counts": "", "my-app-counts-repartition": "",
		"my-app-counts-store-changelog": "compact", "my-app-v1-counts-store-changelog": "compact", "unrelated": "",
	})
	dir := t.TempDir()
	writeFileIn(t, dir, "my-app.topology.txt", myAppTopology)
	writeFileIn(t, dir, "app.yaml", fmt.Sprintf(`application_id: my-app
source:
  bootstrap_servers: [%s]
%sstorage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), extra, filepath.Join(dir, "repo")))
	return filepath.Join(dir, "app.yaml"), filepath.Join(dir, "my-app.topology.txt")
}

// TestTopicsWithATopology: topics --topology FILE without an include shows
// each topic's role and selects the topology's inputs, outputs and
// changelogs; my-app-v1's changelog is not my-app's with no group to tell;
// stderr names the topology. Without include and topology topics refuses
// (exit 2); an include that leaves out a topology changelog refuses with
// the fix, naming the key's line (issue 12).
func TestTopicsWithATopology(t *testing.T) {
	cfg, top := topologyCluster(t, "")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--topology", top, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var ds []topicfilter.Decision
	if err := json.Unmarshal([]byte(stdout), &ds); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, d := range ds {
		got[d.Topic] = fmt.Sprintf("%s %v", d.Role, d.Selected)
		if d.Topic == "my-app-v1-counts-store-changelog" && (!strings.Contains(d.Reason, `probably an internal topic of application.id "my-app-v1"`) || d.OtherApplicationID != "my-app-v1") {
			t.Errorf("decoy: reason %q, other %q", d.Reason, d.OtherApplicationID)
		}
	}
	want := map[string]string{"orders": "input true", "order-counts": "output true", "my-app-counts-repartition": "repartition false",
		"my-app-counts-store-changelog": "changelog true", "my-app-v1-counts-store-changelog": " false", "unrelated": " false"}
	for topic, w := range want {
		if got[topic] != w {
			t.Errorf("%s: %q, want %q", topic, got[topic], w)
		}
	}
	if w := fmt.Sprintf("3 selected (1 input, 1 output, 1 changelog) with 6 partitions; topology: topology file %q", top); !strings.Contains(stderr, w) {
		t.Errorf("stderr has no %q:\n%s", w, stderr)
	}

	// The table has the ROLE column.
	code, stdout, _ = runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--topology", top)
	if code != 0 || !regexp.MustCompile(`(?m)^TOPIC +CLASS +ROLE +PARTITIONS`).MatchString(stdout) || !regexp.MustCompile(`(?m)^my-app-counts-store-changelog +changelog +changelog +2 +yes`).MatchString(stdout) {
		t.Errorf("table (exit %d):\n%s", code, stdout)
	}

	// No include, no topology.
	code, _, stderr = runCLI(t, "--log-level", "error", "topics", "-c", cfg)
	if code != 2 || !strings.Contains(stderr, "no source.topics.include and no topology: give --topology FILE, set topology_file, or run the app as a streams group (group.protocol=streams)") {
		t.Errorf("no include, no topology: exit %d\n%s", code, stderr)
	}

	// A missing topology file.
	code, _, stderr = runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--topology", top+".nope")
	if code != 2 || !strings.Contains(stderr, fmt.Sprintf("--topology %q cannot be read: it does not exist", top+".nope")) {
		t.Errorf("missing topology file: exit %d\n%s", code, stderr)
	}

	// An include that leaves out the topology's changelog; topology_file
	// from the config, relative to it.
	cfg, _ = topologyCluster(t, "  topics:\n    include: [orders, order-counts]\ntopology_file: my-app.topology.txt\n")
	code, _, stderr = runCLI(t, "--log-level", "error", "topics", "-c", cfg)
	if w := fmt.Sprintf(`changelog "my-app-counts-store-changelog" (topology file %q) is not selected: add "my-app-counts-store-changelog" to source.topics.include (line 5 of %s)`,
		filepath.Join(filepath.Dir(cfg), "my-app.topology.txt"), cfg); code != 2 || !strings.Contains(stderr, w) || !strings.Contains(stderr, "source.topics.allow_topology_mismatch: true") {
		t.Errorf("mismatch: exit %d, want 2 and %q:\n%s", code, w, stderr)
	}
}

// TestBackupWithATopologyFlag: backup --topology FILE without an include
// backs up the topology's inputs, outputs and changelog, each with its
// role, and not my-app-v1's changelog; a mismatch refuses with exit 2
// before anything is copied.
func TestBackupWithATopologyFlag(t *testing.T) {
	cfg, top := topologyCluster(t, "")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--topology", top, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var res struct {
		BackedUp []struct{ Topic, Role string } `json:"backed_up"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, b := range res.BackedUp {
		got[b.Topic] = b.Role
	}
	want := map[string]string{"orders": "input", "order-counts": "output", "my-app-counts-store-changelog": "changelog"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backed up %v, want %v", got, want)
	}
	// describe names the topology the backup classified by.
	code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg)
	if w := fmt.Sprintf("topology file %q, sha256 ", top); code != 0 || !regexp.MustCompile(`(?m)^ +topology +topology file`).MatchString(stdout) || !strings.Contains(stdout, w) {
		t.Errorf("describe (exit %d) has no topology row with %q:\n%s\n%s", code, w, stdout, stderr)
	}

	cfg, top = topologyCluster(t, "  topics:\n    include: [\"*\"]\n    exclude: [orders]\n")
	code, _, stderr = runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--topology", top)
	if w := `input topic "orders" (topology file`; code != 2 || !strings.Contains(stderr, w) || !strings.Contains(stderr, `it is excluded by pattern "orders": remove the pattern from source.topics.exclude (line 6 of`) {
		t.Errorf("mismatch: exit %d, want 2 and %q:\n%s", code, w, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg), "repo", "backups", "*", "manifest.json")); len(m) != 0 {
		t.Errorf("a refused backup wrote %q", m)
	}
}
