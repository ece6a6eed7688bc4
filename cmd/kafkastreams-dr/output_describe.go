// Rendering of describe: one backup's header rows, its partition table, the
// topics' configs, the group's offsets and the warnings. Functions here take
// a writer and plain values; none does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// printDescription prints a backup: a header, the partition table, the
// topics' configs, the group offsets and the warnings.
func printDescription(w io.Writer, dt *catalog.Detail, m *format.Manifest) {
	d := &dt.Summary
	if d.Partial {
		fmt.Fprintf(w, "backup %s (%s, partial: %s in %s not read, see UNREAD)\n", d.BackupID, d.State,
			plural64(d.UnreadOffsets, "offset", "offsets"), plural(d.UnreadPartitions, "partition", "partitions"))
	} else {
		fmt.Fprintf(w, "backup %s (%s)\n", d.BackupID, d.State)
	}
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-15s %s\n", k, v)
		}
	}
	row("application", d.ApplicationID)
	src := d.SourceClusterID
	if d.KafkaClusterID != "" {
		src = strings.TrimSpace(src + " (cluster id " + d.KafkaClusterID + ")")
	}
	row("source", src)
	row("parent", dash(d.ParentBackupID))
	row("started", fmtTime(d.StartedAt))
	row("cut", fmtTime(d.CutAt))
	row("finished", fmtTime(d.FinishedAt))
	row("tool version", d.ToolVersion)
	if len(d.KeyIDs) > 0 {
		row("encryption", "key ids "+strings.Join(d.KeyIDs, ", ")+" (every key a restore needs)")
	}
	chain := fmt.Sprintf("%s, %s in %s, %s stored (%s uncompressed, ratio %s)",
		plural(d.Topics, "topic", "topics"), plural64(d.Records, "record", "records"), plural(d.Segments, "segment", "segments"),
		formatBytes(d.StoredBytes), formatBytes(d.RawBytes), formatRatio(d.CompressionRatio))
	if d.InFlightTopics > 0 {
		chain += fmt.Sprintf("; in-flight tails included: %s of %s", plural64(d.InFlightRecords, "record", "records"),
			plural(d.InFlightTopics, "repartition topic", "repartition topics"))
	}
	row("chain", chain)
	row("this run", fmt.Sprintf("%s in %s, %s stored",
		plural64(d.OwnRecords, "record", "records"), plural(d.OwnSegments, "segment", "segments"), formatBytes(d.OwnBytes)))
	if dt.Selection != nil {
		row("selection", fmt.Sprintf("include %s exclude %s", bracket(dt.Selection.Include), bracket(dt.Selection.Exclude)))
		if dt.Selection.TopologyFrom != "" {
			row("topology", fmt.Sprintf("%s, sha256 %.12s", dt.Selection.TopologyFrom, dt.Selection.TopologySHA256))
		} else {
			row("topology", "none: topics classified by name")
		}
	}
	row("cut proven", describeCut(dt.Cut, d.ApplicationID != ""))
	row("in flight", describeInFlight(dt.InFlight, d.ApplicationID != ""))
	if dt.InFlight != nil && dt.InFlight.Records > 0 {
		tw := newTable(w)
		for _, t := range dt.InFlight.Topics {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, plural(t.Partitions, "partition", "partitions"), plural64(t.Records, "record", "records"))
		}
		tw.Flush()
	}

	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tCLASS\tPARTITION\tLOG START\tSTART\tEND\tHIGH WATERMARK\tRECORDS\tSEGMENTS\tSTORED\tGAPS\tUNREAD")
	for _, t := range dt.Topics {
		class := t.Class
		if t.SourceChangelog {
			class += " (source changelog)"
		}
		if t.SchemaRegistry {
			class += " (schema registry: restored first)" // as the restore plan says
		}
		for _, p := range t.Cuts {
			unread := "-"
			if p.Unread != nil {
				unread = formatGaps([]format.Gap{*p.Unread})
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", t.Name, class, p.Partition,
				p.LogStartOffset, p.StartOffset, p.EndOffset, p.HighWatermark, p.Records, p.Segments,
				formatBytes(p.StoredBytes), formatGaps(p.Gaps), unread)
		}
	}
	tw.Flush()

	fmt.Fprintln(w, "\nconfigs (replication factor, every config not at its default, and cleanup.policy, max.message.bytes, min.insync.replicas, message.timestamp.type and retention.ms even at their defaults):")
	for _, t := range dt.Topics {
		kv := configPairs(t.Configs)
		fmt.Fprintf(w, "  %s: %s, replication.factor=%d\n", t.Name, plural(t.Partitions, "partition", "partitions"), t.ReplicationFactor)
		if len(kv) > 0 {
			fmt.Fprintf(w, "    %s\n", strings.Join(kv, " "))
		}
	}

	fmt.Fprintln(w)
	printGroupOffsets(w, m)
	if len(dt.Warnings) > 0 {
		fmt.Fprintf(w, "\n%s:\n", plural(len(dt.Warnings), "warning", "warnings"))
		for _, x := range dt.Warnings {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
}

// describeCut is describe's "cut proven" row: yes or NOT, with the
// method, attempts and transactions waited for, and the reason when not
// proven; a manifest without cut (written before it was recorded) is
// treated as not proven (docs/FORMAT.md, Changes). "" without an
// application.id and a cut (nothing to prove).
func describeCut(c *format.Cut, app bool) string {
	switch {
	case c == nil && app:
		return "not recorded (the backup predates the proven cut: treated as not proven)"
	case c == nil:
		return ""
	case c.Method == format.CutMethodEnds:
		return fmt.Sprintf("not needed (method %s: no application.id, the ends only)", c.Method)
	}
	how := fmt.Sprintf("method %s, %s, %s waited for, %dms", c.Method, plural(c.Attempts, "attempt", "attempts"),
		plural(c.TransactionsWaited, "transaction", "transactions"), c.DurationMillis)
	if c.Proven {
		return "yes (" + how + ")"
	}
	return fmt.Sprintf("NO (%s): %s", how, c.Reason)
}

// describeInFlight is describe's "in flight" row: the records the
// backup's tails hold in total (the per-topic rows follow it); "none
// captured" for a backup of an application written before in-flight
// capture; "" without an application.id.
func describeInFlight(p *catalog.InFlightDetail, app bool) string {
	switch {
	case p == nil && app:
		return "none captured (the backup predates in-flight capture)"
	case p == nil:
		return ""
	}
	return fmt.Sprintf("%s in %s (tails at the cut, restored by a changelog restore)",
		plural64(p.Records, "record", "records"), plural(len(p.Topics), "repartition topic", "repartition topics"))
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func bracket(ss []string) string { return "[" + strings.Join(ss, ", ") + "]" }

// formatGaps is "-" or "[20,25) [40,41)".
func formatGaps(gs []format.Gap) string {
	if len(gs) == 0 {
		return "-"
	}
	var parts []string
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("[%d,%d)", g.From, g.To))
	}
	return strings.Join(parts, " ")
}
