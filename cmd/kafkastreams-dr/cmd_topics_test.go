package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// startCluster starts an in-process three-broker Kafka (kfake) on real TCP
// ports with the given topics (name -> cleanup.policy, "" for default) and
// consumer groups, and returns its bootstrap servers.
func startCluster(t *testing.T, topics map[string]string, groups ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for name, policy := range topics {
		var cfg map[string]*string
		if policy != "" {
			cfg = map[string]*string{"cleanup.policy": &policy}
		}
		if _, err := adm.CreateTopic(t.Context(), 2, 1, cfg, name); err != nil {
			t.Fatalf("create topic %s: %v", name, err)
		}
	}
	for _, g := range groups {
		// Committing an offset creates an (empty) consumer group.
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0})
		if _, err := adm.CommitOffsets(t.Context(), g, os); err != nil {
			t.Fatalf("commit offsets for group %s: %v", g, err)
		}
	}
	return c.ListenAddrs()
}

func TestTopicsAgainstCluster(t *testing.T) {
	brokers := startCluster(t, map[string]string{
		"orders":                              "",
		"customers":                           "compact",
		"order-processor-totals-changelog":    "compact",
		"order-processor-totals-repartition":  "",
		"order-processor-v2-counts-changelog": "compact",
		"unrelated":                           "",
	}, "order-processor", "order-processor-v2")

	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, "order-processor-*"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), t.TempDir()))

	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--json")
		if code != 0 {
			t.Fatalf("exit code %d\nstderr: %s", code, stderr)
		}
		var ds []topicfilter.Decision
		if err := json.Unmarshal([]byte(stdout), &ds); err != nil {
			t.Fatalf("stdout is not a JSON array of decisions: %v\n%s", err, stdout)
		}
		got := map[string]topicfilter.Decision{}
		for _, d := range ds {
			got[d.Topic] = d
		}
		want := []struct {
			topic    string
			class    topicfilter.Class
			selected bool
		}{
			{"orders", topicfilter.External, true},
			{"customers", topicfilter.Changelog, true},
			{"order-processor-totals-changelog", topicfilter.Changelog, true},
			{"order-processor-totals-repartition", topicfilter.Repartition, false},
			{"order-processor-v2-counts-changelog", topicfilter.External, false}, // another application's internal topic
			{"unrelated", topicfilter.External, false},
		}
		for _, w := range want {
			d, ok := got[w.topic]
			if !ok {
				t.Errorf("no decision for %s", w.topic)
				continue
			}
			if d.Class != w.class || d.Selected != w.selected || d.Partitions != 2 {
				t.Errorf("%s: class %s selected %v partitions %d, want %s %v 2 (reason: %s)",
					w.topic, d.Class, d.Selected, d.Partitions, w.class, w.selected, d.Reason)
			}
		}
		if o := got["order-processor-v2-counts-changelog"].OtherApplicationID; o != "order-processor-v2" {
			t.Errorf("order-processor-v2-counts-changelog: other application %q, want order-processor-v2 (from the consumer groups)", o)
		}
		if !strings.Contains(stderr, "3 selected") {
			t.Errorf("stderr has no summary line with 3 selected topics:\n%s", stderr)
		}
	})

	t.Run("table", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", cfg)
		if code != 0 {
			t.Fatalf("exit code %d\nstderr: %s", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if !strings.HasPrefix(lines[0], "TOPIC") || !strings.Contains(lines[0], "CLASS") || !strings.Contains(lines[0], "REASON") {
			t.Errorf("no table header: %q", lines[0])
		}
		if !strings.Contains(stdout, "customers") || !strings.Contains(stdout, "changelog (source)") {
			t.Errorf("table does not show customers as a source changelog:\n%s", stdout)
		}
	})

	t.Run("missing literal include exits 2", func(t *testing.T) {
		missing := writeFile(t, "missing.yaml", strings.Replace(mustRead(t, cfg), "include: [orders,", "include: [ordres, orders,", 1))
		code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", missing)
		if code != exitUsage {
			t.Errorf("exit code %d, want %d\nstderr: %s", code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, "ordres") || !strings.Contains(stdout, "TOPIC") {
			t.Errorf("want the table and an error naming the missing topic\nstdout: %s\nstderr: %s", stdout, stderr)
		}
	})
}
