// Rendering of prune: each backup's fate (keep or forget, and the rules that
// keep it) and what was or would be deleted (or --json). Functions here take
// a writer and plain values; none does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
)

// printPrune prints each backup's fate and a summary line.
func printPrune(w io.Writer, location string, r *catalog.PruneResult) {
	if len(r.Backups) == 0 {
		fmt.Fprintf(w, "no backups in %s\n", location)
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "ACTION\tBACKUP ID\tSTATE\tCUT (UTC)\tREASON")
		for _, d := range r.Backups {
			action := "keep"
			if !d.Keep {
				action = "forget"
			}
			cut := "-"
			if !d.CutAt.IsZero() {
				cut = d.CutAt.UTC().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", action, d.BackupID, d.State, cut, d.Reason)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	verb := map[bool]string{true: "would delete", false: "deleted"}[r.DryRun]
	fmt.Fprintf(w, "%s %s in %s: %s", map[bool]string{true: "dry run:", false: "prune:"}[r.DryRun], verb, location,
		plural(r.Forgotten, "backup manifest", "backup manifests"))
	if r.Progress > 0 {
		fmt.Fprintf(w, ", %s", plural(r.Progress, "progress file", "progress files"))
	}
	fmt.Fprintf(w, ", %s (%s)", plural(r.Segments, "segment", "segments"), formatBytes(r.SegmentBytes))
	if r.Journals > 0 {
		fmt.Fprintf(w, ", %s", plural(r.Journals, "restore journal", "restore journals"))
	}
	fmt.Fprintf(w, "; %s (%s) stay\n", plural(r.KeptSegments, "segment", "segments"), formatBytes(r.KeptBytes))
	if r.RetainedSegments > 0 && r.RetainedUntil != nil {
		fmt.Fprintf(w, "%s no backup names stay under S3 Object Lock retention until %s at the latest; a prune after that deletes them\n",
			plural(r.RetainedSegments, "segment", "segments"), r.RetainedUntil.UTC().Format("2006-01-02 15:04:05"))
	}
	if r.DryRun {
		fmt.Fprintln(w, "nothing was deleted")
	}
}
