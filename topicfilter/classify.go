package topicfilter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Classifier classifies topic names for one Kafka Streams application.
// The zero value classifies by suffix alone (see [Classifier.Classify]).
// A Classifier is a plain value; Classify does not modify it and is safe
// for concurrent use.
type Classifier struct {
	// ApplicationID is the application's application.id (also its consumer
	// group id). May be empty: then topics are classified by suffix alone.
	ApplicationID string
	// InternalPrefixes are the prefixes of the application's internal
	// topics, without the trailing "-". Default (when empty): [ApplicationID].
	// Named topologies use "<application.id>-<topology name>" and ksqlDB
	// queries "_confluent-ksql-<service id>query_<id>"; list every prefix in use.
	InternalPrefixes []string
	// SourceChangelogTopics are input topics that a source KTable's store
	// uses as its changelog (topology.optimization=all or
	// reuse.ktable.source.topics): no "<prefix>-<store>-changelog" topic
	// exists for such a store. They classify as Changelog with
	// sourceChangelog true, whatever their name.
	SourceChangelogTopics []string
	// OtherApplicationIDs are the application.ids (consumer group ids) of
	// other Streams applications on the cluster. An internal-format topic
	// that starts with "<other>-", where <other> is longer than the matching
	// internal prefix of this application (or no prefix of this application
	// matches), belongs to that application (KAFKA-14922: "my-app-" is also
	// a prefix of my-app-v1's topics). Ignored when ApplicationID and
	// InternalPrefixes are both empty.
	OtherApplicationIDs []string
	// Topology is the application's topology when one is known (from the
	// broker's streams group, KIP-1071, or a Topology#describe() text the
	// user gives); nil: topics are classified by name alone, as above.
	// When set it is the authority: [Plan] gives every topic it names a
	// Role, selects (with an empty include) exactly its inputs, outputs,
	// dead-letter topics, changelogs and source changelogs, and does not
	// take an internal-format topic under the application's prefix that it
	// does not name for the application's own (docs/DESIGN.md).
	Topology *AppTopology
	// DeadLetterTopics are the application's dead-letter queue topics
	// (KIP-1034, errors.dead.letter.queue.topic.name; config
	// dead_letter_queue_topics): outputs a topology does not show as sinks.
	DeadLetterTopics []string
}

// fkJoinTopic is the foreign-key-join part of Kafka's
// StreamsResetter.matchesInternalTopicFormat, translated from Java's
// String.matches (which anchors both ends; Java's "." excludes the line
// terminators \n \r \u0085 \u2028 \u2029 and "\d" is [0-9]).
var fkJoinTopic = regexp.MustCompile(`^[^\n\r\x{85}\x{2028}\x{2029}]+-KTABLE-FK-JOIN-SUBSCRIPTION-(?:REGISTRATION|RESPONSE)-[0-9]+-topic$`)

const changelogSuffix = "-changelog"

// internalSuffix mirrors Kafka's StreamsResetter.matchesInternalTopicFormat
// exactly (tools/src/main/java/org/apache/kafka/tools/StreamsResetter.java,
// apache/kafka 1eb7644349cb07139d6a3c1ad1986979647cac99; the FK-join rules
// came with KAFKA-9859, apache/kafka#8671):
//
//	topicName.endsWith("-changelog") || topicName.endsWith("-repartition")
//	|| topicName.endsWith("-subscription-registration-topic")
//	|| topicName.endsWith("-subscription-response-topic")
//	|| topicName.matches(".+-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-\\d+-topic")
//	|| topicName.matches(".+-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-\\d+-topic")
//
// It returns a description of the rule that matched, or "" for none.
func internalSuffix(topic string) string {
	switch {
	case strings.HasSuffix(topic, changelogSuffix):
		return `suffix "-changelog"`
	case strings.HasSuffix(topic, "-repartition"):
		return `suffix "-repartition"`
	case strings.HasSuffix(topic, "-subscription-registration-topic"):
		return `foreign-key-join suffix "-subscription-registration-topic"`
	case strings.HasSuffix(topic, "-subscription-response-topic"):
		return `foreign-key-join suffix "-subscription-response-topic"`
	case fkJoinTopic.MatchString(topic):
		return `foreign-key-join name "-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-<n>-topic"`
	}
	return ""
}

// verdict is the full classification of one topic.
type verdict struct {
	class           Class
	sourceChangelog bool
	brokerInternal  bool   // name starts with "__"
	otherApp        string // internal topic of this other application.id
	reason          string
	// For an internal topic of this application: the internal prefix it
	// matched, and for a changelog the store name after it.
	prefix, store string
}

// Classify returns the class of topic for this application, whether it is
// a declared source changelog, and a reason for people.
//
// The rules, in order:
//
//  1. A name starting with "__" is a broker-internal topic: External.
//  2. A SourceChangelogTopics entry is Changelog, sourceChangelog true
//     ("input topic reused as changelog").
//  3. A topic is internal only if it passes Kafka's
//     StreamsResetter.matchesInternalTopicFormat (suffixes "-changelog",
//     "-repartition", "-subscription-registration-topic",
//     "-subscription-response-topic", or the regular expression
//     ".+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic")
//     AND starts with one of the internal prefixes followed by "-" (as
//     StreamsResetter.isInferredInternalTopic does with application.id).
//     "-changelog" is Changelog; every other internal suffix is Repartition.
//     Anything else is External: a "customer-changelog" CDC topic of
//     another system is not a changelog of this application.
//  4. An internal-format topic that belongs to an OtherApplicationIDs entry
//     (see there) is External, with a reason naming that application.
//  5. Without ApplicationID and InternalPrefixes, step 3 checks the suffix
//     alone: every internal-format topic counts as this application's, and
//     the reason says so.
//
// Schema Registry "pseudo topics" of foreign-key joins ("...-topic-fk",
// "-topic-pk", "-topic-vh") are never created on brokers; if such a name
// does turn up it does not end in "-topic" and is External.
func (c Classifier) Classify(topic string) (class Class, sourceChangelog bool, reason string) {
	v := c.classify(topic)
	return v.class, v.sourceChangelog, v.reason
}

