// Rendering of topics: one row per topic of the source cluster with its
// class, partitions, whether a backup selects it and why (or --json), and
// the summary line. Functions here take a writer and plain values; none does
// Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// printDecisions prints the table TOPIC CLASS ROLE PARTITIONS SELECTED
// REASON, one row per decision; CLASS is --json's class, marked
// "(broker-internal)" for the broker's own topics (--json's
// broker_internal) and "(source)" for a source changelog; ROLE is the
// topic's role in the topology ("-" when none is known or it does not
// name the topic).
func printDecisions(w io.Writer, ds []topicfilter.Decision) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tCLASS\tROLE\tPARTITIONS\tSELECTED\tREASON")
	for _, d := range ds {
		class := string(d.Class)
		switch {
		case d.BrokerInternal:
			class += " (broker-internal)" // the broker's own topics (__consumer_offsets, ...)
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
// by name (no topology)". With a topology the selected topics are counted
// by role instead (summarizeRoles).
func summarizeTopics(ds []topicfilter.Decision, top *topicfilter.AppTopology) string {
	if top == nil {
		return summarizeDecisions(ds) + "; classified by name (no topology)"
	}
	return summarizeRoles(ds) + "; topology: " + top.From
}

// roleCounts name the selected topics of each role in summarizeRoles, in
// its order.
var roleCounts = []struct{ role, one, many string }{
	{topicfilter.RoleInput, "input", "inputs"},
	{topicfilter.RoleGlobalInput, "global input", "global inputs"},
	{topicfilter.RoleOutput, "output", "outputs"},
	{topicfilter.RoleDeadLetter, "dead-letter topic", "dead-letter topics"},
	{topicfilter.RoleChangelog, "changelog", "changelogs"},
	{topicfilter.RoleSourceChangelog, "source changelog", "source changelogs"},
	{topicfilter.RoleRepartition, "repartition topic", "repartition topics"},
}

// summarizeRoles is the summary line of topics with a topology: "N topics
// on the cluster, N selected (2 inputs, 3 outputs, 5 changelogs) with N
// partitions", roles with no selected topic left out; the Schema
// Registry's topic and topics the topology does not name (selected by an
// include) are counted last.
func summarizeRoles(ds []topicfilter.Decision) string {
	var sel, parts, registry, unnamed int
	byRole := map[string]int{}
	for _, d := range ds {
		switch {
		case !d.Selected:
			continue
		case d.SchemaRegistry:
			registry++
		case d.Role == "":
			unnamed++
		default:
			byRole[d.Role]++
		}
		sel++
		parts += d.Partitions
	}
	var counts []string
	for _, rc := range roleCounts {
		if n := byRole[rc.role]; n > 0 {
			counts = append(counts, plural(n, rc.one, rc.many))
		}
	}
	if registry > 0 {
		counts = append(counts, plural(registry, "schema registry topic", "schema registry topics"))
	}
	if unnamed > 0 {
		counts = append(counts, plural(unnamed, "topic the topology does not name", "topics the topology does not name"))
	}
	what := ""
	if len(counts) > 0 {
		what = " (" + strings.Join(counts, ", ") + ")"
	}
	return fmt.Sprintf("%s on the cluster, %d selected%s with %s", plural(len(ds), "topic", "topics"), sel, what, plural(parts, "partition", "partitions"))
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
