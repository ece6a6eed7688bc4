// Rendering of restore: the plan (--dry-run, and before the question), the
// report of a finished restore, the group's offsets, and the read-back of
// restore --embedded. Functions here take a writer and plain values; none
// does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// dryRunSummary is the summary line of --dry-run: "restore dry run of
// backup ID: 120 records in 6 topics (11 partitions) to restore, nothing
// written".
func dryRunSummary(p *restorer.Plan) string {
	var parts int
	var recs int64
	for _, t := range p.Topics {
		parts += len(t.PartitionPlans)
		for _, pp := range t.PartitionPlans {
			recs += pp.Records - pp.AlreadyThere
		}
	}
	return fmt.Sprintf("restore dry run of backup %s: %s in %s (%s) to restore, nothing written",
		p.BackupID, plural64(recs, "record", "records"), plural(len(p.Topics), "topic", "topics"), plural(parts, "partition", "partitions"))
}

// writeReport prints a finished restore on out, as a table or as JSON;
// with JSON the instruction to wipe the local state still goes to errOut
// (stderr).
func writeReport(out, errOut io.Writer, asJSON bool, rep *restorer.Report, target string) error {
	if !asJSON {
		printReport(out, rep, target)
		return nil
	}
	if rep.WipeState {
		fmt.Fprintf(errOut, "IMPORTANT: %s\n", restorer.WipeInstruction(rep.ApplicationID))
	}
	return writeJSON(out, restoreJSON{Status: restoreStatus(rep), Report: rep})
}

// restoreJSON is restore --json's report: the stored report
// (format.RestoreReport) with its status first, for scripts. The status
// is in the output only, not in the stored report.
type restoreJSON struct {
	// Status is "complete" (exit 0), "partial" (records in flight lost,
	// exit 3) or "failed" (a changelog partition failed the state check,
	// exit 1).
	Status string `json:"status"`
	*restorer.Report
}

// restoreStatus is a finished restore's status, as its headline and exit
// code say it: "failed" when a restored changelog partition holds another
// state than the backup's (format.StateDigestDifferent), "partial" when
// records in flight were lost (format.InFlightPlan.Lost), else "complete".
func restoreStatus(r *restorer.Report) string {
	for _, p := range r.Partitions {
		if p.StateDigestResult == format.StateDigestDifferent {
			return "failed"
		}
	}
	if r.InFlight.Lost() > 0 {
		return "partial"
	}
	return "complete"
}

// writeDryRun prints the plan of restore --dry-run into target: as JSON, or
// the plan, whether its segments passed the pre-check (ro.DryRunPrecheck)
// or were not checked, and the line saying that nothing was written.
func writeDryRun(w io.Writer, asJSON bool, p *restorer.Plan, target string, ro restorer.Options) error {
	if asJSON {
		// segments_precheck: the --precheck mode every segment this
		// restore reads passed, or "none" when they were not checked.
		precheck := "none"
		if ro.DryRunPrecheck {
			precheck = string(ro.Precheck)
		}
		return writeJSON(w, struct {
			*restorer.Plan
			SegmentsPrecheck string `json:"segments_precheck"`
		}{p, precheck})
	}
	printPlan(w, p, target)
	if ro.DryRunPrecheck {
		fmt.Fprintf(w, "\nsegments: every one this restore reads passed the pre-check (--precheck %s)\n", ro.Precheck)
	} else {
		fmt.Fprintln(w, "\nsegments: not checked (add --precheck digest or deep to check them as a restore does; verify --deep checks every segment)")
	}
	fmt.Fprintf(w, "dry run: nothing was written to %s\n", target)
	return nil
}

// describeTarget is "host:port,... (cluster ID, N brokers)".
func describeTarget(name string, p *restorer.Plan) string {
	var extra []string
	if p.TargetClusterID != "" {
		extra = append(extra, "cluster "+p.TargetClusterID)
	}
	if p.TargetBrokers > 0 {
		extra = append(extra, plural(p.TargetBrokers, "broker", "brokers"))
	}
	if len(extra) == 0 {
		return name
	}
	return fmt.Sprintf("%s (%s)", name, strings.Join(extra, ", "))
}

