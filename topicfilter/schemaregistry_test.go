package topicfilter

import (
	"errors"
	"strings"
	"testing"
)

// TestPlanSchemaRegistryTopic: the registry's storage topic is selected,
// flagged and External whatever the filter says, and a "*" include that
// also matches it does not warn that it is another system's topic.
func TestPlanSchemaRegistryTopic(t *testing.T) {
	topics := []TopicInfo{{Name: "_schemas", Partitions: 1, Compacted: true}, {Name: "app-store-changelog", Partitions: 2}, {Name: "orders", Partitions: 2}, {Name: "registry-app-changelog", Partitions: 1}}
	tests := []struct {
		name             string
		registry         string
		include, exclude []string
		wantSelected     bool
	}{
		{"not matched by the include", "_schemas", []string{"orders"}, nil, true},
		{"matched by a star include", "_schemas", []string{"*"}, nil, true},
		{"excluded by the filter", "_schemas", []string{"*"}, []string{"_*"}, true},
		{"named like a changelog of the app", "registry-app-changelog", []string{"orders"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, ws, err := Plan(mustFilter(t, tt.include, tt.exclude), Classifier{ApplicationID: "registry-app"}, topics, PlanOptions{SchemaRegistryTopic: tt.registry})
			if err != nil {
				t.Fatal(err)
			}
			d := decisionFor(t, ds, tt.registry)
			if !d.Selected || !d.SchemaRegistry || d.Class != External || !strings.Contains(d.Reason, "schema_registry.topic") {
				t.Errorf("decision %+v: want selected, schema_registry, external, a reason naming schema_registry.topic", d)
			}
			if w := warningsContaining(ws, "another system"); len(w) > 0 {
				t.Errorf("warnings %q about the registry topic", w)
			}
			for _, o := range ds {
				if o.Topic != tt.registry && o.SchemaRegistry {
					t.Errorf("topic %q flagged schema_registry", o.Topic)
				}
			}
		})
	}
	// Without the option nothing changes: "_schemas" is another system's.
	ds, ws, err := Plan(mustFilter(t, []string{"*"}, nil), Classifier{}, topics, PlanOptions{})
	if err != nil || decisionFor(t, ds, "_schemas").SchemaRegistry || len(warningsContaining(ws, `"_schemas" looks like another system's topic`)) != 1 {
		t.Errorf("without the option: %+v %q %v", decisionFor(t, ds, "_schemas"), ws, err)
	}
}

// TestPlanSchemaRegistryTopicMissing: a registry topic that does not exist
// is a *MissingTopicsError naming schema_registry.topic, or a warning with
// AllowMissing.
func TestPlanSchemaRegistryTopicMissing(t *testing.T) {
	topics := []TopicInfo{{Name: "orders", Partitions: 1}}
	ds, _, err := Plan(mustFilter(t, []string{"orders", "payments"}, nil), Classifier{}, topics, PlanOptions{SchemaRegistryTopic: "_schemas"})
	var me *MissingTopicsError
	if !errors.As(err, &me) || me.SchemaRegistryTopic != "_schemas" || len(me.Topics) != 1 {
		t.Fatalf("err %v (%#v): want a MissingTopicsError naming payments and _schemas", err, me)
	}
	for _, w := range []string{`include names topic "payments"`, `schema_registry.topic names topic "_schemas", which does not exist`, "allow_missing"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if !decisionFor(t, ds, "orders").Selected {
		t.Error("orders not selected")
	}
	_, ws, err := Plan(mustFilter(t, []string{"orders"}, nil), Classifier{}, topics, PlanOptions{SchemaRegistryTopic: "_schemas", AllowMissing: true})
	if err != nil || len(warningsContaining(ws, `schema_registry.topic names topic "_schemas"`)) != 1 {
		t.Errorf("allow missing: warnings %q, err %v", ws, err)
	}
}

// TestPlanSchemaRegistryTopicOfTheApplication is a second new-user fault
// of issue 12: schema_registry.topic naming a topic the topology (here a
// streams group's, which only Plan sees) names as the application's own
// (input, output, repartition topic, changelog) was selected as the
// registry's: CLASS external, a repartition topic backed up whole as
// data, a changelog as an external topic. Plan refuses it with a
// *SchemaRegistryTopicError naming the topic, its role and the fix, and
// the topic keeps its role in the decisions. So does a name the naming
// rule makes a repartition topic or changelog of the application.
func TestPlanSchemaRegistryTopicOfTheApplication(t *testing.T) {
	top := &AppTopology{From: `streams group "shop" on the source cluster (StreamsGroupDescribe)`, OutputsKnown: true,
		TopologyTopics: TopologyTopics{Inputs: []string{"orders"}, Outputs: []string{"totals"},
			Repartition: []string{"shop-by-category-repartition"}, Changelogs: []string{"shop-counts-store-changelog"}}}
	topics := []TopicInfo{{Name: "orders", Partitions: 2}, {Name: "totals", Partitions: 2},
		{Name: "shop-by-category-repartition", Partitions: 2}, {Name: "shop-counts-store-changelog", Partitions: 2, Compacted: true},
		{Name: "shop-other-store-changelog", Partitions: 2, Compacted: true}}
	tests := []struct {
		name     string
		topology *AppTopology
		registry string
		role     string
	}{
		{"repartition topic of the topology", top, "shop-by-category-repartition", "repartition topic of the topology"},
		{"changelog of the topology", top, "shop-counts-store-changelog", "changelog of the topology"},
		{"input of the topology", top, "orders", "input topic of the topology"},
		{"output of the topology", top, "totals", "output topic of the topology"},
		{"changelog by the naming rule", nil, "shop-other-store-changelog", "changelog of the application"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classifier{ApplicationID: "shop", Topology: tt.topology}
			ds, _, err := Plan(mustFilter(t, []string{"orders"}, nil), c, topics, PlanOptions{SchemaRegistryTopic: tt.registry, AllowTopologyMismatch: true})
			var se *SchemaRegistryTopicError
			if !errors.As(err, &se) || se.Topic != tt.registry {
				t.Fatalf("err %v: want a *SchemaRegistryTopicError naming %q", err, tt.registry)
			}
			for _, w := range []string{tt.registry, tt.role, "schema_registry.topic", "kafkastore.topic"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if d := decisionFor(t, ds, tt.registry); d.SchemaRegistry {
				t.Errorf("decision %+v: still the registry's topic", d)
			}
		})
	}
}
