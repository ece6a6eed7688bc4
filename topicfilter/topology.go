package topicfilter

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Topology is the text of a Kafka Streams application's
// Topology#describe() (org.apache.kafka.streams.TopologyDescription, as
// InternalTopologyBuilder's toString methods print it), parsed: its
// sub-topologies and global stores with their nodes. Both formats are
// read: the multi-line one of Kafka 2.0 and later ("Topologies:", a node
// per line, "-->" and "<--" on lines of their own, "(topics: [a, b])")
// and the older one-line one ("Sub-topologies:", arrows on the node's
// line, "(topics: a)"). Internal topic names appear as the topology
// names them, without the "<application.id>-" prefix the broker's topics
// have.
type Topology struct {
	SubTopologies []SubTopology
	// GlobalStores are the sub-topologies "for global store (will not
	// generate tasks)": a source topic read whole into a store on every
	// instance.
	GlobalStores []SubTopology
}

// SubTopology is one sub-topology (or global store) of a Topology, its
// nodes in the order describe() lists them.
type SubTopology struct {
	ID    int
	Nodes []Node
}

// NodeKind is the kind of a TopologyDescription.Node.
type NodeKind string

// The node kinds describe() prints.
const (
	SourceNode    NodeKind = "source"
	ProcessorNode NodeKind = "processor"
	SinkNode      NodeKind = "sink"
)

// Node is one node of a sub-topology.
type Node struct {
	Kind NodeKind
	Name string
	// Topics are a source's topics; Pattern is a source's topic pattern
	// instead ("(topics: foo.*)" without brackets in the multi-line format
	// is a pattern). Topic is a sink's topic ("" for a sink with a topic
	// name extractor, whose topics the text does not name).
	Topics  []string
	Pattern string
	Topic   string
	// Stores are a processor's state stores.
	Stores []string
	// Successors and Predecessors name the nodes after and before it.
	Successors, Predecessors []string
}

var (
	headerRe    = regexp.MustCompile(`^(Topologies|Sub-topologies):$`)
	subRe       = regexp.MustCompile(`^Sub-topology: (\d+)( for global store \(will not generate tasks\))?$`)
	nodeRe      = regexp.MustCompile(`^(Source|Processor|Sink): ?(.+?) ?\((topics|stores|topic|extractor class): ?(.*?)\)(?: --> (.*?))?(?: <-- (.*))?$`)
	arrowRe     = regexp.MustCompile(`^(-->|<--) (.*)$`)
	globalOldRe = regexp.MustCompile(`^Global Stores:$`)
	patternRe   = regexp.MustCompile(`[*?+()|\\^$]`) // a topic name never holds these
)

// ParseTopology parses the text of Topology#describe(). Lines before the
// "Topologies:" (or "Sub-topologies:") header, such as comments, are
// skipped, and so is a UTF-8 byte order mark at the start. An error names
// the line that is not part of a description (quoting at most its first
// 80 characters). A text whose "-->" successors or "<--" predecessors
// name a node it never defines, or that gives two sub-topologies the same
// number, is refused as truncated or garbled, naming the line and the
// node: describe() prints every node of a sub-topology that an arrow
// names (InternalTopologyBuilder's TopologyDescription), and numbers
// sub-topologies and global stores once each.
func ParseTopology(text string) (*Topology, error) {
	t := &Topology{}
	var cur *SubTopology
	var last *Node
	started, globalSection, oneLine := false, false, false
	type ref struct {
		line        int
		node, arrow string
		names       []string
	}
	var refs []ref
	defined := map[string]bool{}
	subLine := map[int]int{} // sub-topology number -> its line
	text = strings.TrimPrefix(text, "\uFEFF")
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		s := strings.TrimSpace(line)
		if !started {
			started = headerRe.MatchString(s)
			oneLine = s == "Sub-topologies:"
			continue
		}
		switch m := subRe.FindStringSubmatch(s); {
		case s == "":
			continue
		case globalOldRe.MatchString(s):
			globalSection, cur, last = true, nil, nil
			continue
		case globalSection && s == "none":
			continue
		case m != nil:
			id, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, fmt.Errorf("topology description line %d: sub-topology number %q is out of range%s", i+1, m[1], garbled)
			}
			if l, dup := subLine[id]; dup {
				return nil, fmt.Errorf("topology description line %d: a second \"Sub-topology: %d\" (the first is on line %d)%s", i+1, id, l, garbled)
			}
			subLine[id] = i + 1
			if m[2] != "" {
				t.GlobalStores = append(t.GlobalStores, SubTopology{ID: id})
				cur = &t.GlobalStores[len(t.GlobalStores)-1]
			} else {
				t.SubTopologies = append(t.SubTopologies, SubTopology{ID: id})
				cur = &t.SubTopologies[len(t.SubTopologies)-1]
			}
			last = nil
			continue
		}
		if m := arrowRe.FindStringSubmatch(s); m != nil && last != nil {
			names := nodeList(m[2])
			if m[1] == "-->" {
				last.Successors = append(last.Successors, names...)
			} else {
				last.Predecessors = append(last.Predecessors, names...)
			}
			refs = append(refs, ref{i + 1, last.Name, m[1], names})
			continue
		}
		m := nodeRe.FindStringSubmatch(s)
		if m == nil || cur == nil {
			return nil, fmt.Errorf("topology description line %d: %s is not a sub-topology, a node or an arrow of Topology#describe()", i+1, quoteAtMost(s, 80))
		}
		n := Node{Kind: NodeKind(strings.ToLower(m[1])), Name: m[2], Successors: nodeList(m[5]), Predecessors: nodeList(m[6])}
		defined[n.Name] = true
		refs = append(refs, ref{i + 1, n.Name, "-->", n.Successors}, ref{i + 1, n.Name, "<--", n.Predecessors})
		switch list := m[4]; m[3] {
		case "topics":
			// The multi-line format prints a source's topics as a set,
			// "[a, b]", and its pattern bare; the one-line format prints
			// both bare.
			if strings.HasPrefix(list, "[") || oneLine && !patternRe.MatchString(list) {
				n.Topics = nodeList(list)
			} else {
				n.Pattern = list
			}
		case "stores":
			n.Stores = nodeList(list)
		case "topic":
			n.Topic = list
		}
		cur.Nodes = append(cur.Nodes, n)
		last = &cur.Nodes[len(cur.Nodes)-1]
	}
	if !started {
		return nil, fmt.Errorf("topology description: no %q line: give the text Topology#describe() prints (topology.describe().toString())", "Topologies:")
	}
	for _, r := range refs {
		for _, name := range r.names {
			if !defined[name] {
				what := "successor"
				if r.arrow == "<--" {
					what = "predecessor"
				}
				return nil, fmt.Errorf("topology description line %d: node %q names %s %q (%s), which the text never defines%s", r.line, r.node, what, name, r.arrow, garbled)
			}
		}
	}
	return t, nil
}

