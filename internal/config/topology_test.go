package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIncludeIsOptional: a source without topics.include is accepted
// (issue 12: the topology then selects; the commands refuse at run time
// when there is no topology either). Before, "source.topics.include is
// required" refused it.
func TestIncludeIsOptional(t *testing.T) {
	for _, y := range []string{
		strings.Replace(base, "  topics:\n    include: [orders, \"app-*-changelog\"]\n", "", 1),
		strings.Replace(base, "include: [orders, \"app-*-changelog\"]", "exclude: [scratch-*]", 1),
	} {
		c, err := Parse([]byte(y), "t.yaml")
		if err != nil {
			t.Fatalf("Parse:\n%s\n%v", y, err)
		}
		if len(c.Source.Topics.Include) != 0 {
			t.Errorf("include %q", c.Source.Topics.Include)
		}
	}
}

const describeText = `Topologies:
   Sub-topology: 0
    Source: src (topics: [orders])
      --> none
`

// TestTopologyFile: topology_file is resolved against the config file's
// directory, read and parsed by LoadAndCheckFiles (config validate), and
// refused at its line when it is missing, not a describe() text, empty,
// or given without application_id.
func TestTopologyFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.topology.txt"), []byte(describeText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("Topologies:\n   Sub-topology: 0\n    Banana: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, y string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadAndCheckFiles(write("ok.yaml", base+"topology_file: app.topology.txt\ndead_letter_queue_topics: [orders-dlq]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "app.topology.txt"); c.TopologyFile != want {
		t.Errorf("topology_file %q, want %q", c.TopologyFile, want)
	}
	if len(c.DeadLetterQueueTopics) != 1 || c.DeadLetterQueueTopics[0] != "orders-dlq" {
		t.Errorf("dead_letter_queue_topics %q", c.DeadLetterQueueTopics)
	}
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"missing file", base + "topology_file: nope.txt\n", []string{"topology_file", filepath.Join(dir, "nope.txt"), "does not exist", "relative to the config file", "line 9"}},
		{"not a description", base + "topology_file: bad.txt\n", []string{"topology_file", `line 3: "Banana: x" is not a sub-topology`, "line 9"}},
		{"empty", base + "topology_file: \"\"\n", []string{"topology_file is empty", "line 9"}},
		{"no application_id", strings.Replace(base, "application_id: app\n", "", 1) + "topology_file: app.topology.txt\n", []string{"topology_file needs application_id", "line 8"}},
		{"dead-letter topic name", base + "dead_letter_queue_topics: [\"a b\"]\n", []string{`dead_letter_queue_topics[0] "a b" is not a topic name`, "line 9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadAndCheckFiles(write(strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestAllowTopologyMismatch decodes source.topics.allow_topology_mismatch.
func TestAllowTopologyMismatch(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(base, "  topics:\n", "  topics:\n    allow_topology_mismatch: true\n", 1)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Source.Topics.AllowTopologyMismatch {
		t.Error("allow_topology_mismatch not decoded")
	}
}

// TestTopologyFileNotARegularFile is a regression test (new-user pass:
// topology_file: /dev/zero was read until the host ran out of memory, a
// FIFO blocked forever): topology_file is read as every file a config
// names, a regular file of at most MaxFileBytes, refused at its line
// naming the file otherwise. /dev/null stands for a device: read, it
// ends at once.
func TestTopologyFileNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "t.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(describeText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, file, want string }{
		{"fifo", fifo, "named pipe (FIFO), not a regular file"},
		{"device", "/dev/null", "character device, not a regular file"},
		{"directory", dir, "directory, not a regular file"},
		{"too large", big, "1 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".yaml")
			if err := os.WriteFile(p, []byte(base+"topology_file: "+tt.file+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadAndCheckFiles(p); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("still reading after 20s")
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range []string{"topology_file", "line 9", tt.file, tt.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSourceChangelogTopicsAgainstTheTopology is a regression test
// (new-user pass): source_changelog_topics listing a repartition topic
// made the backup copy it as data as a "changelog (source topic)" and drop
// its in-flight tail; an output or a real changelog listed there became a
// source changelog. config validate refuses, at the entry's line, a
// declared source changelog that the topology_file names as a repartition
// topic, an output, a dead-letter topic or a changelog (an input is
// consistent), and without a topology one that is a repartition topic by
// name.
func TestSourceChangelogTopicsAgainstTheTopology(t *testing.T) {
	dir := t.TempDir()
	const top = `Topologies:
   Sub-topology: 0
    Source: s (topics: [orders])
      --> agg
    Processor: agg (stores: [counts])
      --> k
      <-- s
    Sink: k (topic: counts-repartition)
      <-- agg
  Sub-topology: 1
    Source: s2 (topics: [counts-repartition])
      --> out
    Sink: out (topic: order-counts)
      <-- s2
`
	if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte(top), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, extra string
		want        []string // nil: accepted
	}{
		{"repartition by name", "source_changelog_topics: [other-x-repartition]\n", []string{"source_changelog_topics[0]", `"other-x-repartition"`, "repartition topic", "remove it from source_changelog_topics", "line 9"}},
		{"fk-join by name", "source_changelog_topics: [app-x-subscription-registration-topic]\n", []string{"source_changelog_topics[0]", "foreign-key-join"}},
		{"the topology's repartition topic", "topology_file: app.txt\nsource_changelog_topics: [app-counts-repartition]\n", []string{"source_changelog_topics[0]", "repartition topic", "remove it"}},
		{"an output", "topology_file: app.txt\nsource_changelog_topics: [order-counts]\n", []string{"source_changelog_topics[0]", `"order-counts"`, "output topic of the topology", "remove it from source_changelog_topics", "line 10"}},
		{"a changelog", "topology_file: app.txt\nsource_changelog_topics: [app-counts-changelog]\n", []string{"changelog of the topology"}},
		{"a dead-letter topic", "dead_letter_queue_topics: [orders-dlq]\nsource_changelog_topics: [orders-dlq]\n", []string{"source_changelog_topics[0]", "dead_letter_queue_topics"}},
		{"an input", "topology_file: app.txt\nsource_changelog_topics: [orders]\n", nil},
		{"no topology, a plain name", "source_changelog_topics: [customers]\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(base+tt.extra), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadAndCheckFiles(p)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestDeadLetterQueueTopicsThatCannotBe is a regression test (new-user
// pass): dead_letter_queue_topics entries that cannot be dead-letter
// topics were silently ignored. A broker-internal name and a duplicate are
// errors at their line; an entry named as a repartition topic or a
// changelog, or one topology_file names as an input, a repartition topic
// or a changelog, is refused naming its role.
func TestDeadLetterQueueTopicsThatCannotBe(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte(describeText), 0o600); err != nil { // reads orders
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, extra string
		want        []string
	}{
		{"broker-internal", "dead_letter_queue_topics: [__consumer_offsets]\n", []string{"dead_letter_queue_topics[0]", "broker-internal", "line 9"}},
		{"duplicate", "dead_letter_queue_topics: [dlq, dlq]\n", []string{"dead_letter_queue_topics[1]", `"dlq"`, "twice", "line 9"}},
		{"repartition by name", "dead_letter_queue_topics: [app-x-repartition]\n", []string{"dead_letter_queue_topics[0]", "repartition topic"}},
		{"changelog by name", "dead_letter_queue_topics: [app-x-changelog]\n", []string{"dead_letter_queue_topics[0]", "changelog"}},
		{"an input of the topology", "topology_file: app.txt\ndead_letter_queue_topics: [orders]\n", []string{"dead_letter_queue_topics[0]", `"orders"`, "input topic of the topology", "line 10"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(base+tt.extra), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadAndCheckFiles(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
