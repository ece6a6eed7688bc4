package topicfilter

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// described reads a topology of testdata/topologies as application app's.
func described(t *testing.T, file, app string) *AppTopology {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "topologies", file))
	if err != nil {
		t.Fatal(err)
	}
	top, err := DescribedTopology(string(b), app, "topology file "+file)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// infos makes a topic list of names, one partition each.
func infos(names ...string) []TopicInfo {
	out := make([]TopicInfo, len(names))
	for i, n := range names {
		out[i] = TopicInfo{Name: n, Partitions: 1}
	}
	return out
}

// verdicts renders decisions as topic -> "role selected|-" for pinning.
func verdicts(ds []Decision) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		sel := "-"
		if d.Selected {
			sel = "selected"
		}
		role := d.Role
		if role == "" {
			role = "none"
		}
		out[d.Topic] = role + " " + string(d.Class) + " " + sel
	}
	return out
}

// TestPlanWithTopology: the three topologies of ../shared/topologies
// (testdata/topologies) and field case 04's, with a cluster topic list
// of their topics and a few unrelated ones, through Plan without an
// include: the topology selects exactly its inputs, outputs and
// changelogs; repartition and FK-join topics and topics it does not name
// are not selected (issue 12).
func TestPlanWithTopology(t *testing.T) {
	tests := []struct {
		name, file, app string
		topics          []string
		want            map[string]string
		warnHas         []string
	}{
		{"topology-01, multi-line with a suppress", "topology-01.txt", "event-mirror-streams", []string{
			"my-event", "my-aggregation",
			"event-mirror-streams-chunk-num-aggregation-repartition", "event-mirror-streams-user-id-aggregation-repartition",
			"event-mirror-streams-KTABLE-SUPPRESS-STATE-STORE-0000000007-changelog", "event-mirror-streams-chunk-num-aggregation-changelog",
			"event-mirror-streams-user-id-aggregation-changelog",
			"unrelated", "__consumer_offsets",
		}, map[string]string{
			"my-event":       "input external selected",
			"my-aggregation": "output external selected",
			"event-mirror-streams-chunk-num-aggregation-repartition":                "repartition repartition -",
			"event-mirror-streams-user-id-aggregation-repartition":                  "repartition repartition -",
			"event-mirror-streams-KTABLE-SUPPRESS-STATE-STORE-0000000007-changelog": "changelog changelog selected",
			"event-mirror-streams-chunk-num-aggregation-changelog":                  "changelog changelog selected",
			"event-mirror-streams-user-id-aggregation-changelog":                    "changelog changelog selected",
			"unrelated":          "none external -",
			"__consumer_offsets": "none external -",
		}, nil},
		{"topology-02, the old one-line format; a changelog not yet created", "topology-02.txt", "streams-wordcount", []string{
			"streams-plaintext-input", "streams-wordcount-output", "streams-wordcount-counts-store-repartition", "other-app-input",
		}, map[string]string{
			"streams-plaintext-input":                    "input external selected",
			"streams-wordcount-output":                   "output external selected",
			"streams-wordcount-counts-store-repartition": "repartition repartition -",
			"other-app-input":                            "none external -",
		}, []string{`the topology's changelog "streams-wordcount-counts-store-changelog" does not exist on the cluster: its store has logging disabled, or the application has not created it yet`}},
		{"topology-03, a foreign-key join", "topology-03.txt", "app", []string{
			"input1", "input2", "output",
			"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", "app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic",
			"app-KSTREAM-TOTABLE-STATE-STORE-0000000002-changelog", "app-KSTREAM-TOTABLE-STATE-STORE-0000000005-changelog",
			"app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog", "input3",
		}, map[string]string{
			"input1": "input external selected",
			"input2": "input external selected",
			"output": "output external selected",
			"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic":    "repartition repartition -",
			"app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic":        "repartition repartition -",
			"app-KSTREAM-TOTABLE-STATE-STORE-0000000002-changelog":             "changelog changelog selected",
			"app-KSTREAM-TOTABLE-STATE-STORE-0000000005-changelog":             "changelog changelog selected",
			"app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog": "changelog changelog selected",
			"input3": "none external -",
		}, nil},
		// Field case 04: with topology.optimization=all no
		// "-catalog-store-changelog" exists; the table's input is its
		// store's changelog, with no source_changelog_topics declaration.
		{"field case 04, a source table's input is its changelog", "case04-inventory-app.txt", "inventory-app", []string{
			"product-catalog", "stock-moves", "stock-levels",
		}, map[string]string{
			"product-catalog": "source-changelog changelog selected",
			"stock-moves":     "input external selected",
			"stock-levels":    "output external selected",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classifier{ApplicationID: tt.app, Topology: described(t, tt.file, tt.app)}
			ds, ws, err := Plan(mustFilter(t, nil, nil), c, infos(tt.topics...), PlanOptions{})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := verdicts(ds); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("verdicts:\n got %v\nwant %v", got, tt.want)
			}
			for _, w := range tt.warnHas {
				if !slices.ContainsFunc(ws, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning with %q in %q", w, ws)
				}
			}
			if len(tt.warnHas) == 0 && len(ws) > 0 {
				t.Errorf("unexpected warnings %q", ws)
			}
			for _, d := range ds {
				if d.Selected != strings.HasPrefix(d.Reason, "selected: ") {
					t.Errorf("%s: reason %q", d.Topic, d.Reason)
				}
			}
		})
	}
}