func (c Classifier) prefixes() []string {
	if len(c.InternalPrefixes) > 0 {
		return c.InternalPrefixes
	}
	if c.ApplicationID != "" {
		return []string{c.ApplicationID}
	}
	return nil
}

// longestPrefix returns the longest p in ps with topic starting with p+"-".
func longestPrefix(ps []string, topic string) (string, bool) {
	best, ok := "", false
	for _, p := range ps {
		if p != "" && strings.HasPrefix(topic, p+"-") && (!ok || len(p) > len(best)) {
			best, ok = p, true
		}
	}
	return best, ok
}

func (c Classifier) classify(topic string) verdict {
	if isBrokerInternalName(topic) {
		return verdict{class: External, brokerInternal: true,
			reason: `broker-internal topic (name starts with "__")`}
	}
	if slices.Contains(c.SourceChangelogTopics, topic) {
		return verdict{class: Changelog, sourceChangelog: true,
			reason: "input topic reused as changelog of a source KTable store (declared in source_changelog_topics)"}
	}
	rule := internalSuffix(topic)
	if rule == "" {
		return verdict{class: External, reason: "input or output topic (no internal-topic suffix)"}
	}
	class := Repartition
	if strings.HasSuffix(topic, changelogSuffix) {
		class = Changelog
	}
	prefixes := c.prefixes()
	if len(prefixes) == 0 {
		what := "changelog"
		if class == Repartition {
			what = "repartition topic"
		}
		return verdict{class: class,
			reason: fmt.Sprintf("%s by %s alone (no application_id configured, so the topic may belong to any application)", what, rule)}
	}
	own, isOwn := longestPrefix(prefixes, topic)
	var others []string
	for _, o := range c.OtherApplicationIDs {
		if !slices.Contains(prefixes, o) {
			others = append(others, o)
		}
	}
	if other, ok := longestPrefix(others, topic); ok && (!isOwn || len(other) > len(own)) {
		reason := fmt.Sprintf("internal topic of application.id %s (%s), not of this application", other, rule)
		if isOwn {
			reason = fmt.Sprintf("internal topic of application.id %s (%s): its name also starts with %q, but it belongs to the longer application.id (KAFKA-14922)", other, rule, own+"-")
		}
		return verdict{class: External, otherApp: other, reason: reason}
	}
	if !isOwn {
		return verdict{class: External,
			reason: fmt.Sprintf("input or output topic: it has the internal-topic %s but does not start with %s, so it is not an internal topic of this application", rule, quotedPrefixes(prefixes))}
	}
	prefix := fmt.Sprintf("internal prefix %q", own)
	if own == c.ApplicationID {
		prefix = fmt.Sprintf("application.id prefix %q", own)
	}
	if class == Changelog {
		return verdict{class: Changelog, prefix: own, store: storeName(topic, own),
			reason: fmt.Sprintf("changelog of store %q (%s)", storeName(topic, own), prefix)}
	}
	return verdict{class: Repartition, prefix: own,
		reason: fmt.Sprintf("repartition topic (%s after the %s)", rule, prefix)}
}

// generatedStore matches a store name that ends in a name Kafka Streams
// generates (InternalStreamsBuilder.newStoreName / newProcessorName: a
// "KSTREAM-" or "KTABLE-" prefix, upper-case words, a 10-digit index, and
// "-store" for join windows) after something else. Group 1 is what comes
// before, group 2 the generated name. A source KTable's store,
// "<topic>-STATE-STORE-NNNNNNNNNN", has no KSTREAM-/KTABLE- and does not
// match.
var generatedStore = regexp.MustCompile(`^(.+)-((?:KSTREAM|KTABLE)-[A-Z]+(?:-[A-Z]+)*-[0-9]{10}(?:-store)?)$`)

// foreignGeneratedStore returns a warning when v, a changelog of this
// application, has a store name that is a generated name after a prefix:
// "orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog" under
// application.id "orders-app" is store "v1-KSTREAM-...", a name Kafka
// Streams never generates: most likely the topic belongs to application.id
// "orders-app-v1" (KAFKA-14922), whose consumer group does not exist (it
// was deleted, or the app never committed) so Plan could not tell.
func (c Classifier) foreignGeneratedStore(topic string, v verdict) string {
	m := generatedStore.FindStringSubmatch(v.store)
	if m == nil {
		return ""
	}
	owner := "application.id " + v.prefix
	if v.prefix != c.ApplicationID {
		owner = fmt.Sprintf("internal prefix %q", v.prefix)
	}
	other := v.prefix + "-" + m[1]
	return fmt.Sprintf("changelog %q is taken as store %q of %s, but Kafka Streams generates %q with nothing before it: it is probably an internal topic of application.id %q (add it to other_application_ids) or of a named topology (add %q to internal_topic_prefixes); otherwise exclude it",
		topic, v.store, owner, m[2], other, other)
}

// storeName extracts <store> from <prefix>-<store>-changelog. The prefix's
// "-" and the suffix's "-" may overlap ("my-app-changelog" passes Kafka's
// rule with an empty store name).
func storeName(topic, prefix string) string {
	start, end := len(prefix)+1, len(topic)-len(changelogSuffix)
	if start >= end {
		return ""
	}
	return topic[start:end]
}

func quotedPrefixes(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", p+"-")
	}
	return strings.Join(q, " or ")
}
