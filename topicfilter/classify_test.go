package topicfilter

import (
	"strings"
	"testing"
)

type classRow struct {
	topic           string
	class           Class
	sourceChangelog bool
}

// checkClasses classifies every topic of a field case's list and compares with the
// expected table, which must cover the list exactly.
func checkClasses(t *testing.T, c Classifier, topics []TopicInfo, want []classRow) {
	t.Helper()
	wantBy := map[string]classRow{}
	for _, w := range want {
		wantBy[w.topic] = w
	}
	if len(wantBy) != len(topics) {
		t.Fatalf("expected table has %d topics, list has %d", len(wantBy), len(topics))
	}
	for _, ti := range topics {
		w, ok := wantBy[ti.Name]
		if !ok {
			t.Errorf("topic %q missing from the expected table", ti.Name)
			continue
		}
		class, src, reason := c.Classify(ti.Name)
		if class != w.class || src != w.sourceChangelog {
			t.Errorf("Classify(%q) = %s, sourceChangelog=%v (%s); want %s, %v", ti.Name, class, src, reason, w.class, w.sourceChangelog)
		}
		if reason == "" {
			t.Errorf("Classify(%q): empty reason", ti.Name)
		}
	}
}

func countClasses(c Classifier, topics []TopicInfo) map[Class]int {
	n := map[Class]int{}
	for _, ti := range topics {
		class, _, _ := c.Classify(ti.Name)
		n[class]++
	}
	return n
}

// TestClassifyInternalTopicsL1 is field case 03's list L1
// (docs/DOMAIN.md#field-case-03: internal topics that naming rules miss).
func TestClassifyInternalTopicsL1(t *testing.T) {
	c := Classifier{ApplicationID: "streamsId"}
	topics := loadTopics(t, "case03-L1.txt")
	checkClasses(t, c, topics, []classRow{
		{"rest-api", External, false},
		{"streamsId-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog", Changelog, false},
		{"streamsId-KTABLE-SUPPRESS-STATE-STORE-0000000010-changelog", Changelog, false},
		{"sensor-data-raw", External, false},
		{"streamsId-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition", Repartition, false},
		{"sensor-data-aggregation-streams", External, false},
	})
	// Field case 03 A1: exactly 2 changelogs, 1 repartition, 3 external.
	got := countClasses(c, topics)
	if got[Changelog] != 2 || got[Repartition] != 1 || got[External] != 3 {
		t.Errorf("counts = %v, want 2 changelog, 1 repartition, 3 external", got)
	}
}

// TestClassifyInternalTopicsL2 is field case 03's list L2: changelogs of
// generated and named stores, a processor-named repartition topic.
func TestClassifyInternalTopicsL2(t *testing.T) {
	checkClasses(t, Classifier{ApplicationID: "dev-consumer"}, loadTopics(t, "case03-L2.txt"), []classRow{
		{"__consumer_offsets", External, false}, // broker-internal; Plan never selects it (field case 01)
		{"alerts", External, false},
		{"body-temp-events", External, false},
		{"dev-consumer-KSTREAM-JOINOTHER-0000000021-store-changelog", Changelog, false},
		{"dev-consumer-KSTREAM-JOINTHIS-0000000020-store-changelog", Changelog, false},
		{"dev-consumer-KSTREAM-MAP-0000000011-repartition", Repartition, false},
		{"dev-consumer-KTABLE-SUPPRESS-STATE-STORE-0000000006-changelog", Changelog, false},
		{"dev-consumer-ss-pulse-counts-changelog", Changelog, false},
		{"pulse-events", External, false},
	})
}

