package drill

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// HTMLRun is what the HTML report says about the run itself, beside the
// Report: what ran and with what.
type HTMLRun struct {
	// Version is the tool's version (kafkastreams-dr version), GoVersion
	// the Go version it was built with (runtime.Version()).
	Version   string
	GoVersion string
	// Command is the command line as it ran, quoted for a POSIX shell,
	// with no secret in it: the caller writes flags only (the config
	// file's path, never its contents) and removes passwords from URLs.
	Command string
	// ConfigFile is the path of the config file, "" for none (--embedded).
	ConfigFile string
	// History are the drills of the application recorded in the
	// repository (History's rows, oldest first; this drill the last when
	// it was recorded), Trend their Trend, and HistoryWarnings what the
	// page says could not be read (History's warnings, or why it could
	// not be read at all). The page has a history section when History
	// or HistoryWarnings is not empty: a table of the last HistoryPageRows
	// rows, the trend and a chart of RTO per drill. Neither: no section.
	History         []HistoryRow
	Trend           RTOTrend
	HistoryWarnings []string
}

// HistoryPageRows is how many drills, the latest, the HTML report's
// history section shows at most: 100. The trend is the caller's, over
// every row.
const HistoryPageRows = 100

//go:embed report.html.tmpl
var htmlTemplateText string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(d Duration) string { return strconv.FormatFloat(recordedSeconds(d), 'f', 3, 64) },
	"ptrSeconds": func(v *float64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatFloat(*v, 'f', 3, 64)
	},
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"iec":  iec,
	"join": strings.Join,
	"ms":   func(d Duration) int64 { return time.Duration(d).Round(time.Millisecond).Milliseconds() },
	"f3":   func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"pct":  func(v float64) string { return trimFloat(v * 100) },
}).Parse(htmlTemplateText))

// HTML writes the report as one self-contained HTML page: inline CSS and
// inline SVG, no script, no external resource (a Content-Security-Policy
// of default-src 'none' holds it), every value from Kafka, the repository
// or the config escaped as text (html/template). The page shows:
//   - the outcome (passed, failed in a phase, interrupted);
//   - a timeline of the phases drawn to scale (an SVG rect per phase that
//     ran, its width proportional to its duration, with data-phase,
//     data-status, data-start-ms (from StartedAt) and data-duration-ms),
//     with the moments of the loss of the source and of each RTO figure
//     reached, and a table of the phases;
//   - the RTO figures and the RPO, each with its definition; "not
//     reached" for a figure the drill did not measure, never 0;
//   - the volume, per-topic and per-partition tables of the restore
//     (records, bytes, offsets old -> new, state check), the state check
//     of each state store and the group's offsets;
//   - the restore's throughput over time (records per second between
//     Report.RestoreProgress samples) as an SVG chart;
//   - the application on the target, the warnings, and what ran
//     (run: the tool's and Go's versions, the command line, the config
//     file, the clusters' Kafka versions);
//   - run.History, when given: a table of the drills recorded (the last
//     HistoryPageRows; per drill its RTO, the furthest figure it
//     measured and named, RPO, records, bytes, topics and partitions, and
//     the change against the drill before), run.Trend as a sentence
//     ("RTO GREW", flagged, when Trend.Grew, with the threshold), and a
//     chart of RTO per drill drawn to scale (an SVG circle per drill that
//     measured one, with data-drill, data-index (its row), data-figure
//     and data-seconds; the SVG's data-y-max, data-top and data-plot-h
//     give the scale); run.HistoryWarnings as warnings in that section.
//
// A failed or interrupted drill's page shows what the drill reached. The
// error is the writer's.
func (r *Report) HTML(w io.Writer, run HTMLRun) error {
	if err := htmlTemplate.Execute(w, newHTMLView(r, run)); err != nil {
		return fmt.Errorf("write the drill report as HTML: %w", err)
	}
	return nil
}

// The drawing sizes of the SVG figures, in CSS pixels.
const (
	timelineWidth = 960.0 // the bars' area, from the drill's start to its end
	timelineLeft  = 150.0 // the phase names' column
	chartWidth    = 900.0
	chartHeight   = 240.0
	chartLeft     = 70.0
)

type htmlView struct {
	R         *Report
	Run       HTMLRun
	Outcome   string // "passed", "failed", "interrupted"
	Headline  string
	Timeline  htmlTimeline
	Figures   []htmlFigure
	Topics    []htmlTopic
	Chart     *htmlChart
	History   *htmlHistory
	Skipped   []string // phases skipped
	Generated string
}

type htmlTimeline struct {
	TotalMs   int64
	Width     float64 // of the whole SVG
	Height    float64
	Left      float64
	BarsWidth float64
	Bars      []htmlBar
	Marks     []htmlMark
	Ticks     []htmlTick
}

type htmlBar struct {
	Phase               Phase
	StartMs, DurationMs int64
	X, W, Y             float64
	LabelX              float64
}

