package topicfilter

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func decisionFor(t *testing.T, ds []Decision, topic string) Decision {
	t.Helper()
	for _, d := range ds {
		if d.Topic == topic {
			return d
		}
	}
	t.Fatalf("no decision for %q", topic)
	return Decision{}
}

func warningsContaining(ws []string, s string) []string {
	var out []string
	for _, w := range ws {
		if strings.Contains(w, s) {
			out = append(out, w)
		}
	}
	return out
}

func TestPlanSelection(t *testing.T) {
	tests := []struct {
		name             string
		file             string
		c                Classifier
		include, exclude []string
		want             []string
	}{
		{"field case 01 A1: star over broker topics selects only orders", "case01-topics.txt", Classifier{}, []string{"*"}, nil, []string{"orders"}},
		{"field case 02: longer application id is not selected without exclude", "case02-topics.txt", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, []string{"my-app-*"}, nil, []string{"my-app-counts-changelog"}},
		{"field case 03 A1: L1 drops the repartition topic", "case03-L1.txt", Classifier{ApplicationID: "streamsId"}, []string{"*"}, nil, []string{
			"rest-api", "sensor-data-aggregation-streams", "sensor-data-raw",
			"streamsId-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog",
			"streamsId-KTABLE-SUPPRESS-STATE-STORE-0000000010-changelog",
		}},
		{"field case 03: L2 drops repartition and broker topics", "case03-L2.txt", Classifier{ApplicationID: "dev-consumer"}, []string{"*"}, nil, []string{
			"alerts", "body-temp-events",
			"dev-consumer-KSTREAM-JOINOTHER-0000000021-store-changelog",
			"dev-consumer-KSTREAM-JOINTHIS-0000000020-store-changelog",
			"dev-consumer-KTABLE-SUPPRESS-STATE-STORE-0000000006-changelog",
			"dev-consumer-ss-pulse-counts-changelog",
			"pulse-events",
		}},
		{"field case 03 A2: L3 drops FK-join topics", "case03-L3.txt", Classifier{InternalPrefixes: []string{"unique_topic_prefix-FKJ-topology", "unique_topic_prefix-count-topology"}}, []string{"*"}, nil, []string{
			"input-stream-1", "input-stream-2", "input-stream-3",
			"unique_topic_prefix-FKJ-topology-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog",
			"unique_topic_prefix-FKJ-topology-input-stream-2-STATE-STORE-0000000000-changelog",
			"unique_topic_prefix-FKJ-topology-input-stream-3-STATE-STORE-0000000003-changelog",
			"unique_topic_prefix-count-topology-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
		}},
		{"changelog glob from the seed config without application id", "case03-L2.txt", Classifier{}, []string{"dev-consumer-*-changelog", "alerts"}, []string{"dev-consumer-*-repartition"}, []string{
			"alerts",
			"dev-consumer-KSTREAM-JOINOTHER-0000000021-store-changelog",
			"dev-consumer-KSTREAM-JOINTHIS-0000000020-store-changelog",
			"dev-consumer-KTABLE-SUPPRESS-STATE-STORE-0000000006-changelog",
			"dev-consumer-ss-pulse-counts-changelog",
		}},
		{"field case 04: declared source changelog is selected", "case04-topics.txt", Classifier{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog"}}, []string{"*"}, nil, []string{"product-catalog", "stock-levels", "stock-moves"}},
		{"exclude beats include", "case03-L2.txt", Classifier{ApplicationID: "dev-consumer"}, []string{"*-events", "alerts"}, []string{"pulse-*", "alerts"}, []string{"body-temp-events"}},
		{"empty include selects nothing", "case03-L2.txt", Classifier{ApplicationID: "dev-consumer"}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topics := loadTopics(t, tt.file)
			ds, ws, err := Plan(mustFilter(t, tt.include, tt.exclude), tt.c, topics, PlanOptions{})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := selectedNames(ds); !slices.Equal(got, sorted(tt.want)) {
				t.Errorf("selected %q, want exactly %q\nwarnings: %q", got, sorted(tt.want), ws)
			}
			if len(ds) != len(topics) {
				t.Errorf("%d decisions for %d topics", len(ds), len(topics))
			}
			if !slices.IsSortedFunc(ds, func(a, b Decision) int { return strings.Compare(a.Topic, b.Topic) }) {
				t.Error("decisions not sorted by topic")
			}
			for _, d := range ds {
				prefix := "not selected: "
				if d.Selected {
					prefix = "selected: "
				}
				if !strings.HasPrefix(d.Reason, prefix) {
					t.Errorf("%s: reason %q does not start with %q", d.Topic, d.Reason, prefix)
				}
			}
		})
	}
}

func TestPlanReasons(t *testing.T) {
	topics := []TopicInfo{
		{Name: "__consumer_offsets", Partitions: 50, Internal: true},
		{Name: "flagged-internal", Internal: true},
		{Name: "app-store-changelog", Partitions: 6},
		{Name: "app-x-repartition"},
		{Name: "app-v2-store-changelog"},
		{Name: "orders", Partitions: 3},
		{Name: "orders-dlq"},
		{Name: "unrelated"},
	}
	c := Classifier{ApplicationID: "app", OtherApplicationIDs: []string{"app-v2"}}
	f := mustFilter(t, []string{"app-*", "orders*", "flagged-*"}, []string{"*-dlq"})
	ds, _, err := Plan(f, c, topics, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		topic     string
		selected  bool
		reasonHas string
	}{
		{"broker-internal by name", "__consumer_offsets", false, "not selected: broker-internal topic"},
		{"broker-internal by metadata flag", "flagged-internal", false, "not selected: broker-internal topic (the broker flags it internal)"},
		{"changelog names its store", "app-store-changelog", true, `selected: changelog of store "store"`},
		{"repartition is never backed up", "app-x-repartition", false, `not selected: repartition topic (suffix "-repartition" after the application.id prefix "app"); repartition topics are never backed up as data: only their in-flight tail is captured`},
		{"other application's changelog", "app-v2-store-changelog", false, "not selected: internal topic of application.id app-v2"},
		{"external names the include", "orders", true, `selected: input or output topic (no internal-topic suffix); matched by include "orders*"`},
		{"excluded names the pattern", "orders-dlq", false, `not selected: excluded by pattern "*-dlq"`},
		{"no include", "unrelated", false, "not selected: no include pattern matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decisionFor(t, ds, tt.topic)
			if d.Selected != tt.selected || !strings.Contains(d.Reason, tt.reasonHas) {
				t.Errorf("%s: selected=%v reason %q; want selected=%v, reason containing %q", tt.topic, d.Selected, d.Reason, tt.selected, tt.reasonHas)
			}
		})
	}
	if d := decisionFor(t, ds, "app-v2-store-changelog"); d.OtherApplicationID != "app-v2" || d.Class != External {
		t.Errorf("other application's topic: %+v", d)
	}
	if d := decisionFor(t, ds, "__consumer_offsets"); !d.BrokerInternal || d.Partitions != 50 {
		t.Errorf("broker topic: %+v", d)
	}
}