// printPlan prints what a restore will do: a summary, the topics with
// their action, partitions, replication factor and configs, the records of
// every partition, the group's offsets, the topics left out and the
// warnings.
func printPlan(w io.Writer, p *restorer.Plan, target string) {
	var parts int
	var recs, already int64
	for _, t := range p.Topics {
		parts += len(t.PartitionPlans)
		for _, pp := range t.PartitionPlans {
			recs += pp.Records
			already += pp.AlreadyThere
		}
	}
	fmt.Fprintf(w, "restore plan for backup %s\n", p.BackupID)
	if p.ApplicationID != "" {
		fmt.Fprintf(w, "  application  %s\n", p.ApplicationID)
	}
	fmt.Fprintf(w, "  strategy     %s\n", describeStrategy(p.Strategy))
	if p.ToTime != nil {
		fmt.Fprintf(w, "  to time      %s (each partition ends before its first record after it)\n", p.ToTime.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "  target       %s\n", describeTarget(target, p))
	line := fmt.Sprintf("  restores     %s in %s (%s)", plural64(recs, "record", "records"),
		plural(len(p.Topics), "topic", "topics"), plural(parts, "partition", "partitions"))
	if already > 0 {
		line += fmt.Sprintf("; %s already on the target from an earlier run", plural64(already, "record is", "records are"))
	}
	fmt.Fprintln(w, line)
	printInFlight(w, p.InFlight, p.Skipped, "will be")

	if len(p.Topics) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "TOPIC\tCLASS\tACTION\tPARTITIONS\tRF\tRECORDS\tCONFIGS")
		for _, t := range p.Topics {
			var n int64
			for _, pp := range t.PartitionPlans {
				n += pp.Records
			}
			cfgs := formatConfigs(t.Configs)
			if len(t.PreConfigs) > 0 {
				cfgs += "; before the records: " + formatConfigs(t.PreConfigs)
			}
			if len(t.FinalConfigs) > 0 {
				cfgs += "; after the records: " + formatConfigs(t.FinalConfigs)
			}
			class := topicClass(t.Class, t.SourceChangelog)
			if t.SchemaRegistry {
				class += " (schema registry: restored first)"
			}
			action := string(t.Action)
			if t.Resumed {
				action += " (resumed)" // a fill an earlier run began
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", t.Topic, class, action,
				t.Partitions, t.ReplicationFactor, n, cfgs)
		}
		tw.Flush()

		fmt.Fprintln(w, "\nrecords per partition:")
		tw = newTable(w)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tRECORDS\tSOURCE_END\tCUT_AT\tON_TARGET\tNO_TIMESTAMP\tPAST_RETENTION")
		for _, t := range p.Topics {
			for _, pp := range t.PartitionPlans {
				cut := "-"
				if pp.CutAt >= 0 {
					cut = strconv.FormatInt(pp.CutAt, 10)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n", t.Topic, pp.Partition, pp.Records, pp.SourceEnd, cut, pp.AlreadyThere, pp.NoTimestamp, pp.PastRetention)
			}
		}
		tw.Flush()
	}

	if g := p.Group; g != nil {
		state := g.TargetState
		if state == "" {
			state = "absent"
		}
		if g.TargetType != "" {
			state += ", " + g.TargetType
		}
		fmt.Fprintf(w, "\ngroup %s (on the target: %s): %s\n", g.GroupID, state, offsetsSummary(g.Offsets))
		printGroupConfigs(w, g, "group configs set on the target first: ")
		printOffsets(w, g.Offsets, g.TargetState != "")
	} else if p.ShareGroup != "" {
		fmt.Fprintf(w, "\nno group offsets: group %q was a share group (KIP-932) on the source; the restore leaves the target's group alone\n", p.ShareGroup)
	} else {
		fmt.Fprintln(w, "\nno group offsets: the backup holds none (was application_id set when it was taken?)")
	}
	printSkipped(w, p.Skipped)
	printWarnings(w, p.Warnings)
}

