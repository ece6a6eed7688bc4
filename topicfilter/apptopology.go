package topicfilter

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
}
