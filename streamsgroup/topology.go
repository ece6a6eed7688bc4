package streamsgroup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TopologyDescriptionNode.NodeType values (StreamsGroupDescribeResponse
// v1, KIP-1331; StreamsGroupTopologyDescriptionConverter).
const (
	nodeSource    = 1
	nodeProcessor = 2
	nodeSink      = 3
)

// convertDescription converts the KIP-1331 topology description of a
// StreamsGroupDescribe answer to topicfilter's Topology, as
// ParseTopology would read the same application's Topology#describe():
// node kinds, a source's topics, a sink's topic, a processor's stores,
// and the arrows both ways (the answer carries successors only;
// predecessors are derived from them). Subtopology ids that are not
// numbers are numbered in their order. The answer names internal topics
// with their "<group>-" prefix: it is taken off the topics basic (the
// group's Topology, may be nil) names as repartition topics, as
// describe() prints them.
func convertDescription(d *kmsg.StreamsGroupDescribeResponseGroupTopologyDescription, group string, basic *Topology) *topicfilter.Topology {
	internal := map[string]string{}
	if basic != nil {
		for _, s := range basic.Subtopologies {
			for _, t := range s.RepartitionSinkTopics {
				internal[t] = strings.TrimPrefix(t, group+"-")
			}
			for _, t := range s.RepartitionSourceTopics {
				internal[t.Topic] = strings.TrimPrefix(t.Topic, group+"-")
			}
		}
	}
	name := func(topic string) string {
		if n, ok := internal[topic]; ok {
			return n
		}
		return topic
	}
	t := &topicfilter.Topology{}
	for i, s := range d.Subtopologies {
		id, err := strconv.Atoi(s.SubtopologyID)
		if err != nil {
			id = i
		}
		t.SubTopologies = append(t.SubTopologies, topicfilter.SubTopology{ID: id, Nodes: convertNodes(s.Nodes, name)})
	}
	slices.SortStableFunc(t.SubTopologies, func(a, b topicfilter.SubTopology) int { return a.ID - b.ID })
	for i, g := range d.GlobalStores {
		t.GlobalStores = append(t.GlobalStores, topicfilter.SubTopology{ID: len(d.Subtopologies) + i, Nodes: convertNodes([]kmsg.TopologyDescriptionNode{g.Source, g.Processor}, name)})
	}
	return t
}

func convertNodes(in []kmsg.TopologyDescriptionNode, name func(string) string) []topicfilter.Node {
	preds := map[string][]string{}
	for _, n := range in {
		for _, s := range n.Successors {
			preds[s] = append(preds[s], n.Name)
		}
	}
	var out []topicfilter.Node
	for _, n := range in {
		node := topicfilter.Node{Name: n.Name, Successors: slices.Clone(n.Successors), Predecessors: preds[n.Name]}
		switch n.NodeType {
		case nodeSource:
			node.Kind = topicfilter.SourceNode
			for _, t := range n.SourceTopics {
				node.Topics = append(node.Topics, name(t))
			}
		case nodeSink:
			node.Kind = topicfilter.SinkNode
			if n.SinkTopic != nil {
				node.Topic = name(*n.SinkTopic)
			}
		default:
			node.Kind = topicfilter.ProcessorNode
			node.Stores = slices.Clone(n.Stores)
		}
		out = append(out, node)
	}
	return out
}

// AppTopology is what the group's topology says of application
// applicationID's topics, for the classification (topicfilter.AppTopology;
// From names the group), or nil when the group holds no topology yet.
//
// The broker's subtopologies are the authority for the internal topics:
// repartition topics are their repartition sink and source topics,
// changelogs their state changelog topics, inputs the source topics (the
// broker lists repartition topics apart; one that were listed in both
// would be taken as repartition). A state changelog topic that is also a
// source topic of a subtopology is a source-topic changelog
// (topology.optimization=all, reuse.ktable.source.topics: Kafka Streams'
// InternalTopologyBuilder maps the source table's store to its input
// topic and reports that topic among the subtopology's
// stateChangelogTopics): it is an input and a SourceChangelog, not a
// changelog. With the KIP-1331 description (Description) the outputs
// are known too (OutputsKnown), from its sinks.
func (g *Group) AppTopology(applicationID string) *topicfilter.AppTopology {
	if g.Topology == nil || len(g.Topology.Subtopologies) == 0 {
		return nil
	}
	source, repartition, changelog := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range g.Topology.Subtopologies {
		for _, t := range s.SourceTopics {
			source[t] = true
		}
		for _, t := range s.RepartitionSinkTopics {
			repartition[t] = true
		}
		for _, t := range s.RepartitionSourceTopics {
			repartition[t.Topic] = true
		}
		for _, t := range s.StateChangelogTopics {
			changelog[t.Topic] = true
		}
	}
	at := &topicfilter.AppTopology{From: fmt.Sprintf("streams group %q on the source cluster (StreamsGroupDescribe)", g.ID)}
	for t := range source {
		if !repartition[t] {
			at.Inputs = append(at.Inputs, t)
		}
	}
	for t := range repartition {
		at.Repartition = append(at.Repartition, t)
	}
	for t := range changelog {
		switch {
		case source[t]:
			at.SourceChangelogs = append(at.SourceChangelogs, t)
		default:
			at.Changelogs = append(at.Changelogs, t)
		}
	}
	if g.Description != nil {
		d := g.Description.Topics(applicationID, len(at.SourceChangelogs) > 0)
		at.Outputs, at.Patterns, at.SourceTables, at.GlobalInputs = d.Outputs, d.Patterns, d.SourceTables, d.GlobalInputs
		at.OutputsKnown = true
	}
	for _, l := range []*[]string{&at.Inputs, &at.Repartition, &at.Changelogs, &at.SourceChangelogs, &at.Outputs} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return at
}