// reportHeadline is the first line of a finished restore's report:
// "restore ID complete"; when restored changelog partitions hold
// another state than the backup's (format.StateDigestDifferent; the
// restore then exits 1), that it failed the state check; when records in
// flight were lost (the restore then exits 3), that it is partial.
func reportHeadline(r *restorer.Report) string {
	different := 0
	for _, p := range r.Partitions {
		if p.StateDigestResult == format.StateDigestDifferent {
			different++
		}
	}
	if different > 0 {
		return fmt.Sprintf("restore %s FAILED the state check: %s another state than the backup's (the records are restored; see state below)",
			r.RestoreID, plural(different, "changelog partition holds", "changelog partitions hold"))
	}
	if lost := r.InFlight.Lost(); lost > 0 {
		about := ""
		if r.InFlight.Estimated {
			about = "about "
		}
		return fmt.Sprintf("restore %s PARTIAL: %s%s in flight lost (see in flight below)", r.RestoreID, about, plural64(lost, "record", "records"))
	}
	return fmt.Sprintf("restore %s complete", r.RestoreID)
}

// printReport prints a finished restore: a summary, the topics, the group
// offsets committed, and, after a changelog restore, what must happen to
// the application's local state before it starts.
func printReport(w io.Writer, r *restorer.Report, target string) {
	if r.Complete {
		fmt.Fprintf(w, "restore of backup %s into %s was already complete: nothing written, the group's offsets left as they are\n", r.BackupID, describeTarget(target, &r.Plan))
		printWarnings(w, r.Warnings)
		return
	}
	fmt.Fprintln(w, reportHeadline(r))
	fmt.Fprintf(w, "  backup       %s\n", r.BackupID)
	if r.ApplicationID != "" {
		fmt.Fprintf(w, "  application  %s\n", r.ApplicationID)
	}
	fmt.Fprintf(w, "  strategy     %s\n", describeStrategy(r.Strategy))
	if r.ToTime != nil {
		fmt.Fprintf(w, "  to time      %s\n", r.ToTime.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "  target       %s\n", describeTarget(target, &r.Plan))

	// What the restored partitions hold (the restorer checks each against
	// its plan), and what this run produced of it.
	byTopic := map[string]int64{}
	var total int64
	for _, t := range r.Topics {
		for _, pp := range t.PartitionPlans {
			byTopic[t.Topic] += pp.Records
			total += pp.Records
		}
	}
	where := fmt.Sprintf("%s (%s)", plural(len(r.Topics), "topic", "topics"), plural(len(r.Partitions), "partition", "partitions"))
	if total == r.Records {
		fmt.Fprintf(w, "  records      %s produced into %s\n", plural64(r.Records, "record", "records"), where)
	} else {
		fmt.Fprintf(w, "  records      %s in %s: %d produced by this run, %d there from an earlier run\n",
			plural64(total, "record", "records"), where, r.Records, total-r.Records)
	}
	if line := stateDigestLine(r.Partitions); line != "" {
		fmt.Fprintf(w, "  state        %s\n", line)
	}
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, "  duration     %s\n", r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond))
	}
	printInFlight(w, r.InFlight, r.Skipped, "were")

	if len(r.Topics) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "TOPIC\tCLASS\tACTION\tPARTITIONS\tRF\tRECORDS")
		for _, t := range r.Topics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", t.Topic, topicClass(t.Class, t.SourceChangelog), actionDone(t.Action), t.Partitions, t.ReplicationFactor, byTopic[t.Topic])
		}
		tw.Flush()
	}

	if g := r.Group; g != nil {
		fmt.Fprintln(w)
		commits := 0
		for _, op := range g.Offsets {
			if op.Action == format.OffsetCommit {
				commits++
			}
		}
		switch {
		case r.Committed:
			fmt.Fprintf(w, "group %s: %s committed and read back equal\n", g.GroupID, plural(commits, "offset", "offsets"))
		case commits > 0:
			fmt.Fprintf(w, "group %s: the offsets below were NOT committed (see the warnings)\n", g.GroupID)
		default:
			fmt.Fprintf(w, "group %s: no offset to commit\n", g.GroupID)
		}
		printGroupConfigs(w, g, "group configs set on the target: ")
		printOffsetPlans(w, g.Offsets)
	}
	printSkipped(w, r.Skipped)
	printWarnings(w, r.Warnings)

	if r.WipeState {
		bar := strings.Repeat("=", 78)
		fmt.Fprintf(w, "\n%s\nWIPE LOCAL STATE BEFORE THE APPLICATION STARTS\n\n%s\n", bar, wrap(restorer.WipeInstruction(r.ApplicationID), 78))
		fmt.Fprintln(w, "\nchangelog partitions, old end on the lost cluster -> new end:")
		tw := newTable(w)
		for _, pr := range r.Partitions {
			if pr.Class == string(topicfilter.Changelog) || isSourceChangelog(r, pr.Topic) { // the restorer marks source changelogs; older reports may not
				fmt.Fprintf(tw, "  %s/%d\t%d\t->\t%d\n", pr.Topic, pr.Partition, pr.SourceEnd, pr.NewEnd)
			}
		}
		tw.Flush()
		fmt.Fprintln(w, bar)
	}
}

