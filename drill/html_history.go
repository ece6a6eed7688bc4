package drill

import (
	"fmt"
	"strconv"
	"strings"
)

// The drawing sizes of the history chart, in CSS pixels: the plot from
// x historyLeft over chartWidth, from y historyTop down over
// historyPlotH.
const (
	historyLeft  = 70.0
	historyTop   = 20.0
	historyPlotH = 160.0
)

// htmlHistory is the page's history section (HTMLRun.History).
type htmlHistory struct {
	Rows     []htmlHistoryRow
	Total    int  // the rows recorded; Rows are the last HistoryPageRows of them
	Capped   bool // Total > len(Rows)
	Current  bool // this drill is the last row
	Trend    RTOTrend
	Grew     bool
	Sentence string
	Warnings []string
	Chart    *htmlHistoryChart
}

type htmlHistoryRow struct {
	DrillID, Started, Result, Strategy string
	OK, Current                        bool
	RTO, Figure, RTOChange             string
	RPO, RPOChange                     string
	Records, RecordsChange             string
	Bytes, BytesIEC                    string
	Topics, Partitions                 string
}

type htmlHistoryChart struct {
	Width, Height, Left, Top, PlotW, PlotH, YMax float64
	Points                                       []htmlHistoryPoint
	Polyline                                     string
	YTicks                                       []htmlTick
	// Limit is the y of the trend's threshold (the median times 1 plus
	// the threshold), 0 for none, and LimitSeconds its seconds.
	Limit        float64
	LimitSeconds string
}

type htmlHistoryPoint struct {
	DrillID, Figure, Seconds string
	Index                    int
	OK                       bool
	X, Y                     float64
}

// history is the history section of the page, nil when run has neither
// rows nor warnings.
func history(r *Report, run HTMLRun) *htmlHistory {
	if len(run.History) == 0 && len(run.HistoryWarnings) == 0 {
		return nil
	}
	h := &htmlHistory{Total: len(run.History), Trend: run.Trend, Grew: run.Trend.Grew, Warnings: run.HistoryWarnings}
	rows := run.History
	if len(rows) > HistoryPageRows {
		rows, h.Capped = rows[len(rows)-HistoryPageRows:], true
	}
	for _, hr := range rows {
		row := htmlHistoryRow{
			DrillID: hr.DrillID, Started: hr.StartedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"), Result: "passed",
			Strategy: string(hr.Strategy), OK: hr.OK, Current: r.DrillID != "" && hr.DrillID == r.DrillID,
			RTO: optSeconds(hr.RTO), Figure: hr.RTOName, RTOChange: optChange(hr.RTOChange),
			RPO: optSeconds(hr.RPO), RPOChange: optChange(hr.RPOChange),
			Records: strconv.FormatInt(hr.RecordsRestored, 10), RecordsChange: "-",
			Bytes: zeroDash(hr.Bytes), BytesIEC: iec(hr.Bytes),
			Topics: zeroDash(int64(hr.Topics)), Partitions: zeroDash(int64(hr.Partitions)),
		}
		if !hr.OK {
			row.Result = "FAILED"
		}
		if row.Figure == "" {
			row.Figure = "-"
		}
		if c := hr.RecordsChange; c != nil {
			row.RecordsChange = fmt.Sprintf("%+d", *c)
		}
		h.Rows = append(h.Rows, row)
	}
	h.Current = len(h.Rows) > 0 && h.Rows[len(h.Rows)-1].Current
	h.Sentence = trendSentence(run.Trend)
	h.Chart = historyChart(rows, run.Trend)
	return h
}

// trendSentence is the trend as drill history prints it.
func trendSentence(t RTOTrend) string {
	switch {
	case t.Latest == nil:
		return "The latest drill recorded measured no RTO: nothing to compare."
	case t.Median == nil:
		return fmt.Sprintf("Latest RTO %s s (%s): no earlier passed drill measured it, nothing to compare with.", optSeconds(t.Latest), t.Figure)
	}
	drills := strconv.Itoa(t.Baseline) + " earlier drills"
	if t.Baseline == 1 {
		drills = "1 earlier drill"
	}
	g := 0.0
	if t.Growth != nil {
		g = *t.Growth * 100
	}
	if t.Grew {
		return fmt.Sprintf("RTO GREW: the latest drill's %s is %s s, %.0f%% above the median %s s of %s (threshold %s%%).",
			t.Figure, optSeconds(t.Latest), g, optSeconds(t.Median), drills, trimFloat(t.Threshold*100))
	}
	return fmt.Sprintf("RTO steady: the latest drill's %s is %s s, %+.0f%% against the median %s s of %s (threshold %s%%).",
		t.Figure, optSeconds(t.Latest), g, optSeconds(t.Median), drills, trimFloat(t.Threshold*100))
}

// historyChart plots each row's RTO (its furthest figure) against its
// place in rows, the y axis from 0 to a round number at or above the
// largest RTO and the trend's threshold; nil when no row has an RTO.
func historyChart(rows []HistoryRow, t RTOTrend) *htmlHistoryChart {
	c := &htmlHistoryChart{Width: historyLeft + chartWidth + 20, Height: historyTop + historyPlotH + 16,
		Left: historyLeft, Top: historyTop, PlotW: chartWidth, PlotH: historyPlotH}
	if !anyRTO(rows) {
		return nil
	}
	peak, limit := 0.0, 0.0
	for _, r := range rows {
		if r.RTO != nil {
			peak = max(peak, recordedSecondsOf(*r.RTO))
		}
	}
	if t.Median != nil {
		limit = *t.Median * (1 + t.Threshold)
	}
	c.YMax = niceCeil(max(peak, limit, 0.001))
	y := func(s float64) float64 { return round3(historyTop + historyPlotH - s/c.YMax*historyPlotH) }
	var line []string
	for i, r := range rows {
		if r.RTO == nil {
			continue
		}
		s := recordedSecondsOf(*r.RTO)
		p := htmlHistoryPoint{DrillID: r.DrillID, Figure: r.RTOName, Seconds: strconv.FormatFloat(s, 'f', 3, 64), Index: i, OK: r.OK,
			X: round3(historyLeft + (float64(i)+0.5)/float64(len(rows))*chartWidth), Y: y(s)}
		c.Points = append(c.Points, p)
		line = append(line, trimFloat(p.X)+","+trimFloat(p.Y))
	}
	c.Polyline = strings.Join(line, " ")
	if limit > 0 {
		c.Limit, c.LimitSeconds = y(limit), strconv.FormatFloat(limit, 'f', 3, 64)
	}
	step := niceStep(c.YMax, 4)
	for v := 0.0; v <= c.YMax+1e-9; v += step {
		c.YTicks = append(c.YTicks, htmlTick{X: y(v), Label: trimFloat(v) + " s"})
	}
	return c
}

func anyRTO(rows []HistoryRow) bool {
	for _, r := range rows {
		if r.RTO != nil {
			return true
		}
	}
	return false
}

// recordedSecondsOf is s as the page writes it, to the millisecond.
func recordedSecondsOf(s float64) float64 { return round3(s) }

func optSeconds(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func optChange(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3f", *v)
}

// zeroDash is n, "-" for 0: a drill recorded before the figure was.
func zeroDash(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// ChartBottom is the y of the history chart's x axis.
func (h *htmlHistory) ChartBottom() float64 { return historyTop + historyPlotH }
