// Rendering of drill: the report (phases, RTO and RPO, data volume, the
// group's offsets on the lost and the new cluster, the verdict), its header,
// and the story drill --embedded tells. Functions here take a writer and
// plain values; none does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// printDrillReport prints the readable drill report: the header, the
// phases with their duration and result, RTO and RPO, the data volume, the
// group's offsets on the lost and the new cluster, what to wipe, the
// warnings, and PASSED or FAILED.
func printDrillReport(w io.Writer, rep *drill.Report, header []string, junit string) {
	for _, l := range header {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "PHASE\tDURATION\tRESULT")
	for _, p := range rep.Phases {
		d := "-"
		if p.Status != drill.StatusSkipped {
			d = shortDuration(time.Duration(p.Duration))
		}
		result := string(p.Status)
		switch p.Status {
		case drill.StatusPassed:
			result += ": " + p.Detail
		case drill.StatusFailed:
			result = "FAILED"
			if p.Refused {
				result += " (refused)"
			}
			switch {
			case p.Error != "":
				// One line per row: lines the error quotes (the
				// application's output) go below the table.
				first, more, _ := strings.Cut(p.Error, "\n")
				result += ": " + first
				if more != "" {
					result += " (below)"
				}
			case len(p.Problems) > 0:
				result += ": " + plural(len(p.Problems), "problem", "problems") + ", the first: " + p.Problems[0]
			}
		case drill.StatusSkipped:
			if rep.Interrupted {
				result += " (the drill was interrupted)"
			} else {
				result += " (an earlier phase failed)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, d, result)
	}
	tw.Flush()
	if p := rep.Failed(); p != nil && strings.Contains(p.Error, "\n") {
		first, more, _ := strings.Cut(p.Error, "\n")
		fmt.Fprintf(w, "\n%s: %s\n", p.Name, first)
		for _, l := range strings.Split(more, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if p := rep.Failed(); p != nil && len(p.Problems) > 0 {
		fmt.Fprintf(w, "\n%s: %s:\n", p.Name, plural(len(p.Problems), "problem", "problems"))
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  - %s\n", pr)
		}
	}

	fmt.Fprintln(w)
	if rep.RTO > 0 {
		fmt.Fprintf(w, "RTO   %-9s from the start of the drill to restored and verified\n", shortDuration(time.Duration(rep.RTO)))
	} else {
		fmt.Fprintln(w, "RTO   -         not reached: the drill did not get to restored and verified")
	}
	if !rep.CutAt.IsZero() {
		lost := "at the end of the backup"
		if !rep.BackupTaken {
			lost = "at the start of the drill"
		}
		fmt.Fprintf(w, "RPO   %-9s age of the backup's cut (%s) when the source was lost (%s)\n",
			shortDuration(time.Duration(rep.RPO)), rep.CutAt.UTC().Format(time.RFC3339), lost)
	} else {
		fmt.Fprintln(w, "RPO   -         unknown: the drill did not get to the backup's manifest")
	}
	printRTOToApp(w, rep)
	if v := rep.Volume; v.Topics > 0 {
		fmt.Fprintf(w, "data  %s: %s in %s (%s)%s, %s, %d bytes stored",
			orNone(rep.BackupID), plural64(v.Records, "record", "records"), plural(v.Topics, "topic", "topics"), plural(v.Partitions, "partition", "partitions"),
			tailsIncluded(v.InFlightTopics), plural(v.Segments, "segment", "segments"), v.Bytes)
		if rep.RestoreID != "" {
			fmt.Fprintf(w, "; %d restored, %d verified", v.RecordsRestored, v.RecordsVerified)
		}
		fmt.Fprintln(w)
	}

	if rep.GroupID != "" && len(rep.Offsets) > 0 {
		fmt.Fprintf(w, "\ngroup %s, committed on the lost cluster -> on the new one:\n", rep.GroupID)
		for _, op := range rep.Offsets {
			tp := fmt.Sprintf("%s/%d", op.Topic, op.Partition)
			was := committedOnTheLostCluster(op.Committed, op.NeverCommitted)
			switch {
			case op.Action == format.OffsetCommit && op.OnTarget >= 0:
				fmt.Fprintf(w, "  %s: %s -> %d on the new one\n", tp, was, op.OnTarget)
			case op.Action == format.OffsetCommit:
				fmt.Fprintf(w, "  %s: %s -> %d planned, not read back\n", tp, was, op.Translated)
			default:
				why, _, _ := strings.Cut(op.Note, ":")
				fmt.Fprintf(w, "  %s: %s -> none on the new one (dropped: %s)\n", tp, was, why)
			}
		}
	}
	if len(rep.States) > 0 {
		fmt.Fprintln(w, "\nstate of the restored stores (state digest of each changelog on the target against the backup's):")
		for _, st := range rep.States {
			line := fmt.Sprintf("  %s (topic %s, %s): %s", st.Store, st.Topic, plural(st.Partitions, "partition", "partitions"), st.Result)
			if len(st.Different) > 0 {
				line += " in " + partitionsText(st.Different)
			}
			fmt.Fprintln(w, line)
		}
	}
	if rep.WipeState {
		bar := strings.Repeat("=", 78)
		fmt.Fprintf(w, "\n%s\nWIPE LOCAL STATE BEFORE THE APPLICATION STARTS\n\n%s\n%s\n", bar, wrap(restorer.WipeInstruction(rep.ApplicationID), 78), bar)
	}
	printWarnings(w, rep.Warnings)

	fmt.Fprintln(w)
	verdict := "drill PASSED"
	if !rep.OK {
		verdict = "drill FAILED"
		if rep.Interrupted {
			verdict = "drill INTERRUPTED"
		}
		if p := rep.Failed(); p != nil {
			verdict += " in phase " + p.Name
		}
	}
	if rep.RestoreID != "" {
		verdict += fmt.Sprintf(" (backup %s, restore %s)", rep.BackupID, rep.RestoreID)
	}
	if junit != "" {
		verdict += "; JUnit XML: " + junit
	}
	fmt.Fprintln(w, verdict)
}

// printRTOToApp prints the three recovery times, each with its
// definition, counted from the loss of the source; one not reached is "-".
func printRTOToApp(w io.Writer, rep *drill.Report) {
	lost := "the end of the backup"
	if !rep.BackupTaken {
		lost = "the start of the drill"
	}
	fmt.Fprintf(w, "\nrecovery time from the loss of the source (%s):\n", lost)
	line := func(name string, d drill.Duration, reached bool, def string) {
		v := "-"
		if reached {
			v = shortDuration(time.Duration(d))
		}
		fmt.Fprintf(w, "  %-18s %-9s %s\n", name, v, def)
	}
	line("rto_data_restored", rep.RTODataRestored, rep.RTODataRestoredReached(), "to the restored records verified on the target")
	if rep.App == nil && !rep.RTOAppRunningReached() {
		fmt.Fprintln(w, "  rto_app_running    -         the application was not started (--app-command, drill.app.command)")
		fmt.Fprintln(w, "  rto_app_caught_up  -         the application was not started")
	} else {
		line("rto_app_running", rep.RTOAppRunning, rep.RTOAppRunningReached(), "to the application running: its group Stable, every partition (task) assigned")
		line("rto_app_caught_up", rep.RTOAppCaughtUp, rep.RTOAppCaughtUpReached(), "to the application caught up: every committed offset of its group at its end (lag zero)")
	}
	if a := rep.App; a != nil {
		how := a.Stopped
		if a.ExitStatus != "" {
			how = "it exited by itself (" + a.ExitStatus + ")"
		} else if how != "" {
			how = "stopped with " + how
		}
		fmt.Fprintf(w, "  application: group %s (%s), last state %s, %s, lag %d on %s; %s\n",
			rep.GroupID, orNone(a.GroupType), orNone(a.GroupState), plural(a.Members, "member", "members"), a.Lag, plural(a.Partitions, "partition", "partitions"), orNone(how))
	}
	if rep.DrillReportKey != "" {
		fmt.Fprintf(w, "  recorded in the repository as %s (estimate uses it)\n", rep.DrillReportKey)
	}
	fmt.Fprintln(w)
}

// shortDuration rounds d for a table: 35ms, 1.24s, 2m3s.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// wrapIndent wraps s at 78 columns, indenting the lines after the first.
func wrapIndent(s, indent string) string {
	return strings.ReplaceAll(wrap(s, 78-len(indent)), "\n", "\n"+indent)
}

// drillHeader heads the report of a drill of application at source (the
// bootstrap servers, when the drill takes a new backup) or of the existing
// backup backupID ("latest" or an id; "" for a new backup), from the
// repository at location into target.
func drillHeader(application, source, backupID, location, target string) []string {
	header := []string{fmt.Sprintf("DR drill of %s", orNone(application))}
	if backupID == "" {
		header = append(header, fmt.Sprintf("  source       %s", source))
	} else {
		header = append(header, fmt.Sprintf("  backup       %s (existing; the source counts as lost when the drill starts)", backupID))
	}
	return append(header,
		fmt.Sprintf("  repository   %s", location),
		fmt.Sprintf("  target       %s", target))
}

// embeddedDrillStory heads the report of drill --embedded: what happened,
// step by step, on the source cluster at sourceSeeds, the repository out and
// the target cluster at targetSeeds.
func embeddedDrillStory(rep *drill.Report, sourceSeeds, targetSeeds []string, out string) []string {
	story := []string{
		fmt.Sprintf("DR drill of %s on in-process clusters", sample.AppID),
		"",
		wrapIndent(fmt.Sprintf("1. A source cluster of 3 brokers (franz-go kfake, at %s) held the sample Kafka Streams application %q: its input, changelog and output topics and its group's committed offsets.",
			strings.Join(sourceSeeds, ","), sample.AppID), "   "),
	}
	if p := rep.Phase(drill.PhaseBackup); p != nil && p.OK() {
		v := rep.Volume
		story = append(story,
			wrapIndent(fmt.Sprintf("2. backup %s into %s: %s of %s (%s)%s, %d bytes stored.",
				rep.BackupID, out, plural64(v.Records, "record", "records"), plural(v.Topics, "topic", "topics"), plural(v.Partitions, "partition", "partitions"),
				tailsIncluded(v.InFlightTopics), v.Bytes), "   "),
			"3. The source cluster is gone: it was stopped after the backup.")
	} else {
		story = append(story, fmt.Sprintf("2. The backup into %s failed (below).", out))
	}
	story = append(story,
		wrapIndent(fmt.Sprintf("4. restore into a new, empty cluster of 3 brokers (at %s), changelog strategy.", strings.Join(targetSeeds, ",")), "   "),
		wrapIndent("5. verification: every segment of the backup (size, SHA-256, decoded records), every restored record against the backup field for field, and the group's committed offsets read back from the new cluster.", "   "))
	return story
}