// TestClassifyInternalTopicsL3NamedTopologies is field case 03's list L3:
// named topologies, whose prefix is not the application.id, FK-join topics,
// and changelog names that embed input topic names.
func TestClassifyInternalTopicsL3NamedTopologies(t *testing.T) {
	c := Classifier{
		ApplicationID:    "unique_topic_prefix",
		InternalPrefixes: []string{"unique_topic_prefix-FKJ-topology", "unique_topic_prefix-count-topology"},
	}
	checkClasses(t, c, loadTopics(t, "case03-L3.txt"), []classRow{
		{"unique_topic_prefix-count-topology-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition", Repartition, false},
		{"unique_topic_prefix-count-topology-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog", Changelog, false},
		{"unique_topic_prefix-FKJ-topology-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", Repartition, false},
		{"unique_topic_prefix-FKJ-topology-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic", Repartition, false},
		{"unique_topic_prefix-FKJ-topology-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog", Changelog, false},
		{"unique_topic_prefix-FKJ-topology-input-stream-2-STATE-STORE-0000000000-changelog", Changelog, false},
		{"unique_topic_prefix-FKJ-topology-input-stream-3-STATE-STORE-0000000003-changelog", Changelog, false},
		{"input-stream-1", External, false},
		{"input-stream-2", External, false},
		{"input-stream-3", External, false},
	})
}

