package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
)

// printDrillHistory writes the history as a table, oldest drill first,
// then the verdict on the latest RTO.
func printDrillHistory(w io.Writer, res *drillHistoryResult, location string) {
	if len(res.Drills) == 0 {
		fmt.Fprintf(w, "no drill of %s is recorded in %s: a drill records its report there (drills/<drill-id>/report.json)\n", res.ApplicationID, location)
		return
	}
	fmt.Fprintf(w, "drills of %s in %s, oldest first:\n\n", res.ApplicationID, location)
	tw := newTable(w)
	fmt.Fprintln(tw, "DRILL\tSTARTED\tRESULT\tSTRATEGY\tRTO\tCHANGE\tRPO\tCHANGE\tRECORDS\tCHANGE\tBYTES\tTOPICS\tPARTITIONS")
	for _, r := range res.Drills {
		result := "passed"
		if !r.OK {
			result = "FAILED"
		}
		rto := "-"
		if r.RTO != nil {
			rto = histSeconds(*r.RTO) + " (" + histFigure(r.RTOName) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			r.DrillID, r.StartedAt.UTC().Format(time.DateTime), result, r.Strategy, rto, histChange(r.RTOChange),
			histOptSeconds(r.RPO), histChange(r.RPOChange), r.RecordsRestored, histRecordsChange(r.RecordsChange),
			histZeroDash(r.Bytes, formatBytes(r.Bytes)), histZeroDash(int64(r.Topics), strconv.Itoa(r.Topics)), histZeroDash(int64(r.Partitions), strconv.Itoa(r.Partitions)))
	}
	tw.Flush()
	fmt.Fprintln(w)
	t := res.Trend
	switch {
	case t.Latest == nil:
		fmt.Fprintln(w, "the latest drill measured no RTO: nothing to compare")
	case t.Median == nil:
		fmt.Fprintf(w, "latest RTO %s (%s): no earlier passed drill measured it, nothing to compare with\n", histSeconds(*t.Latest), t.Figure)
	case t.Grew:
		fmt.Fprintf(w, "RTO GREW: the latest drill's %s is %s, %.0f%% above the median %s of %s (threshold %g%%)\n",
			t.Figure, histSeconds(*t.Latest), *t.Growth*100, histSeconds(*t.Median), plural(t.Baseline, "earlier drill", "earlier drills"), t.Threshold*100)
	default:
		g := 0.0
		if t.Growth != nil {
			g = *t.Growth * 100
		}
		fmt.Fprintf(w, "RTO steady: the latest drill's %s is %s, %+.0f%% against the median %s of %s (threshold %g%%)\n",
			t.Figure, histSeconds(*t.Latest), g, histSeconds(*t.Median), plural(t.Baseline, "earlier drill", "earlier drills"), t.Threshold*100)
	}
}

// histFigure is the table's name of an RTO figure.
func histFigure(name string) string {
	switch name {
	case drill.FigureRTOAppCaughtUp:
		return "caught up"
	case drill.FigureRTOAppRunning:
		return "running"
	case drill.FigureRTODataRestored:
		return "data"
	}
	return name
}

func histSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) + "s" }

func histOptSeconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return histSeconds(*s)
}

func histChange(d *float64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3fs", *d)
}

func histRecordsChange(d *int64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+d", *d)
}

func histZeroDash(n int64, s string) string {
	if n == 0 {
		return "-"
	}
	return s
}
