package topicfilter

import (
	"fmt"
	"slices"
	"strings"
)

// SchemaRegistryTopicError is returned by [Plan] when
// PlanOptions.SchemaRegistryTopic names one of the application's own
// topics ([Classifier.SchemaRegistryConflict]): a registry's storage topic
// (its kafkastore.topic) is never an input, output, repartition topic,
// changelog, source-topic changelog or dead-letter topic of the
// application, and selecting it as the registry's would back a repartition
// topic up whole as data and a changelog as an external topic. The
// decisions are returned too, with the topic in its own role.
type SchemaRegistryTopicError struct {
	Topic string
	// Why is the phrase that reads after the topic, naming its role and
	// where the role comes from, e.g. `is a repartition topic of the
	// topology (streams group "shop" on the source cluster)`.
	Why string
}

func (e *SchemaRegistryTopicError) Error() string {
	return fmt.Sprintf("schema_registry.topic %q %s, not the Schema Registry's storage topic: set schema_registry.topic to the topic the registry stores its schemas in (its kafkastore.topic, default \"_schemas\"), or remove schema_registry", e.Topic, e.Why)
}

// SchemaRegistryConflict says why topic, named by schema_registry.topic,
// cannot be the Schema Registry's storage topic of this application's
// backup, or "" when it can: c.Topology names it (an input, a global
// store's input, an output, a repartition or foreign-key-join topic, a
// changelog), it is listed in c.SourceChangelogTopics or
// c.DeadLetterTopics, or Kafka Streams' naming rule makes it a
// repartition topic or changelog of c.ApplicationID
// ("<application.id>-<name>-repartition" / "-changelog",
// org.apache.kafka.streams.processor.internals.InternalTopicManager). The
// phrase reads after the topic.
func (c Classifier) SchemaRegistryConflict(topic string) string {
	if topic == "" {
		return ""
	}
	if why := c.Topology.namedAs(topic, true); why != "" {
		return why
	}
	switch {
	case slices.Contains(c.SourceChangelogTopics, topic):
		return "is listed in source_changelog_topics (an input a store restores from)"
	case slices.Contains(c.DeadLetterTopics, topic):
		return "is listed in dead_letter_queue_topics (an output the application writes)"
	}
	why, v := c.namedInternal(topic)
	// "<application.id>-changelog" and "-repartition" name no store or
	// processor between the prefix and the suffix: not internal.
	if rest := strings.TrimPrefix(strings.TrimPrefix(topic, v.prefix), "-"); rest == "changelog" || rest == "repartition" {
		return ""
	}
	return why
}