// TestClassify covers the internal-topic rule row by row: the suffix set of
// StreamsResetter.matchesInternalTopicFormat (field case 03 A3), the prefix
// requirement (A4), prefix collisions (field case 02 A3, KAFKA-14922),
// pseudo topics (field case 03 A5), source changelogs (field case 04) and
// suffix-only classification (docs/DOMAIN.md#internal-topics).
func TestClassify(t *testing.T) {
	app := Classifier{ApplicationID: "appId"}
	tests := []struct {
		name            string
		c               Classifier
		topic           string
		class           Class
		sourceChangelog bool
		reasonHas       string
	}{
		// Field case 03 A3: the suffix set, including the rows of Kafka's
		// StreamsResetterTest.shouldDetermineInternalTopicBasedOnTopicName1.
		{"suffix -changelog is a changelog", app, "appId-store-changelog", Changelog, false, `changelog of store "store" (application.id prefix "appId")`},
		{"changelog of a named topology names its internal prefix", Classifier{ApplicationID: "appId", InternalPrefixes: []string{"appId-topo"}}, "appId-topo-store-changelog", Changelog, false, `changelog of store "store" (internal prefix "appId-topo")`},
		{"suffix -repartition is a repartition topic", app, "appId-KSTREAM-MAP-0000000011-repartition", Repartition, false, `repartition topic (suffix "-repartition" after the application.id prefix "appId")`},
		{"named FK-join response topic is repartition", app, "appId-named-subscription-response-topic", Repartition, false, "-subscription-response-topic"},
		{"named FK-join registration topic is repartition", app, "appId-named-subscription-registration-topic", Repartition, false, "-subscription-registration-topic"},
		{"generated FK-join response topic is repartition", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-12323232-topic", Repartition, false, "KTABLE-FK-JOIN"},
		{"generated FK-join registration topic is repartition", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", Repartition, false, "KTABLE-FK-JOIN"},
		{"FK-join subscription store changelog is a changelog", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog", Changelog, false, "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010"},
		{"FK-join topic without digits is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION--topic", External, false, "no internal-topic suffix"},
		{"FK-join topic with non-digits is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-00a6-topic", External, false, "no internal-topic suffix"},
		{"FK-join topic with other kind is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-0000000006-topic", External, false, "no internal-topic suffix"},
		{"suffix match is case-sensitive", app, "appId-store-Changelog", External, false, "no internal-topic suffix"},
		{"suffix must end the name", app, "appId-store-changelog-v2", External, false, "no internal-topic suffix"},
		{"overlapping prefix and suffix pass Kafka's rule", app, "appId-changelog", Changelog, false, `store ""`},
		// Field case 03 A5: schema-registry pseudo topics do not end in "-topic".
		{"FK-join pseudo topic -fk is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-fk", External, false, "no internal-topic suffix"},
		{"FK-join pseudo topic -pk is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-pk", External, false, "no internal-topic suffix"},
		{"FK-join pseudo topic -vh is external", app, "appId-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic-vh", External, false, "no internal-topic suffix"},
		// Field case 03 A4: the suffix alone never makes a topic internal when the
		// application is known.
		{"changelog suffix without prefix is external", Classifier{ApplicationID: "dev-consumer"}, "customer-changelog", External, false, `does not start with "dev-consumer-"`},
		{"repartition suffix without prefix is external", app, "other-x-repartition", External, false, `does not start with "appId-"`},
		{"prefix needs the dash", app, "appIdx-store-changelog", External, false, `does not start with "appId-"`},
		// Field case 02 A3 / KAFKA-14922: one application.id the prefix of another's.
		{"longer other application.id owns the topic", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, "my-app-v1-counts-changelog", External, false, "internal topic of application.id my-app-v1"},
		{"longer other application.id owns repartition topics too", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, "my-app-v1-orders-repartition", External, false, "KAFKA-14922"},
		{"own topic beside a longer other application.id stays own", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, "my-app-counts-changelog", Changelog, false, `changelog of store "counts"`},
		{"longer own application.id beats shorter other", Classifier{ApplicationID: "my-app-v1", OtherApplicationIDs: []string{"my-app"}}, "my-app-v1-counts-changelog", Changelog, false, `changelog of store "counts"`},
		{"own application.id listed as other is ignored", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app"}}, "my-app-counts-changelog", Changelog, false, "changelog of store"},
		{"other application's internal topic without shared prefix", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"billing"}}, "billing-totals-changelog", External, false, "internal topic of application.id billing"},
		{"other application's output topic stays external", Classifier{ApplicationID: "my-app", OtherApplicationIDs: []string{"my-app-v1"}}, "my-app-v1-results", External, false, "no internal-topic suffix"},
		{"without other ids a colliding topic cannot be told apart", Classifier{ApplicationID: "my-app"}, "my-app-v1-counts-changelog", Changelog, false, `changelog of store "v1-counts"`},
		// Field case 04: source-topic changelogs.
		{"declared source changelog is a changelog", Classifier{ApplicationID: "inventory-app", SourceChangelogTopics: []string{"product-catalog"}}, "product-catalog", Changelog, true, "input topic reused as changelog"},
		{"undeclared compacted input stays external", Classifier{ApplicationID: "inventory-app"}, "product-catalog", External, false, "input or output topic"},
		// L4: ksqlDB prefixes.
		{"ksqlDB repartition topic with its query prefix", Classifier{InternalPrefixes: []string{"_confluent-ksql-dswes-ccpclstransient_4787618039516871800_1597734035766"}}, "_confluent-ksql-dswes-ccpclstransient_4787618039516871800_1597734035766-Aggregate-groupby-repartition", Repartition, false, "repartition topic"},
		{"ksqlDB topic is external to another application", app, "_confluent-ksql-dswes-ccpclstransient_4787618039516871800_1597734035766-Aggregate-groupby-repartition", External, false, "does not start with"},
		// No application_id: suffix alone.
		{"without application id a changelog suffix is enough", Classifier{}, "customer-changelog", Changelog, false, "no application_id configured"},
		{"without application id a repartition suffix is enough", Classifier{}, "x-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-1-topic", Repartition, false, "no application_id configured"},
		{"without application id other ids are ignored", Classifier{OtherApplicationIDs: []string{"x"}}, "x-store-changelog", Changelog, false, "no application_id configured"},
		{"without application id plain names are external", Classifier{}, "orders", External, false, "no internal-topic suffix"},
		// Field case 01: broker-internal topics.
		{"broker-internal topic", app, "__consumer_offsets", External, false, "broker-internal"},
		{"broker-internal name beats a declared source changelog", Classifier{SourceChangelogTopics: []string{"__x"}}, "__x", External, false, "broker-internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, src, reason := tt.c.Classify(tt.topic)
			if class != tt.class || src != tt.sourceChangelog {
				t.Errorf("Classify(%q) = %s, %v (%s); want %s, %v", tt.topic, class, src, reason, tt.class, tt.sourceChangelog)
			}
			if !strings.Contains(reason, tt.reasonHas) {
				t.Errorf("Classify(%q) reason %q does not contain %q", tt.topic, reason, tt.reasonHas)
			}
		})
	}
}