// garbled ends ParseTopology's errors for a text that is cut short or
// mixed up.
const garbled = ": the text looks truncated or garbled; paste the whole output of Topology#describe() (topology.describe().toString())"

// quoteAtMost quotes s, cut to its first n characters ("..." after).
func quoteAtMost(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strconv.Quote(string(r[:n])) + "..."
	}
	return strconv.Quote(s)
}

// nodeList splits a node list as describe() prints it: "[a, b]", "a, b",
// "a,b" or "none" (no node).
func nodeList(s string) []string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]"))
	if s == "" || s == "none" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && p != "none" {
			out = append(out, p)
		}
	}
	return out
}

// TopologyTopics is what a topology says of an application's topics, by
// their names on the broker (internal topics prefixed with
// "<application.id>-", as Kafka Streams' InternalTopologyBuilder
// decorates them), each list sorted.
type TopologyTopics struct {
	// Inputs are the topics sources read that the topology does not
	// write; Patterns are source topic patterns (their topics are inputs
	// too, unknown here).
	Inputs, Patterns []string
	// Outputs are the topics sinks write that no source reads.
	Outputs []string
	// Repartition are the internal topics a sink writes and a source of
	// the same topology reads: repartition topics and the foreign-key
	// join's subscription registration and response topics.
	Repartition []string
	// Changelogs are the changelog topics of the stores of processors,
	// "<application.id>-<store>-changelog", for stores with logging
	// enabled (the default; describe() does not say when it is off).
	Changelogs []string
	// SourceTables are stores a table reads straight from an input topic
	// (builder.table: a processor named KTABLE-SOURCE-... after a source
	// of one topic), each as "store <- topic": with
	// topology.optimization=all (reuse.ktable.source.topics) the input
	// topic is the store's changelog (a source-topic changelog) and no
	// "<store>-changelog" topic exists; describe() prints both the same.
	SourceTables []string
	// GlobalInputs are the source topics of global stores: inputs each
	// instance reads whole, the stores' only changelog.
	GlobalInputs []string
}

// Topics classifies the topology's topics for application applicationID
// (TopologyTopics). A store of a source table (SourceTables) gets a
// "-changelog" topic only when optimized is false (the application's
// topology.optimization is not "all" / reuse.ktable.source.topics).
func (t *Topology) Topics(applicationID string, optimized bool) TopologyTopics {
	read, written := map[string]bool{}, map[string]bool{}
	var out TopologyTopics
	sourceOf := map[string][]string{} // source node name -> its topics
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			switch n.Kind {
			case SourceNode:
				for _, topic := range n.Topics {
					read[topic] = true
				}
				sourceOf[n.Name] = n.Topics
				if n.Pattern != "" {
					out.Patterns = append(out.Patterns, n.Pattern)
				}
			case SinkNode:
				if n.Topic != "" {
					written[n.Topic] = true
				}
			}
		}
	}
	prefixed := func(name string) string { return applicationID + "-" + name }
	for topic := range read {
		if written[topic] {
			out.Repartition = append(out.Repartition, prefixed(topic))
		} else {
			out.Inputs = append(out.Inputs, topic)
		}
	}
	for topic := range written {
		if !read[topic] {
			out.Outputs = append(out.Outputs, topic)
		}
	}
	// A store appears on every processor that uses it; a source table's
	// store is the one its KTABLE-SOURCE processor materializes.
	stores, tables := map[string]bool{}, map[string]bool{}
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			if n.Kind != ProcessorNode {
				continue
			}
			for _, s := range n.Stores {
				stores[s] = true
			}
			if strings.HasPrefix(n.Name, "KTABLE-SOURCE-") && len(n.Predecessors) == 1 && len(sourceOf[n.Predecessors[0]]) == 1 && !written[sourceOf[n.Predecessors[0]][0]] {
				for _, s := range n.Stores {
					out.SourceTables = append(out.SourceTables, s+" <- "+sourceOf[n.Predecessors[0]][0])
					tables[s] = true
				}
			}
		}
	}
	for s := range stores {
		if !optimized || !tables[s] {
			out.Changelogs = append(out.Changelogs, prefixed(s+"-changelog"))
		}
	}
	for _, g := range t.GlobalStores {
		for _, n := range g.Nodes {
			out.GlobalInputs = append(out.GlobalInputs, n.Topics...)
		}
	}
	for _, l := range []*[]string{&out.Inputs, &out.Patterns, &out.Outputs, &out.Repartition, &out.Changelogs, &out.SourceTables, &out.GlobalInputs} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return out
}
