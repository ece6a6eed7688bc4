package topicfilter

import (
	"strings"
	"testing"
)

// TestPlanWarnsOnGeneratedStoreAfterAPrefix: a selected changelog whose
// store name is "<something>-" followed by a name Kafka Streams generates
// (KSTREAM-...-NNNNNNNNNN, KTABLE-..., or a join's ...-NNNNNNNNNN-store)
// is most likely an internal topic of another application.id (or of a
// named topology) that starts with this application.id: the warning names
// that application.id and the keys to set (issue 9: orders-app-v1's
// changelog was backed up as orders-app's when orders-app-v1 had no
// consumer group). A generated name with nothing before it, a user's
// store name, and a source KTable's "<topic>-STATE-STORE-NNNNNNNNNN" do not
// warn (field case 03, lists L2 and L3).
func TestPlanWarnsOnGeneratedStoreAfterAPrefix(t *testing.T) {
	tests := []struct {
		name    string
		c       Classifier
		topic   string
		warning string // "" for none
	}{
		{"another app's aggregate store", Classifier{ApplicationID: "orders-app"},
			"orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog",
			`changelog "orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog" is taken as store "v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004" of application.id orders-app, but Kafka Streams generates "KSTREAM-AGGREGATE-STATE-STORE-0000000004" with nothing before it: it is probably an internal topic of application.id "orders-app-v1" (add it to other_application_ids) or of a named topology (add "orders-app-v1" to internal_topic_prefixes)`},
		{"another app's join store", Classifier{ApplicationID: "dev"},
			"dev-consumer-KSTREAM-JOINOTHER-0000000021-store-changelog", `application.id "dev-consumer"`},
		{"another app's suppress store, several words", Classifier{ApplicationID: "streams"},
			"streams-id-x-KTABLE-SUPPRESS-STATE-STORE-0000000010-changelog", `application.id "streams-id-x"`},
		{"a generated store of this app", Classifier{ApplicationID: "dev-consumer"},
			"dev-consumer-KSTREAM-JOINOTHER-0000000021-store-changelog", ""},
		{"a named store of this app", Classifier{ApplicationID: "dev-consumer"}, "dev-consumer-ss-pulse-counts-changelog", ""},
		{"a source KTable's store is named after its topic", Classifier{InternalPrefixes: []string{"unique_topic_prefix-FKJ-topology"}},
			"unique_topic_prefix-FKJ-topology-input-stream-2-STATE-STORE-0000000000-changelog", ""},
		{"the other app is declared: not selected, no warning", Classifier{ApplicationID: "orders-app", OtherApplicationIDs: []string{"orders-app-v1"}},
			"orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog", ""},
		{"the named topology is declared: no warning", Classifier{ApplicationID: "app", InternalPrefixes: []string{"app", "app-count-topology"}},
			"app-count-topology-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, []string{"*"}, nil)
			_, warnings, err := Plan(f, tt.c, []TopicInfo{{Name: tt.topic, Partitions: 1}}, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warnings {
				if strings.Contains(w, "Kafka Streams generates") {
					got = append(got, w)
				}
			}
			switch {
			case tt.warning == "" && len(got) > 0:
				t.Errorf("unexpected warning: %q", got)
			case tt.warning != "" && (len(got) != 1 || !strings.Contains(got[0], tt.warning)):
				t.Errorf("warnings %q, want one containing %q", got, tt.warning)
			}
		})
	}
}
