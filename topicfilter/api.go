// Package topicfilter decides which topics of one Kafka Streams application a
// backup copies, and why.
//
// It has three parts:
//
//   - [Filter]: the include/exclude topic patterns of the configuration
//     (anchored globs, or Go regular expressions when prefixed with "~").
//   - [Classifier]: the changelog / repartition / external class of a topic
//     for one application.id, by Kafka Streams' own internal-topic naming rule.
//   - [Plan]: both applied to the topic list of a cluster, giving one
//     [Decision] per topic with a reason for people, plus warnings.
//
// Topics whose name starts with "__" (broker-internal: __consumer_offsets,
// __transaction_state, ...) are never selected, whatever the patterns say.
// Repartition topics are never selected as data: a backup captures only
// their in-flight tail (docs/DOMAIN.md#in-flight).
//
// The package does no I/O: callers pass topic lists in. Everything in it is
// safe for concurrent use once constructed.
package topicfilter

import (
	"fmt"
	"strings"
)

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
	// rule of Kafka's StreamsResetter.matchesInternalTopicFormat. Never backed up as data; its in-flight tail is (backup's Manifest.InFlight).
	Repartition Class = "repartition"
	// External is an input or output topic (anything else). Broker-internal
	// topics ("__*") and internal topics of other applications are also
	// External; [Decision] says which.
	External Class = "external"
)

// The roles a topology (Classifier.Topology) gives topics in
// Decision.Role, finer than [Class]; "" when no topology is known or the
// topology does not name the topic.
const (
	// RoleInput is a topic a source reads (Inputs, a source Pattern's
	// topics). A topic both read and written by the application from
	// outside its prefix is an input too, with a note in the reason.
	RoleInput = "input"
	// RoleOutput is a topic a sink writes that no source reads (Outputs,
	// when AppTopology.OutputsKnown).
	RoleOutput = "output"
	// RoleChangelog is a store's "<prefix>-<store>-changelog" topic.
	RoleChangelog = "changelog"
	// RoleSourceChangelog is an input a store restores from
	// (topology.optimization=all / reuse.ktable.source.topics): Class
	// Changelog, SourceChangelog true.
	RoleSourceChangelog = "source-changelog"
	// RoleRepartition is a repartition topic or a foreign-key join's
	// subscription registration or response topic.
	RoleRepartition = "repartition"
	// RoleDeadLetter is a dead-letter queue topic (KIP-1034,
	// errors.dead.letter.queue.topic.name): an output.
	RoleDeadLetter = "dead-letter"
	// RoleGlobalInput is the source topic of a global store: read whole
	// by every instance, the store's only changelog.
	RoleGlobalInput = "global-input"
)

// TopicInfo is what the caller knows of one topic on the cluster.
type TopicInfo struct {
	Name       string
	Partitions int
	Internal   bool // the broker flags it internal (Metadata response is_internal)
	// Compacted is true when the topic's cleanup.policy contains "compact"
	// ("compact" or "compact,delete"). Plan warns about compacted input
	// topics that are not declared source changelogs.
	Compacted bool
}

// Decision is the verdict for one topic.
type Decision struct {
	Topic           string `json:"topic"`
	Class           Class  `json:"class"`
	SourceChangelog bool   `json:"source_changelog,omitempty"` // input topic reused as a store's changelog
	// Role is the topic's role in the application's topology
	// (Classifier.Topology); "" when no topology is known or it does not
	// name the topic. Class stays as by name for compatibility.
	Role string `json:"role,omitempty"`
	// OtherApplicationID is set when the topic is an internal topic
	// (changelog or repartition) of another application: the application.id
	// from Classifier.OtherApplicationIDs it belongs to. Such a topic is
	// never selected (KAFKA-14922: "my-app-" is also a prefix of
	// "my-app-v1-..." topics).
	OtherApplicationID string `json:"other_application_id,omitempty"`
	// BrokerInternal is true for topics whose name starts with "__" or that
	// the broker flags internal. They are never selected.
	BrokerInternal bool   `json:"broker_internal,omitempty"`
	Partitions     int    `json:"partitions"`
	Selected       bool   `json:"selected"`
	Reason         string `json:"reason"` // why selected or not, for people
	// ExcludedBy is the exclude pattern that removed the topic after an
	// include pattern matched it ("" when none did): exclude beats include.
	ExcludedBy string `json:"excluded_by,omitempty"`
	// SchemaRegistry is true for the Schema Registry's storage topic
	// (PlanOptions.SchemaRegistryTopic): selected whatever the filter
	// says, class External.
	SchemaRegistry bool `json:"schema_registry,omitempty"`
}

// DescribeExclusions says which exclude pattern removed which included
// topics in ds, e.g. `pattern "clicks" removes clicks; pattern "tmp-*"
// removes tmp-a, tmp-b`, in the decisions' order; "" when no exclude removed one. A
// pattern's topics are listed up to 5, then counted.
func DescribeExclusions(ds []Decision) string {
	var patterns []string
	topics := map[string][]string{}
	for _, d := range ds {
		if d.ExcludedBy == "" {
			continue
		}
		if _, ok := topics[d.ExcludedBy]; !ok {
			patterns = append(patterns, d.ExcludedBy)
		}
		topics[d.ExcludedBy] = append(topics[d.ExcludedBy], d.Topic)
	}
	parts := make([]string, len(patterns))
	for i, p := range patterns {
		names := topics[p]
		if len(names) > 5 {
			names = append(names[:5:5], fmt.Sprintf("and %d more", len(topics[p])-5))
		}
		parts[i] = fmt.Sprintf("pattern %q removes %s", p, strings.Join(names, ", "))
	}
	return strings.Join(parts, "; ")
}
