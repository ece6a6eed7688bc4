package topicfilter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// AppTopology is what one application's topology says of its topics, as
// the classification uses it: from the broker (a streams group's
// StreamsGroupDescribe, KIP-1071, with the Topology#describe() text of
// KIP-1331 when the broker holds it) or from a Topology#describe() text the
// user gives (ParseTopology, then Topology.Topics).
//
// Topic names are broker topic names (internal ones already prefixed).
// A nil *AppTopology means none is known: topics are classified by name.
type AppTopology struct {
	// From says where the topology came from, for people: e.g.
	// `streams group "orders-app" on the source cluster (StreamsGroupDescribe)`
	// or `topology file "orders-app.topology.txt"`.
	From string
	// TopologyTopics are the topology's topics by role.
	TopologyTopics
	// SourceChangelogs are input topics known to be source-topic
	// changelogs (topology.optimization=all, reuse.ktable.source.topics):
	// a store is restored from them and no "<store>-changelog" topic
	// exists.
	SourceChangelogs []string
	// OutputsKnown is false when the source of the topology cannot name
	// the application's outputs (a streams group's topology without its
	// describe() text lists sources, repartition topics and changelogs,
	// not sinks): topics it does not name are then not called outputs.
	OutputsKnown bool
	// Digest is the hex sha256 of the text the topology was read from
	// (a describe() text as given; for a streams group, whatever bytes its
	// reader takes as the topology, e.g. the KIP-1331 describe() text).
	// Empty: [AppTopology.SHA256] computes one over the topic lists.
	Digest string
}

// SHA256 returns Digest, or when it is empty the hex sha256 of the
// topology's topic lists, SourceChangelogs and OutputsKnown (as JSON, in
// field order): what a backup's manifest records so that a resumed run
// can tell that the topology changed. "" for a nil topology.
func (t *AppTopology) SHA256() string {
	if t == nil {
		return ""
	}
	if t.Digest != "" {
		return t.Digest
	}
	b, _ := json.Marshal(struct {
		TopologyTopics
		SourceChangelogs []string
		OutputsKnown     bool
	}{t.TopologyTopics, t.SourceChangelogs, t.OutputsKnown})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TopologyMismatchError is returned by [Plan] when a topology is known and
// the include/exclude patterns leave out topics the topology says the
// application's state or inputs live in (an input, a changelog or a
// source changelog): a backup without them cannot restore the
// application. Without PlanOptions.AllowTopologyMismatch; with it they
// are warnings.
type TopologyMismatchError struct {
	// Fixes are one line per topic left out, each naming the topic, its
	// role and the fix, in topic order.
	Fixes []string
}

// Error reads: the topology (From) names topics the patterns do not
// select: <one fix per line>; or set source.topics.allow_topology_mismatch: true.
func (e *TopologyMismatchError) Error() string {
	return "the topology names topics that source.topics does not select, so the backup could not restore the application:\n  " +
		strings.Join(e.Fixes, "\n  ") +
		"\nfix source.topics, or set source.topics.allow_topology_mismatch: true to back up without them"
}