func isSourceChangelog(r *restorer.Report, topic string) bool {
	for _, t := range r.Topics {
		if t.Topic == topic {
			return t.SourceChangelog
		}
	}
	return false
}

func describeStrategy(s restorer.Strategy) string {
	switch s {
	case restorer.StrategyChangelog:
		return "changelog (topics and state; group offsets translated)"
	case restorer.StrategyRebuild:
		return "rebuild (no changelogs; the application rebuilds its state from its input)"
	}
	return string(s)
}

func topicClass(class string, sourceChangelog bool) string {
	if sourceChangelog {
		return class + " (source changelog)"
	}
	if class == string(topicfilter.Repartition) {
		return class + " (in-flight tail)"
	}
	return class
}

// printInFlight prints the records in flight at the backup's cut and what
// the restore does with them ("will be" or "were" restored or lost), one
// line per repartition topic below the total when they are lost. Their
// cause is --topics when skipped names a tail it did not match, else
// --skip-in-flight.
func printInFlight(w io.Writer, p *format.InFlightPlan, skipped []format.SkippedTopic, tense string) {
	if p == nil {
		return
	}
	what := fmt.Sprintf("%s in %s", plural64(p.Records, "record", "records"), plural(len(p.Topics), "repartition topic", "repartition topics"))
	switch {
	case p.Estimated:
		fmt.Fprintf(w, "  in flight    about %s: lost (not in this backup, which predates in-flight capture; an estimate from the high watermark)\n", what)
	case p.Restored:
		fmt.Fprintf(w, "  in flight    %s: %s restored, and the group's offsets on them committed to each tail's first record\n", what, tense)
	default:
		cause := "--skip-in-flight"
		for _, sk := range skipped {
			if slices.ContainsFunc(p.Topics, func(t format.InFlightTopicPlan) bool { return t.Topic == sk.Topic && !t.Restored }) {
				cause = "left out by --topics"
			}
		}
		fmt.Fprintf(w, "  in flight    %s: NOT all restored (%s): %s lost\n", what, cause, plural64(p.Lost(), "record", "records"))
	}
	if p.Lost() > 0 {
		tw := newTable(w)
		for _, t := range p.Topics {
			if t.Restored {
				continue
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", t.Topic, plural(t.Partitions, "partition", "partitions"), plural64(t.Records, "record", "records"))
		}
		tw.Flush()
	}
}

// actionDone is a plan action in the past tense.
func actionDone(action format.TopicAction) string {
	switch action {
	case format.ActionCreate:
		return "created"
	case format.ActionResume:
		return "resumed"
	case format.ActionFill:
		return "filled"
	}
	return string(action)
}

// printGroupConfigs prints the group configs the restore sets (after
// lead), and those --skip-group-configs left unset; nothing when neither.
func printGroupConfigs(w io.Writer, g *format.GroupPlan, lead string) {
	if len(g.Configs) > 0 {
		kv := make([]string, 0, len(g.Configs))
		for _, k := range slices.Sorted(maps.Keys(g.Configs)) {
			v := k + "=" + g.Configs[k]
			if old, ok := g.TargetConfigs[k]; ok && old != g.Configs[k] {
				v += fmt.Sprintf(" (overwrites %s with %s)", old, g.Configs[k])
			}
			kv = append(kv, v)
		}
		fmt.Fprintf(w, "%s%s\n", lead, strings.Join(kv, ", "))
	}
	if len(g.SkippedConfigs) > 0 {
		fmt.Fprintf(w, "group configs NOT set (--skip-group-configs): %s\n", strings.Join(g.SkippedConfigs, ", "))
	}
}

// formatConfigs is "k=v, k=v" sorted by key, or "-" for broker defaults.
func formatConfigs(c map[string]string) string {
	if len(c) == 0 {
		return "-"
	}
	kv := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		kv = append(kv, k+"="+c[k])
	}
	return strings.Join(kv, ", ")
}