// TestPlanTopologySourceChangelogReason: field case 04 (a source table's
// input reused as its store's changelog): its source changelog says
// which store restores from it and why, and that its "-changelog" topic
// is absent (so no warning says the changelog is missing); when that
// changelog does exist, the input is a plain input.
func TestPlanTopologySourceChangelogReason(t *testing.T) {
	c := Classifier{ApplicationID: "inventory-app", Topology: described(t, "case04-inventory-app.txt", "inventory-app")}
	ds, _, err := Plan(mustFilter(t, nil, nil), c, infos("product-catalog", "stock-moves"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := decisionFor(t, ds, "product-catalog")
	want := `selected: source-topic changelog: an input a store restores from (store "catalog-store" restores from it: no "inventory-app-catalog-store-changelog" topic exists (topology.optimization=all / reuse.ktable.source.topics))`
	if d.Reason != want || !d.SourceChangelog {
		t.Errorf("reason %q (source changelog %v), want %q", d.Reason, d.SourceChangelog, want)
	}
	ds, _, err = Plan(mustFilter(t, nil, nil), c, infos("product-catalog", "stock-moves", "inventory-app-catalog-store-changelog"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(ds); got["product-catalog"] != "input external selected" || got["inventory-app-catalog-store-changelog"] != "changelog changelog selected" {
		t.Errorf("without the optimization: %v", got)
	}
}

// TestPlanTopologyPrefixCollision: field case 03's KAFKA-14922 with a
// topology: my-app-v1's internal topics start with "my-app-", but the
// topology of my-app does not name them, so they are not my-app's, with no
// consumer group of my-app-v1 and no other_application_ids; the reason
// names the likely application.id. An include "*" that matches them warns.
func TestPlanTopologyPrefixCollision(t *testing.T) {
	text := `Topologies:
   Sub-topology: 0
    Source: src (topics: [orders])
      --> agg
    Processor: agg (stores: [counts-store])
      --> sink
      <-- src
    Sink: sink (topic: order-counts)
      <-- agg
`
	top, err := DescribedTopology(text, "my-app", "topology file my-app.txt")
	if err != nil {
		t.Fatal(err)
	}
	topics := infos("orders", "order-counts", "my-app-counts-store-changelog",
		"my-app-v1-counts-store-changelog", "my-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog", "my-app-v1-by-user-repartition")
	c := Classifier{ApplicationID: "my-app", Topology: top}
	for _, include := range [][]string{nil, {"*"}} {
		ds, ws, err := Plan(mustFilter(t, include, nil), c, topics, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := selectedNames(ds), []string{"my-app-counts-store-changelog", "order-counts", "orders"}; !slices.Equal(got, want) {
			t.Errorf("include %q: selected %q, want %q", include, got, want)
		}
		for _, topic := range []string{"my-app-v1-counts-store-changelog", "my-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog", "my-app-v1-by-user-repartition"} {
			d := decisionFor(t, ds, topic)
			want := `not selected: an internal-topic name under "my-app-" that the topology (topology file my-app.txt) does not name: not this application's, probably an internal topic of application.id "my-app-v1" (KAFKA-14922)`
			if d.Reason != want || d.OtherApplicationID != "my-app-v1" || d.Class != External {
				t.Errorf("include %q, %s: reason %q, other %q, class %s; want %q", include, topic, d.Reason, d.OtherApplicationID, d.Class, want)
			}
		}
		nwarn := 0
		for _, w := range ws {
			if strings.Contains(w, "an internal-topic name the topology (topology file my-app.txt) does not name") {
				nwarn++
			}
		}
		if include == nil && nwarn != 0 || include != nil && nwarn != 3 {
			t.Errorf("include %q: %d prefix-collision warnings in %q", include, nwarn, ws)
		}
	}
}

// TestPlanTopologyMismatch: with an include and a topology, a topology
// input, changelog or source changelog the patterns leave out is refused
// with the exact fix; an output left out is a warning; with
// AllowTopologyMismatch the refusals are warnings.
func TestPlanTopologyMismatch(t *testing.T) {
	c := Classifier{ApplicationID: "inventory-app", Topology: described(t, "case04-inventory-app.txt", "inventory-app")}
	topics := infos("product-catalog", "stock-moves", "stock-levels")
	o := PlanOptions{IncludeKey: "source.topics.include (line 7)", ExcludeKey: "source.topics.exclude (line 9)"}
	_, ws, err := Plan(mustFilter(t, []string{"stock-*"}, []string{"stock-moves"}), c, topics, o)
	var me *TopologyMismatchError
	if !errors.As(err, &me) {
		t.Fatalf("err %v, want a *TopologyMismatchError", err)
	}
	want := []string{
		`source-topic changelog "product-catalog" (topology file case04-inventory-app.txt) is not selected: add "product-catalog" to source.topics.include (line 7)`,
		`input topic "stock-moves" (topology file case04-inventory-app.txt) is not selected: it is excluded by pattern "stock-moves": remove the pattern from source.topics.exclude (line 9) or narrow it`,
	}
	if !slices.Equal(me.Fixes, want) {
		t.Errorf("fixes\n %q\nwant\n %q", me.Fixes, want)
	}
	if !strings.Contains(err.Error(), "source.topics.allow_topology_mismatch: true") {
		t.Errorf("error does not name the override: %v", err)
	}
	if len(ws) != 0 {
		t.Errorf("warnings %q", ws)
	}

	// An output left out is a warning, not a refusal.
	ds, ws, err := Plan(mustFilter(t, []string{"product-catalog", "stock-moves"}, nil), c, topics, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := selectedNames(ds); !slices.Equal(got, []string{"product-catalog", "stock-moves"}) {
		t.Errorf("selected %q", got)
	}
	if w := `output topic "stock-levels" (topology file case04-inventory-app.txt) is not selected: add "stock-levels" to source.topics.include (line 7) (outputs are not needed to restore the application's state)`; !slices.Contains(ws, w) {
		t.Errorf("warnings %q, want %q", ws, w)
	}

	// The override.
	o.AllowTopologyMismatch = true
	ds, ws, err = Plan(mustFilter(t, []string{"stock-*"}, []string{"stock-moves"}), c, topics, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := selectedNames(ds); !slices.Equal(got, []string{"stock-levels"}) {
		t.Errorf("selected %q", got)
	}
	if len(ws) != 2 || !strings.HasPrefix(ws[0], want[0]) || !strings.HasSuffix(ws[0], "(source.topics.allow_topology_mismatch: true: backed up without it)") {
		t.Errorf("warnings %q", ws)
	}
}

// TestPlanTopologyRoles: patterns (Java regular expressions matched whole,
// as Pattern.matcher().matches()), global stores' inputs, dead-letter
// topics, a topic both read and written, and a streams group's topology
// that cannot name outputs.
func TestPlanTopologyRoles(t *testing.T) {
	top := &AppTopology{From: "test", OutputsKnown: true, TopologyTopics: TopologyTopics{
		Inputs: []string{"events", "loop"}, Patterns: []string{`orders-\d+`, `(?>atomic)`}, Outputs: []string{"loop", "out"},
		GlobalInputs: []string{"countries"}, Changelogs: []string{"app-s-changelog"},
	}}
	topics := infos("events", "loop", "out", "orders-1", "orders-12x", "xorders-1", "countries", "app-s-changelog", "app-dlq", "atomic")
	c := Classifier{ApplicationID: "app", Topology: top, DeadLetterTopics: []string{"app-dlq"}}
	ds, ws, err := Plan(mustFilter(t, nil, nil), c, topics, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"events":          "input external selected",
		"loop":            "input external selected",
		"out":             "output external selected",
		"orders-1":        "input external selected",
		"orders-12x":      "none external -",
		"xorders-1":       "none external -",
		"countries":       "global-input external selected",
		"app-s-changelog": "changelog changelog selected",
		"app-dlq":         "dead-letter external selected",
		"atomic":          "none external -",
	}
	if got := verdicts(ds); !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts\n got %v\nwant %v", got, want)
	}
	if d := decisionFor(t, ds, "loop"); !strings.Contains(d.Reason, "the application also writes it") {
		t.Errorf("loop: %q", d.Reason)
	}
	if d := decisionFor(t, ds, "orders-1"); !strings.Contains(d.Reason, `matches the topology's source pattern "orders-\\d+"`) {
		t.Errorf("orders-1: %q", d.Reason)
	}
	if !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `source pattern "(?>atomic)" cannot be read as a Go regular expression`)
	}) {
		t.Errorf("no warning for the untranslatable pattern: %q", ws)
	}

	// A streams group's topology without its describe() text cannot name
	// outputs: "out" is not called one.
	top.OutputsKnown = false
	ds, _, err = Plan(mustFilter(t, nil, nil), c, topics, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(ds); got["out"] != "none external -" || got["loop"] != "input external selected" {
		t.Errorf("outputs unknown: out %q, loop %q", got["out"], got["loop"])
	}
}

// TestJavaPattern: a topology's source pattern is anchored at both ends
// like Pattern.matcher(topic).matches(); what RE2 cannot do is refused.
func TestJavaPattern(t *testing.T) {
	for _, tt := range []struct {
		pattern, topic string
		match          bool
	}{
		{`orders-.*`, "orders-eu", true},
		{`orders-.*`, "xorders-eu", false},
		{`a|b`, "ab", false},
		{`a|b`, "b", true},
		{`\Qa.b\E`, "a.b", true},
		{`\Qa.b\E`, "axb", false},
	} {
		re, err := javaPattern(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if re.MatchString(tt.topic) != tt.match {
			t.Errorf("%q matches %q: %v, want %v", tt.pattern, tt.topic, !tt.match, tt.match)
		}
	}
	for _, p := range []string{`a*+`, `(?=a)a`, `(a)\1`, `[a-z&&[^b]]`} {
		if _, err := javaPattern(p); err == nil {
			t.Errorf("%q: no error", p)
		}
	}
}

// TestDescribedTopology needs the application.id, names its source, and
// digests the text.
func TestDescribedTopology(t *testing.T) {
	if _, err := DescribedTopology("Topologies:\n", "", "topology file x.txt"); err == nil || !strings.Contains(err.Error(), "set application_id") {
		t.Errorf("no application.id: %v", err)
	}
	if _, err := DescribedTopology("nonsense", "app", "topology file x.txt"); err == nil || !strings.HasPrefix(err.Error(), "topology file x.txt: topology description") {
		t.Errorf("not a description: %v", err)
	}
	a := described(t, "topology-02.txt", "streams-wordcount")
	b := described(t, "topology-01.txt", "streams-wordcount")
	if len(a.Digest) != 64 || a.Digest == b.Digest || a.SHA256() != a.Digest {
		t.Errorf("digests %q %q", a.Digest, b.Digest)
	}
	var none *AppTopology
	c := &AppTopology{TopologyTopics: TopologyTopics{Inputs: []string{"a"}}}
	d := &AppTopology{TopologyTopics: TopologyTopics{Inputs: []string{"b"}}}
	if none.SHA256() != "" || len(c.SHA256()) != 64 || c.SHA256() == d.SHA256() {
		t.Errorf("SHA256 of nil %q, of topic lists %q %q", none.SHA256(), c.SHA256(), d.SHA256())
	}
}

// TestPlanTopologyTopicReadBack: describe() names a topic both written by
// a sink and read by a source (a user topic the application writes and
// reads back, KStream#through or to + stream) like an internal
// repartition topic; on the cluster it exists under its own name, not
// the prefixed one, so it is an input, with a note. A dead-letter topic
// an include leaves out is a warning, not a refusal.
func TestPlanTopologyTopicReadBack(t *testing.T) {
	text := `Topologies:
   Sub-topology: 0
    Source: a (topics: [events])
      --> b
    Sink: b (topic: events-rekeyed)
      <-- a
   Sub-topology: 1
    Source: c (topics: [events-rekeyed])
      --> none
`
	top, err := DescribedTopology(text, "app", "topology file app.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := Classifier{ApplicationID: "app", Topology: top, DeadLetterTopics: []string{"app-dlq"}}
	ds, _, err := Plan(mustFilter(t, nil, nil), c, infos("events", "events-rekeyed", "app-dlq"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := decisionFor(t, ds, "events-rekeyed")
	if d.Role != RoleInput || !d.Selected || !strings.Contains(d.Reason, "the application also writes it") {
		t.Errorf("events-rekeyed: role %q selected %v reason %q", d.Role, d.Selected, d.Reason)
	}
	_, ws, err := Plan(mustFilter(t, []string{"events*"}, nil), c, infos("events", "events-rekeyed", "app-dlq"), PlanOptions{})
	if err != nil {
		t.Fatalf("a dead-letter topic left out is no refusal: %v", err)
	}
	if w := `dead-letter queue topic "app-dlq" (topology file app.txt) is not selected: add "app-dlq" to source.topics.include (outputs are not needed to restore the application's state)`; !slices.Contains(ws, w) {
		t.Errorf("warnings %q, want %q", ws, w)
	}
}

// TestFKJoinTopicReason is a regression test (new-user pass): the
// topology's foreign-key-join subscription topics were called
// "repartition topic of the topology"; their role stays repartition.
func TestFKJoinTopicReason(t *testing.T) {
	top := described(t, "drill-app.txt", "drill-app")
	f, err := NewFilter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fk := "drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic"
	ds, _, err := Plan(f, Classifier{ApplicationID: "drill-app", Topology: top}, infos("drill-events", fk, "drill-app-by-category-repartition"), PlanOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		switch d.Topic {
		case fk:
			if d.Role != RoleRepartition || !strings.Contains(d.Reason, "foreign-key-join subscription topic of the topology") {
				t.Errorf("%s: role %q, reason %q", d.Topic, d.Role, d.Reason)
			}
		case "drill-app-by-category-repartition":
			if d.Role != RoleRepartition || !strings.Contains(d.Reason, "repartition topic of the topology") {
				t.Errorf("%s: role %q, reason %q", d.Topic, d.Role, d.Reason)
			}
		}
	}
}

// TestPlanMissingTopologyInputIsRefused is a regression test (new-user
// pass): a topology input (or global store input) missing from the
// cluster was only a warning, while a missing literal include is an
// error. It is a *MissingTopicsError naming the topology as the source,
// a warning with AllowMissing; a missing changelog stays a warning.
func TestPlanMissingTopologyInputIsRefused(t *testing.T) {
	top := &AppTopology{From: `topology file "app.txt"`, OutputsKnown: true, TopologyTopics: TopologyTopics{
		Inputs: []string{"orders"}, GlobalInputs: []string{"rates"}, Changelogs: []string{"app-s-changelog"}}}
	f, err := NewFilter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := Classifier{ApplicationID: "app", Topology: top}
	_, ws, err := Plan(f, c, infos("unrelated"), PlanOptions{})
	var missing *MissingTopicsError
	if !errors.As(err, &missing) || !reflect.DeepEqual(missing.TopologyInputs, []string{"orders", "rates"}) {
		t.Fatalf("err %v (%+v)", err, missing)
	}
	for _, w := range []string{`topology file "app.txt"`, `"orders"`, `"rates"`, "do not exist on the cluster", "source.topics.allow_missing: true"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, `changelog "app-s-changelog" does not exist`) }) {
		t.Errorf("no changelog warning: %q", ws)
	}
	_, ws, err = Plan(f, c, infos("unrelated"), PlanOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `input topic "orders"`) && strings.Contains(w, "does not exist on the cluster")
	}) {
		t.Errorf("no warning for the missing input: %q", ws)
	}
}

// TestPlanTopologyPatternMatchingNothingWarns is a regression test
// (new-user pass): a topology source pattern that matched no topic gave
// no warning in topics and backup.
func TestPlanTopologyPatternMatchingNothingWarns(t *testing.T) {
	top := &AppTopology{From: `topology file "app.txt"`, OutputsKnown: true, TopologyTopics: TopologyTopics{Patterns: []string{"clicks-.*"}}}
	f, err := NewFilter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, ws, err := Plan(f, Classifier{ApplicationID: "app", Topology: top}, infos("orders"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `source pattern "clicks-.*"`) && strings.Contains(w, "matches no topic") && strings.Contains(w, "input may be missing")
	}) {
		t.Errorf("no warning for the pattern: %q", ws)
	}
}

// TestPlanMissingDeadLetterTopicWarns is a regression test (new-user
// pass): a dead_letter_queue_topics entry not on the cluster was silently
// ignored. It is a warning saying the application creates it on its first
// dead letter and the backup copies it once it exists.
func TestPlanMissingDeadLetterTopicWarns(t *testing.T) {
	f, err := NewFilter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	top := &AppTopology{From: "x", OutputsKnown: true, TopologyTopics: TopologyTopics{Inputs: []string{"orders"}}}
	_, ws, err := Plan(f, Classifier{ApplicationID: "app", Topology: top, DeadLetterTopics: []string{"app-dlq"}}, infos("orders"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `dead-letter queue topic "app-dlq"`) && strings.Contains(w, "first dead letter (KIP-1034") && strings.Contains(w, "once it exists")
	}) {
		t.Errorf("no warning: %q", ws)
	}
}

// TestPlanIgnoresAContradictingSourceChangelog is a regression test
// (new-user pass): with a topology from the broker (a streams group, not
// checked at the config), a repartition topic declared in
// source_changelog_topics was selected as a source changelog and copied
// as data. The topology's role wins, with a warning naming the fix.
func TestPlanIgnoresAContradictingSourceChangelog(t *testing.T) {
	top := &AppTopology{From: `streams group "app"`, OutputsKnown: true, TopologyTopics: TopologyTopics{
		Inputs: []string{"orders"}, Repartition: []string{"app-x-repartition"}}}
	f, err := NewFilter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, ws, err := Plan(f, Classifier{ApplicationID: "app", Topology: top, SourceChangelogTopics: []string{"app-x-repartition"}}, infos("orders", "app-x-repartition"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Topic == "app-x-repartition" && (d.Selected || d.Role != RoleRepartition || d.SourceChangelog) {
			t.Errorf("%+v", d)
		}
	}
	if !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `"app-x-repartition"`) && strings.Contains(w, "remove it from source_changelog_topics")
	}) {
		t.Errorf("no warning: %q", ws)
	}
	if slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, "include it") }) {
		t.Errorf("a warning asks to include it: %q", ws)
	}
}