func TestPlanWarnings(t *testing.T) {
	tests := []struct {
		name             string
		file             string
		c                Classifier
		include, exclude []string
		wantHas          []string // each must appear in exactly one warning
		wantNone         []string // must appear in no warning
	}{
		{"include that matched a repartition topic warns it was dropped", "case03-L1.txt", Classifier{ApplicationID: "streamsId"}, []string{"*"}, nil,
			[]string{`include pattern "*" matched 1 repartition topic, dropped because repartition topics are never backed up as data (only their in-flight tail is captured): streamsId-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition`}, nil},
		{"without application_id the warning says no tail is captured", "case03-L1.txt", Classifier{}, []string{"*"}, nil,
			[]string{`include pattern "*" matched 1 repartition topic, dropped because repartition topics are never backed up as data, and without application_id no in-flight tail is captured either (there is no group): a changelog restore cannot bring back records in flight: streamsId-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition`},
			[]string{"only their in-flight tail is captured"}},
		{"include that matched three repartition topics counts them", "case03-L3.txt", Classifier{InternalPrefixes: []string{"unique_topic_prefix-FKJ-topology", "unique_topic_prefix-count-topology"}}, []string{"*"}, nil,
			[]string{`include pattern "*" matched 3 repartition topics, dropped because`}, nil},
		{"excluded repartition topic does not warn", "case03-L1.txt", Classifier{ApplicationID: "streamsId"}, []string{"*"}, []string{"*-repartition"},
			nil, []string{"repartition"}},
		{"include that matched another application's topics warns", "case02-topics.txt", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, []string{"my-app-*"}, nil,
			[]string{`include pattern "my-app-*" matched 2 internal topics of application.id my-app-v1, dropped: my-app-v1-counts-changelog, my-app-v1-orders-repartition`}, nil},
		{"include that matched one topic of another application says so in the singular", "case02-topics.txt", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, []string{"my-app-*-changelog"}, nil,
			[]string{`include pattern "my-app-*-changelog" matched 1 internal topic of application.id my-app-v1, dropped: my-app-v1-counts-changelog`}, nil},
		{"include that matched topics of two other applications names both", "case02-topics.txt", Classifier{ApplicationID: "my", OtherApplicationIDs: []string{"my-app", "my-app-v1"}}, []string{"my-*"}, nil,
			[]string{`include pattern "my-*" matched 3 internal topics of application.ids my-app, my-app-v1, dropped: my-app-counts-changelog, my-app-v1-counts-changelog, my-app-v1-orders-repartition`}, nil},
		{"field case 04 A3: compacted undeclared input warns", "case04-topics.txt", Classifier{ApplicationID: "inventory-app"}, []string{"*"}, nil,
			[]string{`topic "product-catalog" is compacted and not declared in source_changelog_topics`}, []string{"stock-moves"}},
		{"field case 04: declared source changelog does not warn", "case04-topics.txt", Classifier{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog"}}, []string{"*"}, nil,
			nil, []string{"product-catalog"}},
		{"declared source changelog that is missing warns", "case04-topics.txt", Classifier{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog", "price-list"}}, []string{"*"}, nil,
			[]string{`source changelog topic "price-list" (source_changelog_topics) does not exist`}, nil},
		{"declared source changelog that is not selected warns", "case04-topics.txt", Classifier{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog"}}, []string{"stock-*"}, nil,
			[]string{`source changelog topic "product-catalog" (source_changelog_topics) is not selected`}, nil},
		{"compacted topic excluded by pattern does not warn", "case04-topics.txt", Classifier{ApplicationID: "inventory-app"}, []string{"*"}, []string{"product-*"},
			nil, []string{"product-catalog"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ws, err := Plan(mustFilter(t, tt.include, tt.exclude), tt.c, loadTopics(t, tt.file), PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.wantHas {
				if n := len(warningsContaining(ws, s)); n != 1 {
					t.Errorf("%d warnings contain %q, want 1; warnings: %q", n, s, ws)
				}
			}
			for _, s := range tt.wantNone {
				if got := warningsContaining(ws, s); len(got) > 0 {
					t.Errorf("unexpected warnings about %q: %q", s, got)
				}
			}
		})
	}
}

func TestPlanSystemTopicWarning(t *testing.T) {
	topics := []TopicInfo{{Name: "_schemas"}, {Name: "connect-offsets"}, {Name: "orders"}}
	_, ws, err := Plan(mustFilter(t, []string{"*"}, nil), Classifier{}, topics, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warningsContaining(ws, `"_schemas" looks like another system's topic`)) != 1 ||
		len(warningsContaining(ws, `"connect-offsets" looks like another system's topic`)) != 1 ||
		len(warningsContaining(ws, `"orders"`)) != 0 {
		t.Errorf("warnings %q", ws)
	}
	// Named literally: the user meant it.
	_, ws, err = Plan(mustFilter(t, []string{"_schemas"}, nil), Classifier{}, topics, PlanOptions{})
	if err != nil || len(ws) != 0 {
		t.Errorf("literal _schemas: warnings %q, err %v", ws, err)
	}
}

func TestPlanMissingLiteralInclude(t *testing.T) {
	topics := loadTopics(t, "case01-topics.txt")
	f := mustFilter(t, []string{"orders", "payments", "audit.events", "orders-*"}, nil)

	ds, _, err := Plan(f, Classifier{}, topics, PlanOptions{})
	var me *MissingTopicsError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *MissingTopicsError", err)
	}
	if want := []string{"audit.events", "payments"}; !slices.Equal(me.Topics, want) {
		t.Errorf("missing %q, want %q", me.Topics, want)
	}
	for _, s := range []string{`"audit.events"`, `"payments"`, "create the topics", "fix the name", "source.topics.allow_missing: true"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if got := selectedNames(ds); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("decisions still returned with the error: selected %q, want [orders]", got)
	}

	ds, ws, err := Plan(f, Classifier{}, topics, PlanOptions{AllowMissing: true})
	if err != nil {
		t.Fatalf("AllowMissing: %v", err)
	}
	if len(warningsContaining(ws, `include names topic "payments", which does not exist`)) != 1 ||
		len(warningsContaining(ws, `include names topic "audit.events", which does not exist`)) != 1 {
		t.Errorf("AllowMissing warnings %q", ws)
	}
	if got := selectedNames(ds); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("AllowMissing selected %q", got)
	}
}

func TestPlanMissingTopicsMessage(t *testing.T) {
	tests := []struct {
		name    string
		include []string
		want    string
	}{
		{"one missing topic", []string{"payments"},
			`include names topic "payments", which does not exist on the cluster; create the topic, fix the name, or set source.topics.allow_missing: true`},
		{"two missing topics", []string{"payments", "audit.events"},
			`include names topics "audit.events", "payments", which do not exist on the cluster; create the topics, fix the names, or set source.topics.allow_missing: true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Plan(mustFilter(t, tt.include, nil), Classifier{}, nil, PlanOptions{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant   %s", err, tt.want)
			}
		})
	}
}

// TestPlanReasonsSayEachThingOnce pins the full reason of each kind of
// decision, which must not repeat itself ("repartition topic; repartition
// topics are never backed up ...; repartition topic (...)").
func TestPlanReasonsSayEachThingOnce(t *testing.T) {
	topics := []TopicInfo{
		{Name: "__consumer_offsets", Internal: true},
		{Name: "order-processor-totals-repartition"},
		{Name: "order-processor-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"},
		{Name: "order-processor-totals-changelog"},
		{Name: "order-processor-v2-counts-changelog"},
		{Name: "orders"},
		{Name: "customers"},
		{Name: "payments-changelog"},
	}
	app := Classifier{ApplicationID: "order-processor", OtherApplicationIDs: []string{"order-processor-v2"}, SourceChangelogTopics: []string{"customers"}}
	tests := []struct {
		name    string
		c       Classifier
		include []string
		topic   string
		want    string
	}{
		{"repartition topic", app, []string{"*"}, "order-processor-totals-repartition",
			`not selected: repartition topic (suffix "-repartition" after the application.id prefix "order-processor"); repartition topics are never backed up as data: only their in-flight tail is captured`},
		{"foreign-key-join topic", app, []string{"*"}, "order-processor-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic",
			`not selected: repartition topic (foreign-key-join name "-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-<n>-topic" after the application.id prefix "order-processor"); repartition topics are never backed up as data: only their in-flight tail is captured`},
		{"repartition topic of a named topology", Classifier{InternalPrefixes: []string{"order-processor-totals"}}, []string{"*"}, "order-processor-totals-repartition",
			`not selected: repartition topic (suffix "-repartition" after the internal prefix "order-processor-totals"); repartition topics are never backed up as data, and without application_id no in-flight tail is captured either (there is no group): a changelog restore cannot bring back records in flight`},
		{"repartition topic without application id", Classifier{}, []string{"*"}, "order-processor-totals-repartition",
			`not selected: repartition topic by suffix "-repartition" alone (no application_id configured, so the topic may belong to any application); repartition topics are never backed up as data, and without application_id no in-flight tail is captured either (there is no group): a changelog restore cannot bring back records in flight`},
		{"repartition topic no include matches", app, []string{"orders"}, "order-processor-totals-repartition",
			`not selected: no include pattern matches; repartition topic (suffix "-repartition" after the application.id prefix "order-processor")`},
		{"changelog", app, []string{"*"}, "order-processor-totals-changelog",
			`selected: changelog of store "totals" (application.id prefix "order-processor")`},
		{"other application's changelog", app, []string{"*"}, "order-processor-v2-counts-changelog",
			`not selected: internal topic of application.id order-processor-v2 (suffix "-changelog"): its name also starts with "order-processor-", but it belongs to the longer application.id (KAFKA-14922); back it up with that application's configuration`},
		{"broker-internal topic", app, []string{"*"}, "__consumer_offsets",
			`not selected: broker-internal topic (name starts with "__"); never backed up`},
		{"input topic", app, []string{"ord*"}, "orders",
			`selected: input or output topic (no internal-topic suffix); matched by include "ord*"`},
		{"source changelog", app, []string{"*"}, "customers",
			`selected: input topic reused as changelog of a source KTable store (declared in source_changelog_topics)`},
		{"changelog-like name of another system", app, []string{"*"}, "payments-changelog",
			`selected: input or output topic: it has the internal-topic suffix "-changelog" but does not start with "order-processor-", so it is not an internal topic of this application; matched by include "*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, _, err := Plan(mustFilter(t, tt.include, nil), tt.c, topics, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := decisionFor(t, ds, tt.topic).Reason; got != tt.want {
				t.Errorf("reason = %s\nwant     %s", got, tt.want)
			}
		})
	}
}

// TestPlanReasonsRepeatNoPhrase checks every reason over the case topic
// lists for a repeated two-word phrase (such as "repartition topic").
func TestPlanReasonsRepeatNoPhrase(t *testing.T) {
	classifiers := []Classifier{
		{},
		{ApplicationID: "streamsId"},
		{ApplicationID: "dev-consumer"},
		{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}},
		{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog"}},
		{InternalPrefixes: []string{"unique_topic_prefix-FKJ-topology", "unique_topic_prefix-count-topology"}},
	}
	for _, file := range []string{"case01-topics.txt", "case02-topics.txt", "case03-L1.txt", "case03-L2.txt", "case03-L3.txt", "case04-topics.txt"} {
		topics := loadTopics(t, file)
		for _, c := range classifiers {
			for _, include := range [][]string{{"*"}, {"no-such-topic-*"}} {
				ds, _, err := Plan(mustFilter(t, include, []string{"*-dlq"}), c, topics, PlanOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds {
					words := strings.Fields(strings.ToLower(strings.NewReplacer(";", " ", ",", " ", "(", " ", ")", " ", ":", " ").Replace(d.Reason)))
					seen := map[string]bool{}
					for i := 0; i+2 <= len(words); i++ {
						p := strings.Join(words[i:i+2], " ")
						if seen[p] {
							t.Errorf("%s, %+v: reason repeats %q: %s", file, c, p, d.Reason)
							break
						}
						seen[p] = true
					}
				}
			}
		}
	}
}

func TestPlanInputErrors(t *testing.T) {
	if _, _, err := Plan(nil, Classifier{}, nil, PlanOptions{}); err == nil {
		t.Error("nil filter: want error")
	}
	_, _, err := Plan(mustFilter(t, []string{"*"}, nil), Classifier{}, []TopicInfo{{Name: "a"}, {Name: "b"}, {Name: "a"}}, PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), `topic "a" appears twice`) {
		t.Errorf("duplicate topic: err = %v", err)
	}
}

func TestPlanDoesNotModifyInput(t *testing.T) {
	topics := []TopicInfo{{Name: "b"}, {Name: "a"}}
	if _, _, err := Plan(mustFilter(t, []string{"*"}, nil), Classifier{}, topics, PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	if topics[0].Name != "b" {
		t.Error("Plan reordered the caller's slice")
	}
}
