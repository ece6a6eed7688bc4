package topicfilter_test

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TestTopologyTopics: the three Topology#describe() texts of
// ../shared/topologies (copied to testdata with their sources: a
// multi-line one with a suppress, the old one-line format of Kafka's
// WordCount tutorial, and the foreign-key join of Kafka's KStreamImplTest) and the
// drill app's own (e2e/streams-app/topology.txt) parse and classify to
// these tables (issue 12). Internal topics get the application.id
// prefix, as on the broker.
func TestTopologyTopics(t *testing.T) {
	tests := []struct {
		file, app string
		optimized bool
		want      topicfilter.TopologyTopics
		subs      int
	}{
		{"topology-02.txt", "streams-wordcount", false, topicfilter.TopologyTopics{
			Inputs: []string{"streams-plaintext-input"}, Outputs: []string{"streams-wordcount-output"},
			Repartition: []string{"streams-wordcount-counts-store-repartition"},
			Changelogs:  []string{"streams-wordcount-counts-store-changelog"},
		}, 2},
		{"topology-01.txt", "event-mirror-streams", false, topicfilter.TopologyTopics{
			Inputs: []string{"my-event"}, Outputs: []string{"my-aggregation"},
			Repartition: []string{"event-mirror-streams-chunk-num-aggregation-repartition", "event-mirror-streams-user-id-aggregation-repartition"},
			Changelogs: []string{"event-mirror-streams-KTABLE-SUPPRESS-STATE-STORE-0000000007-changelog",
				"event-mirror-streams-chunk-num-aggregation-changelog", "event-mirror-streams-user-id-aggregation-changelog"},
		}, 3},
		{"topology-03.txt", "app", false, topicfilter.TopologyTopics{
			Inputs: []string{"input1", "input2"}, Outputs: []string{"output"},
			Repartition: []string{"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", "app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"},
			Changelogs: []string{"app-KSTREAM-TOTABLE-STATE-STORE-0000000002-changelog", "app-KSTREAM-TOTABLE-STATE-STORE-0000000005-changelog",
				"app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog"},
		}, 2},
		{"drill-app.txt", "drill-app", false, topicfilter.TopologyTopics{
			Inputs: []string{"drill-categories", "drill-events"}, Outputs: []string{"drill-counts", "drill-labeled", "drill-window-counts"},
			Repartition: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic", "drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic", "drill-app-by-category-repartition"},
			Changelogs: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog", "drill-app-category-labels-store-changelog",
				"drill-app-counts-store-changelog", "drill-app-latest-by-user-store-changelog", "drill-app-window-counts-store-changelog"},
			SourceTables: []string{"category-labels-store <- drill-categories"},
		}, 3},
		// With topology.optimization=all the source table's store reuses
		// its input topic as changelog: a source-topic changelog, no
		// "-changelog" topic.
		{"drill-app.txt", "drill-app", true, topicfilter.TopologyTopics{
			Inputs: []string{"drill-categories", "drill-events"}, Outputs: []string{"drill-counts", "drill-labeled", "drill-window-counts"},
			Repartition: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic", "drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic", "drill-app-by-category-repartition"},
			Changelogs: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog",
				"drill-app-counts-store-changelog", "drill-app-latest-by-user-store-changelog", "drill-app-window-counts-store-changelog"},
			SourceTables: []string{"category-labels-store <- drill-categories"},
		}, 3},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "topologies", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		top, err := topicfilter.ParseTopology(string(b))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if len(top.SubTopologies) != tt.subs {
			t.Errorf("%s: %d sub-topologies, want %d", tt.file, len(top.SubTopologies), tt.subs)
		}
		if got := top.Topics(tt.app, tt.optimized); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s (optimized %v):\n got %+v\nwant %+v", tt.file, tt.optimized, got, tt.want)
		}
	}
}

// TestParseTopologyNodes: the nodes of both formats, with their topics,
// stores and arrows.
func TestParseTopologyNodes(t *testing.T) {
	old := `Sub-topologies:
  Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000(topics: a,b) --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001(stores: [s1, s2]) --> KSTREAM-SINK-0000000002 <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002(topic: out) <-- KSTREAM-MAP-0000000001
Global Stores:
  none`
	top, err := topicfilter.ParseTopology(old)
	if err != nil {
		t.Fatal(err)
	}
	want := []topicfilter.Node{
		{Kind: topicfilter.SourceNode, Name: "KSTREAM-SOURCE-0000000000", Topics: []string{"a", "b"}, Successors: []string{"KSTREAM-MAP-0000000001"}},
		{Kind: topicfilter.ProcessorNode, Name: "KSTREAM-MAP-0000000001", Stores: []string{"s1", "s2"}, Successors: []string{"KSTREAM-SINK-0000000002"}, Predecessors: []string{"KSTREAM-SOURCE-0000000000"}},
		{Kind: topicfilter.SinkNode, Name: "KSTREAM-SINK-0000000002", Topic: "out", Predecessors: []string{"KSTREAM-MAP-0000000001"}},
	}
	if len(top.SubTopologies) != 1 || !reflect.DeepEqual(top.SubTopologies[0].Nodes, want) {
		t.Fatalf("one-line format: %+v", top)
	}
	multi := `Topologies:
   Sub-topology: 0
    Source: src (topics: orders-.*)
      --> proc
    Processor: proc (stores: [])
      --> none
      <-- src
   Sub-topology: 1 for global store (will not generate tasks)
    Source: gsrc (topics: [countries])
      --> gproc
    Processor: gproc (stores: [countries-store])
      --> none
      <-- gsrc
`
	top, err = topicfilter.ParseTopology(multi)
	if err != nil {
		t.Fatal(err)
	}
	got := top.Topics("app", false)
	if !reflect.DeepEqual(got.Patterns, []string{"orders-.*"}) || got.Inputs != nil || !reflect.DeepEqual(got.GlobalInputs, []string{"countries"}) || got.Changelogs != nil {
		t.Fatalf("a pattern source and a global store: %+v", got)
	}
	if n := top.SubTopologies[0].Nodes[1]; n.Successors != nil || len(n.Predecessors) != 1 {
		t.Errorf("'--> none' is no successor: %+v", n)
	}
}

