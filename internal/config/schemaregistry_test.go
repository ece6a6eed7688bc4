package config

import (
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
