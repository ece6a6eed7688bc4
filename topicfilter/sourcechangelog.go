package topicfilter

import (
	"fmt"
	"slices"
)

// SourceChangelogConflict says why topic, declared a source-topic
// changelog (config source_changelog_topics), cannot be one, or "" when
// it can. A source changelog is an input topic a store restores from
// (topology.optimization=all / reuse.ktable.source.topics), backed up as
// data with point-in-time restore refused; so it must not be:
//
//   - with topology t (nil: none known), a topic t names as a repartition
//     topic or foreign-key-join subscription topic, an output (when
//     t.OutputsKnown) or a "-changelog" changelog, unless t also names it
//     an input or a global store's input (then the declaration agrees);
//   - one of deadLetters (config dead_letter_queue_topics): an output;
//   - without t, a topic with a repartition or foreign-key-join suffix of
//     Kafka's StreamsResetter.matchesInternalTopicFormat: never backed up
//     as data (docs/DOMAIN.md#in-flight), whoever's it is.
//
// The phrase reads after the topic: `is a repartition topic of the
// topology (topology file "app.txt")`.
func SourceChangelogConflict(topic string, t *AppTopology, deadLetters []string) string {
	if t != nil && (slices.Contains(t.Inputs, topic) || slices.Contains(t.GlobalInputs, topic)) {
		return ""
	}
	if slices.Contains(deadLetters, topic) {
		return "is a dead-letter queue topic (dead_letter_queue_topics, KIP-1034): an output the application writes"
	}
	if t != nil {
		from := ""
		if t.From != "" {
			from = " (" + t.From + ")"
		}
		switch {
		case slices.Contains(t.Repartition, topic):
			return "is a " + repartitionWord(topic) + " of the topology" + from + ": never backed up as data, only its in-flight tail"
		case t.OutputsKnown && slices.Contains(t.Outputs, topic):
			return "is an output topic of the topology" + from + ": no store restores from it"
		case slices.Contains(t.Changelogs, topic):
			return "is a changelog of the topology" + from + ": backed up as a changelog already"
		}
	}
	if rule := internalSuffix(topic); rule != "" && rule != `suffix "-changelog"` {
		return fmt.Sprintf("has the name of a repartition topic or foreign-key-join subscription topic (%s, Kafka's StreamsResetter internal-topic rule): never backed up as data, only its in-flight tail", rule)
	}
	return ""
}

// repartitionWord names a topology repartition topic: "foreign-key-join
// subscription topic" for the foreign-key join's subscription
// registration and response topics, else "repartition topic".
func repartitionWord(topic string) string {
	if internalSuffix(topic) != "" && internalSuffix(topic) != `suffix "-repartition"` && internalSuffix(topic) != `suffix "-changelog"` {
		return "foreign-key-join subscription topic"
	}
	return "repartition topic"
}

// DeadLetterConflict says why topic, listed in dead_letter_queue_topics
// (KIP-1034 errors.dead.letter.queue.topic.name: an output the
// application writes when a record fails), cannot be a dead-letter topic
// of this application, or "" when it can: a broker-internal name ("__"),
// a topic c.Topology names as an input, a global store's input, a
// repartition or foreign-key-join topic or a changelog, or (by Kafka
// Streams' naming rule, Classify without SourceChangelogTopics) a
// repartition topic or changelog of c.ApplicationID. The phrase reads
// after the topic.
func (c Classifier) DeadLetterConflict(topic string) string {
	if isBrokerInternalName(topic) {
		return `is a broker-internal topic (name starts with "__")`
	}
	if why := c.Topology.namedAs(topic, false); why != "" {
		return why
	}
	why, _ := c.namedInternal(topic)
	return why
}

// namedAs says how t names topic, among its inputs (and global stores'
// inputs), its outputs (only when outputs is true), its repartition and
// foreign-key-join topics and its changelogs, as a phrase that reads
// after the topic (`is a changelog of the topology (topology file
// "app.txt")`); "" when t is nil or names it none of these.
func (t *AppTopology) namedAs(topic string, outputs bool) string {
	if t == nil {
		return ""
	}
	from := ""
	if t.From != "" {
		from = " (" + t.From + ")"
	}
	switch {
	case slices.Contains(t.Inputs, topic), slices.Contains(t.GlobalInputs, topic):
		return "is an input topic of the topology" + from
	case outputs && slices.Contains(t.Outputs, topic):
		return "is an output topic of the topology" + from
	case slices.Contains(t.Repartition, topic):
		return "is a " + repartitionWord(topic) + " of the topology" + from
	case slices.Contains(t.Changelogs, topic):
		return "is a changelog of the topology" + from
	}
	return ""
}

// namedInternal says, by Kafka Streams' naming rule alone (Classify
// without SourceChangelogTopics or a topology), whether topic is named as
// a changelog or repartition topic of c's application (not another
// application's), as a phrase that reads after the topic ("" when not),
// with the verdict it came from.
func (c Classifier) namedInternal(topic string) (string, verdict) {
	byName := Classifier{ApplicationID: c.ApplicationID, InternalPrefixes: c.InternalPrefixes, OtherApplicationIDs: c.OtherApplicationIDs}
	v := byName.classify(topic)
	switch {
	case v.class == Changelog && v.otherApp == "":
		return "is named as a changelog of the application (" + v.reason + ")", v
	case v.class == Repartition && v.otherApp == "":
		return "is named as a repartition topic of the application (" + v.reason + ")", v
	}
	return "", v
}