// TestParseTopologyRefusesWhatIsNotADescription names the line.
func TestParseTopologyRefusesWhatIsNotADescription(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"hello", `no "Topologies:" line`},
		{"Topologies:\n   Sub-topology: 0\n    Banana: x (topics: [a])\n", `line 3: "Banana: x (topics: [a])" is not`},
		{"Topologies:\n    Source: x (topics: [a])\n", `line 2`},
	} {
		if _, err := topicfilter.ParseTopology(tt.text); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTopology(%q) = %v, want an error with %q", tt.text, err, tt.want)
		}
	}
}

// FuzzParseTopology: any text either parses or is refused with an error,
// never a panic, with allocations in proportion to the text; what parses
// classifies, and every topic it names is in exactly one of inputs,
// outputs and repartition topics. Seeds: testdata/topologies, committed
// as testdata/fuzz/FuzzParseTopology.
func FuzzParseTopology(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "topologies", "*.txt"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Topologies:\n   Sub-topology: 0\n    Source: s (topics: [a, a])\n      --> none\n    Sink: k (topic: a)\n      <-- s\n")
	f.Fuzz(func(t *testing.T, text string) {
		var top *topicfilter.Topology
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		top, err = topicfilter.ParseTopology(text)
		runtime.ReadMemStats(&after)
		// What parsing allocates grows with the text, not with a count in it.
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20+64*uint64(len(text)) {
			t.Fatalf("a %d-byte topology allocated %d bytes parsing it (%v)", len(text), grown, err)
		}
		if err != nil {
			return
		}
		got := top.Topics("app", false)
		seen := map[string]int{}
		for _, name := range slices.Concat(got.Inputs, got.Outputs) {
			seen[name]++
		}
		for _, name := range got.Repartition {
			seen[strings.TrimPrefix(name, "app-")]++ // as the topology names it
		}
		for name, n := range seen {
			if n != 1 {
				t.Fatalf("topic %q classified %d times: %+v", name, n, got)
			}
		}
	})
}

// TestParseTopologyRefusesTruncatedText is a regression test (new-user
// pass): the first 30 lines of the drill app's describe() were accepted
// (3 of 11 topics selected, a processor named as an input topic). A text
// whose arrows name nodes it never defines, or with a sub-topology number
// twice, is refused naming the line and the node and asking for the whole
// output of Topology#describe(). Long lines are quoted cut short.
func TestParseTopologyRefusesTruncatedText(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "topologies", "drill-app.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	head30 := strings.Join(lines[:30], "")
	dup := "Topologies:\n   Sub-topology: 0\n    Source: a (topics: [x])\n      --> none\n   Sub-topology: 0\n    Source: b (topics: [y])\n      --> none\n"
	oneLine := "Sub-topologies:\n  Sub-topology: 0\n    Source: s(topics: in) --> p\n    Processor: p(stores: []) --> k <-- s\n"
	for _, tt := range []struct {
		name, text string
		want       []string
	}{
		{"head -30", head30, []string{"line 23", `node "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000021"`, `successor "KTABLE-SINK-0000000022"`, "truncated or garbled", "whole output of Topology#describe()"}},
		{"one-line format", oneLine, []string{"line 4", `node "p"`, `successor "k"`, "truncated"}},
		{"predecessor", "Topologies:\n   Sub-topology: 0\n    Sink: k (topic: out)\n      <-- gone\n", []string{"line 4", `predecessor "gone"`}},
		{"duplicate sub-topology", dup, []string{"line 5", `"Sub-topology: 0"`, "line 2", "garbled"}},
		{"long line", "Topologies:\n   Sub-topology: 0\n" + strings.Repeat("x", 5000) + "\n", []string{"line 3", "..."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := topicfilter.ParseTopology(tt.text)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

// TestParseTopologyIgnoresBOM is a regression test (new-user pass): a
// text saved with a UTF-8 byte order mark was "no Topologies: line".
func TestParseTopologyIgnoresBOM(t *testing.T) {
	top, err := topicfilter.ParseTopology("\uFEFFTopologies:\n   Sub-topology: 0\n    Source: s (topics: [in])\n      --> none\n")
	if err != nil || len(top.SubTopologies) != 1 {
		t.Fatalf("%+v, %v", top, err)
	}
}
