// Rendering of estimate: the backup's cut and age, the restore throughput
// and where it comes from, and the table of strategies (or --json).
// Functions here take a writer and plain values; none does Kafka or storage
// I/O.

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
)

// writeEstimate prints e, with the cut's age counted from now: the backup,
// the throughput (measured or the default) and one row per strategy; or e
// as JSON.
func writeEstimate(w io.Writer, asJSON bool, e *estimate.Estimate, now time.Time) error {
	if asJSON {
		return writeJSON(w, e)
	}
	fmt.Fprintf(w, "backup %s (cut %s, %s ago)\n", e.BackupID, e.CutAt.UTC().Format(time.RFC3339), now.Sub(e.CutAt).Round(time.Second))
	if e.Throughput.Source == "measured" {
		fmt.Fprintf(w, "restore throughput: %.0f records/s, measured by %s (%d records in %.1fs)\n\n",
			e.Throughput.RecordsPerSecond, plural(len(e.Throughput.Reports), "past restore", "past restores"), e.Throughput.Records, e.Throughput.Seconds)
	} else if n := len(e.Throughput.Unreadable); n > 0 {
		fmt.Fprintf(w, "restore throughput: %.0f records/s, a default (no readable restore or drill report: %d unreadable, skipped)\n\n", e.Throughput.RecordsPerSecond, n)
	} else {
		fmt.Fprintf(w, "restore throughput: %.0f records/s, a default (no restore or drill has run from this repository yet)\n\n", e.Throughput.RecordsPerSecond)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "STRATEGY\tTOPICS\tRECORDS\tBYTES\tRESTORE TIME\tTHEN")
	for _, st := range e.Strategies {
		if st.Name == "standby" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", st.Name, st.Note)
			continue
		}
		then := st.Reprocess
		if st.Note != "" {
			then += " (" + st.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", st.Name, len(st.Topics), st.Records, formatBytes(st.RawBytes),
			(time.Duration(st.RestoreSeconds * float64(time.Second))).Round(time.Millisecond), then)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeRecovery(w, e)
	return nil
}

// writeRecovery prints the projected recovery to the application caught
// up of each strategy that has one (estimate.Recovery): calibrated by
// drills, or why not.
func writeRecovery(w io.Writer, e *estimate.Estimate) {
	header := false
	for _, st := range e.Strategies {
		r := st.Recovery
		if r == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nrecovery to the application caught up (from the loss of the source; calibrated by drills with --app-command):")
			header = true
		}
		if !r.Calibrated {
			fmt.Fprintf(w, "  %-10s uncalibrated  %s\n", st.Name, wrapIndent(r.Note, strings.Repeat(" ", 27)))
			continue
		}
		sec := func(s float64) string { return shortDuration(time.Duration(s * float64(time.Second))) }
		restore := r.RestoreSeconds(st.Records)
		work := *r.Seconds - restore - r.AppStartSeconds
		what := "state rehydration"
		if st.Name == "rebuild" {
			what = "reprocessing"
		}
		fmt.Fprintf(w, "  %-10s %-13s restore %s + application start %s + %s of %d records %s (%s, %s group)\n",
			st.Name, sec(*r.Seconds), sec(restore), sec(r.AppStartSeconds), what, r.AppRecords, sec(work), plural(len(r.Drills), "drill", "drills"), orNone(r.GroupType))
	}
}
