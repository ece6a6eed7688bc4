package main

import (
	"strings"
	"testing"
)

// TestSchemaRegistryTopicOfTheApplicationRefused is a second new-user
// fault of issue 12: `schema_registry: {topic: shop-by-category-repartition}`
// (or a changelog of the application) passed config validate and topics,
// which showed the topic CLASS external ROLE repartition SELECTED yes.
// Both refuse it (exit 2) naming the topic, its role and the fix; the
// refusal comes from the config, before any connection.
func TestSchemaRegistryTopicOfTheApplicationRefused(t *testing.T) {
	for _, topic := range []string{"shop-by-category-repartition", "shop-counts-store-changelog"} {
		cfg := writeFile(t, "app.yaml", `application_id: shop
source:
  bootstrap_servers: [127.0.0.1:1]
  topics:
    include: [orders]
storage:
  backend: filesystem
  path: `+t.TempDir()+`
schema_registry:
  topic: `+topic+`
`)
		for _, args := range [][]string{{"config", "validate", "-c", cfg}, {"topics", "-c", cfg}} {
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, `schema_registry.topic "`+topic+`"`) || !strings.Contains(stderr, "of the application") || !strings.Contains(stderr, "kafkastore.topic") {
				t.Errorf("%v with schema_registry.topic %s: exit %d, want 2 naming the topic, its role and the fix\n%s\n%s", args, topic, code, stdout, stderr)
			}
		}
	}
}
