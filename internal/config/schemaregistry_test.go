package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaRegistry: the schema_registry section enables the registry's
// storage topic, "_schemas" unless it names another; no section, no topic.
func TestSchemaRegistry(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *SchemaRegistry
	}{
		{"absent", base, nil},
		{"empty mapping takes the default topic", base + "schema_registry: {}\n", &SchemaRegistry{Topic: "_schemas"}},
		{"no value takes the default topic", base + "schema_registry:\n", &SchemaRegistry{Topic: "_schemas"}},
		{"a named topic", base + "schema_registry:\n  topic: registry-journal\n", &SchemaRegistry{Topic: "registry-journal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "schema_registry", c.SchemaRegistry, tt.want)
		})
	}
}

func TestSchemaRegistryErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty topic", base + "schema_registry:\n  topic: \"\"\n", []string{"schema_registry.topic is empty", `default "_schemas"`, "line 10"}},
		{"not a topic name", base + "schema_registry:\n  topic: my schemas\n", []string{`schema_registry.topic "my schemas" is not a topic name`, "line 10"}},
		{"broker-internal", base + "schema_registry:\n  topic: __schemas\n", []string{"broker-internal", "line 10"}},
		{"unknown key", base + "schema_registry:\n  enabled: true\n", []string{"unknown key schema_registry.enabled", "line 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSchemaRegistryTopicOfTheApplication is a second new-user fault of
// issue 12: schema_registry.topic could name one of the application's own
// topics (a repartition topic, a changelog, a listed source changelog or
// dead-letter topic, an input of the topology_file); the topic was then
// backed up whole as the registry's (a repartition topic as data, a
// changelog as an external topic). Each is a config error at its line
// naming the topic, its role and the fix.
func TestSchemaRegistryTopicOfTheApplication(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.topology.txt"), []byte(describeText), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"repartition topic by name", base + "schema_registry:\n  topic: app-by-category-repartition\n",
			[]string{`schema_registry.topic "app-by-category-repartition"`, "repartition topic of the application", "line 10", "kafkastore.topic"}},
		{"changelog by name", base + "schema_registry:\n  topic: app-counts-store-changelog\n",
			[]string{`schema_registry.topic "app-counts-store-changelog"`, "changelog of the application", "line 10"}},
		{"a listed source changelog", base + "source_changelog_topics: [labels]\nschema_registry:\n  topic: labels\n",
			[]string{`schema_registry.topic "labels"`, "source_changelog_topics", "line 11"}},
		{"a listed dead-letter topic", base + "dead_letter_queue_topics: [orders-dlq]\nschema_registry:\n  topic: orders-dlq\n",
			[]string{`schema_registry.topic "orders-dlq"`, "dead_letter_queue_topics", "line 11"}},
		{"an input of the topology file", base + "topology_file: app.topology.txt\nschema_registry:\n  topic: orders\n",
			[]string{`schema_registry.topic "orders"`, "input topic of the topology", "line 11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadAndCheckFiles(p)
			if err == nil {
				t.Fatal("config accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A topic of another system is still fine.
	if _, err := Parse([]byte(base+"schema_registry:\n  topic: registry-journal\n"), "t.yaml"); err != nil {
		t.Errorf("registry-journal: %v", err)
	}
}