type htmlMark struct {
	Name, Label string
	AtMs        int64
	X           float64
}

type htmlTick struct {
	X     float64
	Label string
}

type htmlFigure struct {
	ID, Name   string
	Reached    bool
	Seconds    string
	Definition string
}

type htmlTopic struct {
	Topic, Class           string
	Partitions             int
	Records, Bytes, Stored int64
	States                 string // the distinct state checks of its partitions
}

type htmlChart struct {
	Width, Height, Left, PlotW, PlotH float64
	Points                            []htmlPoint
	Polyline                          string
	PeakRate, MeanRate                float64 // records per second
	PeakBytesRate                     float64 // bytes per second
	XTicks, YTicks                    []htmlTick
}

type htmlPoint struct {
	S         Sample
	X, Y      float64
	Rate      float64 // records per second since the sample before
	BytesRate float64
}

func newHTMLView(r *Report, run HTMLRun) *htmlView {
	v := &htmlView{R: r, Run: run, Generated: time.Now().UTC().Format(time.RFC3339)}
	switch f := r.Failed(); {
	case r.Interrupted:
		v.Outcome = "interrupted"
		v.Headline = "INTERRUPTED"
		if f != nil {
			v.Headline += " in phase " + f.Name
		}
	case f != nil:
		v.Outcome, v.Headline = "failed", "FAILED in phase "+f.Name
	case r.OK:
		v.Outcome, v.Headline = "passed", "PASSED"
	default:
		v.Outcome, v.Headline = "failed", "FAILED"
	}
	v.Timeline = timeline(r)
	for _, p := range r.Phases {
		if p.Status == StatusSkipped {
			v.Skipped = append(v.Skipped, p.Name)
		}
	}
	v.Figures = figures(r)
	v.Topics = topics(r.Partitions)
	v.Chart = chart(r.RestoreProgress)
	v.History = history(r, run)
	return v
}

// timeline places each phase that ran on a time axis from the drill's
// start (0) to its end: x and width in proportion to the start and the
// duration, the same scale for every phase.
func timeline(r *Report) htmlTimeline {
	tl := htmlTimeline{Left: timelineLeft, BarsWidth: timelineWidth, Width: timelineLeft + timelineWidth + 100}
	total := r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	for _, p := range r.Phases {
		if p.Status != StatusSkipped && !p.StartedAt.IsZero() {
			end := p.StartedAt.Sub(r.StartedAt).Milliseconds() + time.Duration(p.Duration).Round(time.Millisecond).Milliseconds()
			total = max(total, end)
		}
	}
	total = max(total, 1)
	tl.TotalMs = total
	scale := timelineWidth / float64(total)
	y := 30.0
	for _, p := range r.Phases {
		if p.Status == StatusSkipped || p.StartedAt.IsZero() {
			continue
		}
		b := htmlBar{Phase: p, StartMs: p.StartedAt.Sub(r.StartedAt).Milliseconds(),
			DurationMs: time.Duration(p.Duration).Round(time.Millisecond).Milliseconds(), Y: y}
		b.X = round3(timelineLeft + float64(b.StartMs)*scale)
		b.W = round3(float64(b.DurationMs) * scale)
		b.LabelX = b.X + b.W + 4
		tl.Bars = append(tl.Bars, b)
		y += 26
	}
	tl.Height = y + 40
	mark := func(name, label string, reached bool, from time.Time, d Duration) {
		if !reached {
			return
		}
		at := from.Add(time.Duration(d)).Sub(r.StartedAt).Milliseconds()
		tl.Marks = append(tl.Marks, htmlMark{Name: name, Label: label, AtMs: at, X: round3(timelineLeft + float64(at)*scale)})
	}
	if !r.LostAt.IsZero() && r.Reached(PhasePlan) {
		mark("lost", "source lost", true, r.LostAt, 0)
	}
	mark("rto_data_restored", "data restored", r.RTODataRestoredReached(), r.LostAt, r.RTODataRestored)
	mark("rto_app_running", "app running", r.RTOAppRunningReached(), r.LostAt, r.RTOAppRunning)
	mark("rto_app_caught_up", "app caught up", r.RTOAppCaughtUpReached(), r.LostAt, r.RTOAppCaughtUp)
	step := niceStep(float64(total)/1000, 8)
	for s := 0.0; s*1000 <= float64(total)+1e-9; s += step {
		tl.Ticks = append(tl.Ticks, htmlTick{X: round3(timelineLeft + s*1000*scale), Label: trimFloat(s) + " s"})
	}
	return tl
}

// The definitions of the figures, as Report's doc comments give them.
const (
	defRTO = "From the start of the drill to the restored records verified on the target " +
		"(the end of the verify-cluster phase). It includes the backup phase when the drill took the backup."
	defRTOData = "From the loss of the source (the end of the backup phase, or the start of a drill of an existing backup) " +
		"to the restored records verified on the target (the end of verify-cluster)."
	defRTORunning = "From the loss of the source to the application running on the target: its group Stable with every " +
		"partition of its input (classic group) or every active task (streams group) assigned."
	defRTOCaughtUp = "From the loss of the source to the application caught up: running, and every committed offset of its " +
		"group at its partition's last stable offset (lag zero); for a streams group also every task offset at its end offset."
	defRPO = "How old the backup's cut was when the source was lost (lost at minus cut at, never below 0): " +
		"records written to the source after the cut are not in the backup."
)