func offsetsSummary(offs []restorer.OffsetPlan) string {
	var commit, drop int
	for _, op := range offs {
		if op.Action == format.OffsetCommit {
			commit++
		} else {
			drop++
		}
	}
	s := plural(commit, "offset", "offsets") + " to commit"
	if drop > 0 {
		s += fmt.Sprintf(", %d dropped", drop)
	}
	return s
}

// printOffsetPlans prints the group offsets table: TOPIC PARTITION
// COMMITTED TRANSLATED ACTION NOTE.
func printOffsetPlans(w io.Writer, offs []restorer.OffsetPlan) { printOffsets(w, offs, false) }

// printOffsets prints the offsets table; with onTarget a column shows
// what the group has committed on the target now (plans only: a finished
// restore has replaced it).
func printOffsets(w io.Writer, offs []restorer.OffsetPlan, onTarget bool) {
	if len(offs) == 0 {
		return
	}
	tw := newTable(w)
	if onTarget {
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tTRANSLATED\tON TARGET NOW\tACTION\tNOTE")
	} else {
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tTRANSLATED\tACTION\tNOTE")
	}
	for _, op := range offs {
		tr, cur, committed := "-", "-", "-"
		if !op.NeverCommitted {
			committed = strconv.FormatInt(op.Committed, 10)
		}
		if op.Translated >= 0 {
			tr = strconv.FormatInt(op.Translated, 10)
		}
		if op.Current >= 0 {
			cur = strconv.FormatInt(op.Current, 10)
		}
		if onTarget {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", op.Topic, op.Partition, committed, tr, cur, op.Action, op.Note)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", op.Topic, op.Partition, committed, tr, op.Action, op.Note)
		}
	}
	tw.Flush()
}

func printSkipped(w io.Writer, skipped []restorer.SkippedTopic) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintln(w, "\nnot restored:")
	tw := newTable(w)
	for _, st := range skipped {
		fmt.Fprintf(tw, "  %s\t%s\n", st.Topic, st.Reason)
	}
	tw.Flush()
}

