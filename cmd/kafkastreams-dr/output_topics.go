// Rendering of topics: one row per topic of the source cluster with its
// class, partitions, whether a backup selects it and why (or --json), and
// the summary line. Functions here take a writer and plain values; none does
// Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// printDecisions prints the table TOPIC CLASS ROLE PARTITIONS SELECTED
// REASON, one row per decision; ROLE is the topic's role in the topology
// ("-" when none is known or it does not name the topic).
func printDecisions(w io.Writer, ds []topicfilter.Decision) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tCLASS\tROLE\tPARTITIONS\tSELECTED\tREASON")
	for _, d := range ds {
		class := string(d.Class)
		switch {
		case d.BrokerInternal:
			class = "internal" // the broker's own topics (__consumer_offsets, ...)
		case d.SourceChangelog:
			class += " (source)"
		}
		sel := "no"
		if d.Selected {
			sel = "yes"
		}
		role := d.Role
		if role == "" {
			role = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Topic, class, role, d.Partitions, sel, d.Reason)
	}
	tw.Flush()
}

// summarizeDecisions is the summary line of topics: "N topics on the
// cluster, N selected (N changelog, N external) with N partitions".
func summarizeDecisions(ds []topicfilter.Decision) string {
	var sel, parts int
	byClass := map[topicfilter.Class]int{}
	for _, d := range ds {
		if d.Selected {
			sel++
			parts += d.Partitions
			byClass[d.Class]++
		}
	}
	return fmt.Sprintf("%s on the cluster, %d selected (%d changelog, %d external) with %s",
		plural(len(ds), "topic", "topics"), sel, byClass[topicfilter.Changelog], byClass[topicfilter.External],
		plural(parts, "partition", "partitions"))
}

// summarizeTopics is topics' summary line: summarizeDecisions, then where
// the topology came from ("topology: <AppTopology.From>") or "classified
// by name (no topology)".
func summarizeTopics(ds []topicfilter.Decision, top *topicfilter.AppTopology) string {
	if top == nil {
		return summarizeDecisions(ds) + "; classified by name (no topology)"
	}
	return summarizeDecisions(ds) + "; topology: " + top.From
}

// writeDecisions prints the decisions as a table (printDecisions) or as a
// JSON array ([] for none).
func writeDecisions(w io.Writer, asJSON bool, ds []topicfilter.Decision) error {
	if !asJSON {
		printDecisions(w, ds)
		return nil
	}
	if ds == nil {
		ds = []topicfilter.Decision{}
	}
	return writeJSON(w, ds)
}