func figures(r *Report) []htmlFigure {
	fig := func(id, name string, reached bool, d Duration, def string) htmlFigure {
		f := htmlFigure{ID: id, Name: name, Reached: reached, Definition: def}
		if reached {
			f.Seconds = strconv.FormatFloat(recordedSeconds(d), 'f', 3, 64)
		}
		return f
	}
	return []htmlFigure{
		fig("rto_data_restored", "RTO data restored", r.RTODataRestoredReached(), r.RTODataRestored, defRTOData),
		fig("rto_app_running", "RTO application running", r.RTOAppRunningReached(), r.RTOAppRunning, defRTORunning),
		fig("rto_app_caught_up", "RTO application caught up", r.RTOAppCaughtUpReached(), r.RTOAppCaughtUp, defRTOCaughtUp),
		fig("rto", "RTO (from the drill's start)", r.RTOReached(), r.RTO, defRTO),
		fig("rpo", "RPO", r.RPOKnown(), r.RPO, defRPO),
	}
}

// topics sums the partitions per topic, in the order of the partitions.
func topics(parts []RestoredPartition) []htmlTopic {
	var out []htmlTopic
	idx := map[string]int{}
	states := map[string][]string{}
	for _, p := range parts {
		i, ok := idx[p.Topic]
		if !ok {
			i = len(out)
			idx[p.Topic] = i
			out = append(out, htmlTopic{Topic: p.Topic, Class: p.Class})
		}
		t := &out[i]
		t.Partitions++
		t.Records += p.Records
		t.Bytes += p.Bytes
		t.Stored += p.StoredBytes
		if p.State != "" && !slices.Contains(states[p.Topic], p.State) {
			states[p.Topic] = append(states[p.Topic], p.State)
		}
	}
	for i := range out {
		out[i].States = strings.Join(states[out[i].Topic], ", ")
	}
	return out
}

// chart plots the restore's rate (records per second between two
// samples) against the time since the restore's start.
func chart(samples []Sample) *htmlChart {
	if len(samples) < 2 {
		return nil
	}
	c := &htmlChart{Width: chartLeft + chartWidth + 20, Height: chartHeight + 60, Left: chartLeft, PlotW: chartWidth, PlotH: chartHeight}
	last := samples[len(samples)-1]
	spanMs := max(last.AtMs, 1)
	points := make([]htmlPoint, 0, len(samples))
	for i, s := range samples {
		pt := htmlPoint{S: s}
		if i > 0 {
			prev := samples[i-1]
			if dt := float64(s.AtMs-prev.AtMs) / 1000; dt > 0 {
				pt.Rate = float64(s.Records-prev.Records) / dt
				pt.BytesRate = float64(s.Bytes-prev.Bytes) / dt
			}
		}
		c.PeakRate = max(c.PeakRate, pt.Rate)
		c.PeakBytesRate = max(c.PeakBytesRate, pt.BytesRate)
		points = append(points, pt)
	}
	c.MeanRate = float64(last.Records) / (float64(spanMs) / 1000)
	yMax := niceCeil(max(c.PeakRate, 1))
	var line []string
	for i := range points {
		pt := &points[i]
		pt.X = round3(chartLeft + float64(pt.S.AtMs)/float64(spanMs)*chartWidth)
		pt.Y = round3(20 + chartHeight - pt.Rate/yMax*chartHeight)
		line = append(line, trimFloat(pt.X)+","+trimFloat(pt.Y))
	}
	c.Points, c.Polyline = points, strings.Join(line, " ")
	xs := niceStep(float64(spanMs)/1000, 8)
	for s := 0.0; s*1000 <= float64(spanMs)+1e-9; s += xs {
		c.XTicks = append(c.XTicks, htmlTick{X: round3(chartLeft + s*1000/float64(spanMs)*chartWidth), Label: trimFloat(s) + " s"})
	}
	ys := niceStep(yMax, 5)
	for v := 0.0; v <= yMax+1e-9; v += ys {
		c.YTicks = append(c.YTicks, htmlTick{X: round3(20 + chartHeight - v/yMax*chartHeight), Label: trimFloat(v)})
	}
	return c
}

// niceStep is a step of 1, 2 or 5 times a power of ten that cuts span
// into at most n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil is the smallest 1, 2 or 5 times a power of ten at or above v.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func trimFloat(v float64) string { return strconv.FormatFloat(round3(v), 'f', -1, 64) }

// iec is n bytes in IEC units ("1.5 MiB"), for reading beside the exact
// number.
func iec(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