// compareOffsets prints, for every committed offset of the backup, what the
// new cluster's group holds now ("orders/0: committed 12 on the lost
// cluster -> 12 on the new one"), and returns how it differs from the
// plan: a committed offset that is not the translated one, or an offset
// committed that the plan dropped.
func compareOffsets(w io.Writer, g *restorer.GroupPlan, fetched kadm.OffsetResponses) []string {
	fmt.Fprintf(w, "\ngroup %s, read back from the new cluster:\n", g.GroupID)
	var bad []string
	for _, op := range g.Offsets {
		got, ok := fetched.Lookup(op.Topic, op.Partition)
		have := ok && got.Err == nil && got.At >= 0
		tp := fmt.Sprintf("%s/%d", op.Topic, op.Partition)
		was := committedOnTheLostCluster(op.Committed, op.NeverCommitted)
		switch {
		case op.Action == format.OffsetCommit && have:
			fmt.Fprintf(w, "  %s: %s -> %d on the new one\n", tp, was, got.At)
			if got.At != op.Translated {
				bad = append(bad, fmt.Sprintf("%s is %d, the plan says %d", tp, got.At, op.Translated))
			}
		case op.Action == format.OffsetCommit:
			fmt.Fprintf(w, "  %s: %s -> MISSING on the new one\n", tp, was)
			bad = append(bad, fmt.Sprintf("%s was not committed (the plan says %d)", tp, op.Translated))
		case have:
			fmt.Fprintf(w, "  %s: %s -> %d on the new one, but the plan drops it\n", tp, was, got.At)
			bad = append(bad, fmt.Sprintf("%s is %d, the plan drops it", tp, got.At))
		default:
			why, _, _ := strings.Cut(op.Note, ":")
			fmt.Fprintf(w, "  %s: %s -> none on the new one (dropped: %s)\n", tp, was, why)
		}
	}
	return bad
}

// committedOnTheLostCluster is a group offset as the lost cluster had it:
// "committed 12 on the lost cluster", or "never committed on the lost
// cluster" for a restored in-flight partition the group never committed
// (format.OffsetPlan.NeverCommitted; the plan's note says the same).
func committedOnTheLostCluster(committed int64, never bool) string {
	if never {
		return "never committed on the lost cluster"
	}
	return fmt.Sprintf("committed %d on the lost cluster", committed)
}

// stateDigestLine sums up the state digest check of the restored changelog
// partitions ("" when none was checked): "3 changelog partitions hold the
// backup's state (state digest equal)", with the counts that differ, have
// no digest in the backup ("not recorded") or were cut by --to-time.
func stateDigestLine(prs []restorer.PartitionReport) string {
	n := map[string]int{}
	total := 0
	for _, pr := range prs {
		if pr.StateDigestResult != "" {
			n[pr.StateDigestResult]++
			total++
		}
	}
	if total == 0 {
		return ""
	}
	var parts []string
	if k := n[format.StateDigestEqual]; k > 0 {
		parts = append(parts, fmt.Sprintf("%s hold the backup's state (state digest equal)", plural(k, "changelog partition", "changelog partitions")))
	}
	if k := n[format.StateDigestDifferent]; k > 0 {
		parts = append(parts, fmt.Sprintf("%s DIFFERENT from the backup's state", plural(k, "changelog partition", "changelog partitions")))
	}
	if k := n[format.StateDigestNotRecorded]; k > 0 {
		parts = append(parts, fmt.Sprintf("%s not compared: the backup recorded no state digest (written before digests existed)", plural(k, "changelog partition", "changelog partitions")))
	}
	if k := n[format.StateDigestLossAccepted]; k > 0 {
		parts = append(parts, fmt.Sprintf("%s differ where --retention accept-loss let the broker delete records past retention.ms (the loss the plan warned of)", plural(k, "changelog partition", "changelog partitions")))
	}
	if k := n[format.StateDigestCut]; k > 0 {
		parts = append(parts, fmt.Sprintf("%s not compared: cut by --to-time", plural(k, "changelog partition", "changelog partitions")))
	}
	return strings.Join(parts, "; ")
}
