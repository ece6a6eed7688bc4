// Rendering of state check and state wipe: the verdict per task and store
// (or --json), and what a wipe removes. Functions here take a writer and
// plain values; none does Kafka, storage or file system I/O.

package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/kafkastreams-dr/kafkastreams-dr/statedir"
)

// writeStateFindings prints the findings of state check for applicationID,
// judged against last (the last restore into the cluster, nil for none;
// with Unknown set, the header says why it cannot be known):
// a table TASK STORE CHANGELOG CHECKPOINT CHANGELOG END VERDICT REASON, or
// the findings as JSON.
func writeStateFindings(w io.Writer, asJSON bool, applicationID string, last *statedir.Restore, findings []statedir.Finding) error {
	if asJSON {
		return writeJSON(w, findings)
	}
	if last != nil && last.Unknown != "" {
		fmt.Fprintf(w, "last restore of %s cannot be known: %s\nno store is ok by its changelog alone: state from before a restore would be stale\n\n", applicationID, last.Unknown)
	} else if last != nil {
		strategy := ""
		if last.Strategy != "" {
			strategy = ", strategy " + last.Strategy
		}
		// The boundary the verdicts use (Restore.Boundary): its finish.
		fmt.Fprintf(w, "last restore of %s: %s (finished %s%s): state from before then is stale\n\n", applicationID, last.RestoreID,
			last.Boundary().UTC().Format("2006-01-02T15:04:05Z"), strategy)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TASK\tSTORE\tCHANGELOG\tCHECKPOINT\tCHANGELOG END\tVERDICT\tREASON")
	for _, f := range findings {
		tp, cp, end := "-", "-", "-"
		if f.Topic != "" {
			tp = fmt.Sprintf("%s/%d", f.Topic, f.Partition)
		}
		if f.Checkpoint >= 0 || f.Topic != "" {
			cp = strconv.FormatInt(f.Checkpoint, 10)
		}
		if f.TargetEnd >= 0 {
			end = strconv.FormatInt(f.TargetEnd, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Task, f.Store, tp, cp, end, f.Verdict, f.Reason)
	}
	tw.Flush()
	return nil
}

// wipeSummary is what plan removes: "DIR (N task directories, N files,
// SIZE)".
func wipeSummary(plan *statedir.WipePlan) string {
	return fmt.Sprintf("%s (%s, %s, %s)", plan.Dir, plural(len(plan.Tasks), "task directory", "task directories"),
		plural(plan.Files, "file", "files"), formatBytes(plan.Bytes))
}

// printWipeDryRun prints state wipe --dry-run: every entry plan would
// remove, and the summary.
func printWipeDryRun(w io.Writer, plan *statedir.WipePlan) {
	for _, e := range plan.Entries() {
		fmt.Fprintln(w, filepath.Join(plan.Dir, e))
	}
	fmt.Fprintf(w, "would remove %s; nothing was removed (dry run)\n", wipeSummary(plan))
}
