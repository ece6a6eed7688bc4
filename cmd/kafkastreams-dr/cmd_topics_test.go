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

func TestTopicsNothingSelected(t *testing.T) {
	brokers := startCluster(t, map[string]string{"orders": ""})
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: ["order-processor-*-changelog"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), t.TempDir()))

	tests := []struct {
		name   string
		args   []string
		stdout string
	}{
		{"table", nil, "TOPIC"},
		{"json", []string{"--json"}, `"topic": "orders"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error", "topics", "-c", cfg}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d (a backup would refuse this config)\nstderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not show the decisions (%q):\n%s", tt.stdout, stdout)
			}
			for _, w := range []string{
				"1 topic on the cluster, 0 selected",
				`Error: no topic selected: source.topics.include ["order-processor-*-changelog"] (line 5 of ` + cfg + `) matches no topic that can be backed up`,
				"fix source.topics.include",
			} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestPrintDecisionsClass(t *testing.T) {
	tests := []struct {
		name  string
		d     topicfilter.Decision
		class string
	}{
		// The table's CLASS is --json's class, with the broker_internal
		// flag as a marker (new-user pass, issue 12: the table said
		// "internal" where --json says "external").
		{"broker-internal topic is marked", topicfilter.Decision{Topic: "__consumer_offsets", Class: topicfilter.External, BrokerInternal: true}, "external (broker-internal)"},
		{"topic the broker flags internal is marked", topicfilter.Decision{Topic: "flagged", Class: topicfilter.External, BrokerInternal: true}, "external (broker-internal)"},
		{"input topic is external", topicfilter.Decision{Topic: "orders", Class: topicfilter.External}, "external"},
		{"source changelog says so", topicfilter.Decision{Topic: "customers", Class: topicfilter.Changelog, SourceChangelog: true}, "changelog (source)"},
		{"repartition topic", topicfilter.Decision{Topic: "app-x-repartition", Class: topicfilter.Repartition}, "repartition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, _ := testStreams()
			printDecisions(s.Out, []topicfilter.Decision{tt.d})
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("table:\n%s", out)
			}
			cols := strings.Split(lines[1], "  ")
			var fields []string
			for _, c := range cols {
				if c = strings.TrimSpace(c); c != "" {
					fields = append(fields, c)
				}
			}
			if len(fields) < 2 || fields[1] != tt.class {
				t.Errorf("CLASS column of %q = %q, want %q", lines[1], fields, tt.class)
			}
		})
	}
}

// TestSummarizeTopicsByRole: with a topology the summary counts the
// selected topics by role, not by name's class (new-user pass, issue 12:
// "(5 changelog, 5 external)" for a topology's inputs and outputs); by
// name it keeps the class counts.
func TestSummarizeTopicsByRole(t *testing.T) {
	d := func(role string, parts int, sel bool) topicfilter.Decision {
		class := topicfilter.External
		if role == topicfilter.RoleChangelog {
			class = topicfilter.Changelog
		}
		return topicfilter.Decision{Class: class, Role: role, Partitions: parts, Selected: sel}
	}
	top := &topicfilter.AppTopology{From: `topology file "app.txt"`}
	ds := []topicfilter.Decision{d("input", 1, true), d("input", 1, true), d("output", 2, true), d("changelog", 3, true),
		d("repartition", 4, false), d("", 1, false), {Class: topicfilter.External, Partitions: 1, Selected: true, SchemaRegistry: true}}
	want := `7 topics on the cluster, 5 selected (2 inputs, 1 output, 1 changelog, 1 schema registry topic) with 8 partitions; topology: topology file "app.txt"`
	if got := summarizeTopics(ds, top); got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	if got, want := summarizeTopics(ds[:4], nil), "4 topics on the cluster, 4 selected (1 changelog, 3 external) with 7 partitions; classified by name (no topology)"; got != want {
		t.Errorf("by name: summary = %q, want %q", got, want)
	}
}

func TestSummarizeDecisionsPlurals(t *testing.T) {
	changelog := topicfilter.Decision{Class: topicfilter.Changelog, Partitions: 1, Selected: true}
	external := topicfilter.Decision{Class: topicfilter.External, Partitions: 2, Selected: true}
	tests := []struct {
		name string
		ds   []topicfilter.Decision
		want string
	}{
		{"no topic", nil, "0 topics on the cluster, 0 selected (0 changelog, 0 external) with 0 partitions"},
		{"one topic with one partition", []topicfilter.Decision{changelog}, "1 topic on the cluster, 1 selected (1 changelog, 0 external) with 1 partition"},
		{"two topics", []topicfilter.Decision{changelog, external}, "2 topics on the cluster, 2 selected (1 changelog, 1 external) with 3 partitions"},
		{"one of two selected", []topicfilter.Decision{external, {Class: topicfilter.External}}, "2 topics on the cluster, 1 selected (0 changelog, 1 external) with 2 partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarizeDecisions(tt.ds); got != tt.want {
				t.Errorf("summary = %q, want %q", got, tt.want)
			}
		})
	}
}
