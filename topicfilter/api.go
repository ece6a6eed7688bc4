// Package topicfilter selects and classifies the topics of one Kafka Streams
// application: include/exclude filters (anchored globs or ~regex) and the
// changelog / repartition / external classification of every topic for an
// application.id. It does no I/O: callers pass topic lists in.
package topicfilter

// Class is the role a topic plays for the configured application.id.
type Class string

const (
	// Changelog is a state store's changelog topic
	// (<prefix>-<store>-changelog, ProcessorStateManager.storeChangelogTopic),
	// or an input topic declared as a source-topic changelog
	// (topology.optimization=all / reuse.ktable.source.topics).
	Changelog Class = "changelog"
	// Repartition is a repartition topic (<prefix>-<name>-repartition) or a
	// foreign-key-join subscription topic: exactly the internal-topic suffix
	// rule of Kafka's StreamsResetter.matchesInternalTopicFormat. Never backed up.
	Repartition Class = "repartition"
	// External is an input or output topic (anything else).
	External Class = "external"
)

// TopicInfo is what the caller knows of one topic on the cluster.
type TopicInfo struct {
	Name       string
	Partitions int
	Internal   bool // the broker flags it internal (metadata is_internal)
}

// Decision is the verdict for one topic.
type Decision struct {
	Topic           string `json:"topic"`
	Class           Class  `json:"class"`
	SourceChangelog bool   `json:"source_changelog,omitempty"` // input topic reused as a store's changelog
	Partitions      int    `json:"partitions"`
	Selected        bool   `json:"selected"`
	Reason          string `json:"reason"` // why selected or not, for people
}
