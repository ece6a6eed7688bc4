package testkit

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// ReportPage is what the tests read of a drill's HTML report (drill
// --report), parsed from its DOM: the machine-readable data attributes of
// its figures and the text of its tables, as a browser or an HTML5 parser
// sees them, to compare with the JSON report of the same run.
type ReportPage struct {
	// Bars are the timeline's rects (data-phase), in document order, and
	// TimelineMs, TimelineLeft and TimelineWidth its SVG's data-total-ms,
	// data-left and data-bars-width: the drill's duration is drawn from x
	// TimelineLeft over TimelineWidth units.
	Bars                        []ReportBar
	TimelineMs                  int64
	TimelineLeft, TimelineWidth float64
	// Marks are the timeline's moments (data-mark: "lost",
	// "rto_data_restored", ...) in milliseconds from the drill's start.
	Marks map[string]int64
	// Figures are the RTO and RPO figures (data-figure): "" when not
	// reached, else the seconds as written (3 decimals).
	Figures map[string]string
	// Tables are the rows of each table's body by the table's id, each
	// row the text of its cells (th and td), trimmed.
	Tables map[string][][]string
	// Points are the throughput chart's samples (data-at-ms).
	Points []ReportPoint
	// HistoryPoints are the history chart's points (data-drill), in
	// document order, and HistoryYMax, HistoryTop and HistoryPlotH its
	// SVG's data-y-max, data-top and data-plot-h: 0 s is drawn at y
	// HistoryTop+HistoryPlotH, HistoryYMax seconds at HistoryTop.
	HistoryPoints                         []ReportHistoryPoint
	HistoryYMax, HistoryTop, HistoryPlotH float64
	// HistoryGrew is the history trend's data-grew ("true", "false"; ""
	// without a trend).
	HistoryGrew string
	// Outcome is the page's data-outcome: passed, failed or interrupted.
	Outcome string
	// Scripts counts the script elements; External lists every src,
	// href or xlink:href attribute (a self-contained page has none).
	Scripts  int
	External []string
	// IDs are the ids of every element, to tell which sections exist.
	IDs map[string]bool
	// Text is the page's text, its elements' text joined by spaces.
	Text string
}

// ReportBar is one phase's rect on the timeline.
type ReportBar struct {
	Phase, Status       string
	StartMs, DurationMs int64
	X, W                float64 // in the SVG's user units
}

// ReportPoint is one sample of the throughput chart.
type ReportPoint struct {
	AtMs    int64 `json:"at_ms"`
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// ReportHistoryPoint is one drill's RTO on the history chart.
type ReportHistoryPoint struct {
	Drill, Figure, Seconds string // Seconds as written (3 decimals)
	Index                  int64  // its row in the history table
	Y                      float64
}

// ParseReportPage parses dom, the HTML of a drill report (its file, or
// the DOM a browser dumped after load), failing the test when it does not
// parse or a data attribute is not a number.
func ParseReportPage(t testing.TB, dom string) *ReportPage {
	t.Helper()
	root, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("the report does not parse as HTML: %v", err)
	}
	p := &ReportPage{Marks: map[string]int64{}, Figures: map[string]string{}, Tables: map[string][][]string{}, IDs: map[string]bool{}}
	num := func(n *html.Node, key string) int64 {
		v, err := strconv.ParseInt(attr(n, key), 10, 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: not an integer: %v", n.Data, key, attr(n, key), err)
		}
		return v
	}
	flt := func(n *html.Node, key string) float64 {
		v, err := strconv.ParseFloat(attr(n, key), 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: not a number: %v", n.Data, key, attr(n, key), err)
		}
		return v
	}
	var text []string
	var walk func(n *html.Node, table string)
	walk = func(n *html.Node, table string) {
		switch n.Type {
		case html.TextNode:
			if s := strings.TrimSpace(n.Data); s != "" && (n.Parent == nil || n.Parent.Data != "style") {
				text = append(text, s)
			}
		case html.ElementNode:
			if id := attr(n, "id"); id != "" {
				p.IDs[id] = true
			}
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" || (a.Namespace == "xlink" && a.Key == "href") {
					p.External = append(p.External, n.Data+" "+a.Key+"="+a.Val)
				}
			}
			switch {
			case n.Data == "script":
				p.Scripts++
			case n.Data == "svg" && hasAttr(n, "data-total-ms"):
				p.TimelineMs, p.TimelineLeft, p.TimelineWidth = num(n, "data-total-ms"), flt(n, "data-left"), flt(n, "data-bars-width")
			case n.Data == "rect" && hasAttr(n, "data-phase"):
				p.Bars = append(p.Bars, ReportBar{Phase: attr(n, "data-phase"), Status: attr(n, "data-status"),
					StartMs: num(n, "data-start-ms"), DurationMs: num(n, "data-duration-ms"), X: flt(n, "x"), W: flt(n, "width")})
			case n.Data == "line" && hasAttr(n, "data-mark"):
				p.Marks[attr(n, "data-mark")] = num(n, "data-at-ms")
			case n.Data == "svg" && hasAttr(n, "data-y-max"):
				p.HistoryYMax, p.HistoryTop, p.HistoryPlotH = flt(n, "data-y-max"), flt(n, "data-top"), flt(n, "data-plot-h")
			case n.Data == "circle" && hasAttr(n, "data-drill"):
				p.HistoryPoints = append(p.HistoryPoints, ReportHistoryPoint{Drill: attr(n, "data-drill"), Figure: attr(n, "data-figure"),
					Seconds: attr(n, "data-seconds"), Index: num(n, "data-index"), Y: flt(n, "cy")})
			case n.Data == "p" && hasAttr(n, "data-grew"):
				p.HistoryGrew = attr(n, "data-grew")
			case n.Data == "circle" && hasAttr(n, "data-at-ms"):
				p.Points = append(p.Points, ReportPoint{AtMs: num(n, "data-at-ms"), Records: num(n, "data-records"), Bytes: num(n, "data-bytes")})
			case hasAttr(n, "data-figure"):
				if attr(n, "data-reached") == "true" {
					p.Figures[attr(n, "data-figure")] = attr(n, "data-seconds")
				} else {
					p.Figures[attr(n, "data-figure")] = ""
				}
			case hasAttr(n, "data-outcome"):
				p.Outcome = attr(n, "data-outcome")
			case n.Data == "table":
				table = attr(n, "id")
			case n.Data == "tr" && table != "" && n.Parent != nil && n.Parent.Data == "tbody":
				var row []string
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
						row = append(row, strings.Join(strings.Fields(nodeText(c)), " "))
					}
				}
				p.Tables[table] = append(p.Tables[table], row)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, table)
		}
	}
	walk(root, "")
	p.Text = strings.Join(text, " ")
	return p
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// reportJSON is what CheckReportPage reads of a drill's JSON report
// (drill --json), decoded on its own: the documented field names, not the
// drill package's types.
type reportJSON struct {
	DrillID    string    `json:"drill_id"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Phases     []struct {
		Name      string    `json:"name"`
		Status    string    `json:"status"`
		StartedAt time.Time `json:"started_at"`
		Duration  float64   `json:"duration_seconds"`
	} `json:"phases"`
	RTO         *float64 `json:"rto_seconds"`
	RPO         *float64 `json:"rpo_seconds"`
	RTOData     *float64 `json:"rto_data_restored_seconds"`
	RTORunning  *float64 `json:"rto_app_running_seconds"`
	RTOCaughtUp *float64 `json:"rto_app_caught_up_seconds"`
	Volume      struct {
		Topics          int64 `json:"topics"`
		Partitions      int64 `json:"partitions"`
		Segments        int64 `json:"segments"`
		Records         int64 `json:"records"`
		Bytes           int64 `json:"bytes"`
		BackupRecords   int64 `json:"backup_records"`
		RecordsRestored int64 `json:"records_restored"`
		RecordsVerified int64 `json:"records_verified"`
	} `json:"volume"`
	Partitions []struct {
		Topic       string `json:"topic"`
		Partition   int64  `json:"partition"`
		Class       string `json:"class"`
		Records     int64  `json:"records"`
		Bytes       int64  `json:"bytes"`
		StoredBytes int64  `json:"stored_bytes"`
		OldStart    int64  `json:"old_start"`
		OldEnd      int64  `json:"old_end"`
		NewStart    int64  `json:"new_start"`
		NewEnd      int64  `json:"new_end"`
		State       string `json:"state"`
	} `json:"partitions"`
	RestoreProgress []ReportPoint `json:"restore_progress"`
}

// CheckReportPage compares what the page shows with the JSON report of the
// same drill (drill --json): the timeline's rects (one per phase that ran,
// in order, with its start and duration within a millisecond, every width
// and position on one scale), the RTO and RPO figures (not reached where
// the JSON has null), the volume table, the topic and partition tables
// (each row the JSON's numbers, the topics summed from its partitions) and
// the throughput chart's samples.
func CheckReportPage(t testing.TB, p *ReportPage, reportJSONBytes []byte) {
	t.Helper()
	var r reportJSON
	if err := json.Unmarshal(reportJSONBytes, &r); err != nil {
		t.Fatalf("the JSON report does not decode: %v", err)
	}
	type ran struct {
		name, status   string
		startMs, durMs int64
	}
	var phases []ran
	for _, ph := range r.Phases {
		if ph.Status != "skipped" {
			phases = append(phases, ran{ph.Name, ph.Status, ph.StartedAt.Sub(r.StartedAt).Milliseconds(), int64(math.Round(ph.Duration * 1000))})
		}
	}
	if len(p.Bars) != len(phases) {
		t.Fatalf("%d bars on the timeline, %d phases ran: %+v", len(p.Bars), len(phases), p.Bars)
	}
	within := func(a, b int64) bool { return a-b <= 1 && b-a <= 1 }
	if total := r.FinishedAt.Sub(r.StartedAt).Milliseconds(); !within(p.TimelineMs, total) || p.TimelineWidth <= 0 {
		t.Fatalf("the timeline spans %d ms over %.3f units; the drill took %d ms", p.TimelineMs, p.TimelineWidth, total)
	}
	// To scale: each rect's width and position are its duration and start
	// times the timeline's scale, to the 3 decimals the page writes.
	scale := p.TimelineWidth / float64(p.TimelineMs)
	for i, b := range p.Bars {
		ph := phases[i]
		if b.Phase != ph.name || b.Status != ph.status || !within(b.StartMs, ph.startMs) || !within(b.DurationMs, ph.durMs) {
			t.Errorf("bar %d %+v, want phase %s %s at %d ms for %d ms", i, b, ph.name, ph.status, ph.startMs, ph.durMs)
		}
		if w := float64(b.DurationMs) * scale; math.Abs(b.W-w) > 0.001 {
			t.Errorf("bar %s: width %.3f for %d ms, want %.3f (%.6f units/ms)", b.Phase, b.W, b.DurationMs, w, scale)
		}
		if x := p.TimelineLeft + float64(b.StartMs)*scale; math.Abs(b.X-x) > 0.001 {
			t.Errorf("bar %s: x %.3f for a start at %d ms, want %.3f", b.Phase, b.X, b.StartMs, x)
		}
	}
	fig := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 3, 64)
	}
	want := map[string]string{"rto": fig(r.RTO), "rpo": fig(r.RPO), "rto_data_restored": fig(r.RTOData),
		"rto_app_running": fig(r.RTORunning), "rto_app_caught_up": fig(r.RTOCaughtUp)}
	if !maps.Equal(p.Figures, want) {
		t.Errorf("figures %v, the JSON's %v", p.Figures, want)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	v := r.Volume
	wantVolume := []string{i64(v.Topics), i64(v.Partitions), i64(v.Segments), i64(v.Records), i64(v.Bytes), i64(v.BackupRecords), i64(v.RecordsRestored), i64(v.RecordsVerified)}
	var gotVolume []string
	for _, row := range p.Tables["volume-table"] {
		gotVolume = append(gotVolume, row[len(row)-1])
	}
	if !slices.Equal(gotVolume, wantVolume) {
		t.Errorf("volume table %q, the JSON's %q", gotVolume, wantVolume)
	}
	var rows [][]string
	type sum struct{ parts, records, bytes, stored int64 }
	sums := map[string]*sum{}
	var order []string
	for _, rp := range r.Partitions {
		rows = append(rows, []string{rp.Topic, i64(rp.Partition), rp.Class, i64(rp.Records), i64(rp.Bytes), i64(rp.StoredBytes),
			i64(rp.OldStart) + ".." + i64(rp.OldEnd), i64(rp.NewStart) + ".." + i64(rp.NewEnd), rp.State})
		if sums[rp.Topic] == nil {
			sums[rp.Topic] = &sum{}
			order = append(order, rp.Topic)
		}
		s := sums[rp.Topic]
		s.parts++
		s.records += rp.Records
		s.bytes += rp.Bytes
		s.stored += rp.StoredBytes
	}
	if got := p.Tables["partitions"]; !slices.EqualFunc(got, rows, slices.Equal) {
		t.Errorf("partitions table:\n%q\nthe JSON's\n%q", got, rows)
	}
	topics := p.Tables["topics"]
	if len(topics) != len(order) {
		t.Fatalf("topics table %q, the JSON has %d topics", topics, len(order))
	}
	for i, name := range order {
		s := sums[name]
		if got := topics[i]; len(got) < 6 || got[0] != name || got[2] != i64(s.parts) || got[3] != i64(s.records) || got[4] != i64(s.bytes) || got[5] != i64(s.stored) {
			t.Errorf("topics row %q, the JSON's %s: %d partitions, %d records, %d bytes, %d stored", got, name, s.parts, s.records, s.bytes, s.stored)
		}
	}
	if len(r.RestoreProgress) > 1 && !slices.Equal(p.Points, r.RestoreProgress) {
		t.Errorf("chart points %v, the JSON's samples %v", p.Points, r.RestoreProgress)
	}
	if hist := p.Tables["history-table"]; len(hist) > 0 {
		CheckHistoryChart(t, p)
		// A drill that was recorded is the history's last row, with its
		// furthest RTO figure and the records it restored.
		if r.DrillID != "" {
			last := hist[len(hist)-1]
			rto, name := fig(r.RTOData), "rto_data_restored"
			if r.RTOCaughtUp != nil {
				rto, name = fig(r.RTOCaughtUp), "rto_app_caught_up"
			} else if r.RTORunning != nil {
				rto, name = fig(r.RTORunning), "rto_app_running"
			}
			if rto == "" {
				rto, name = "-", "-"
			}
			if len(last) != len(historyColumns) || last[0] != r.DrillID || last[4] != rto || last[5] != name || last[9] != i64(v.RecordsRestored) {
				t.Errorf("the history's last row %q, want this drill %s: RTO %s (%s), %d records restored", last, r.DrillID, rto, name, v.RecordsRestored)
			}
		}
	}
}

// historyColumns are the history table's columns, in order.
var historyColumns = []string{"drill", "started", "result", "strategy", "RTO (s)", "RTO figure", "change (s)", "RPO (s)", "change (s)",
	"records restored", "change", "bytes", "topics", "partitions"}

// CheckHistoryChart checks the history chart against the history table
// (Tables["history-table"]): one point per row with an RTO, at that
// row's index, with its drill, figure and seconds, its y to the chart's
// scale.
func CheckHistoryChart(t testing.TB, p *ReportPage) {
	t.Helper()
	rows := p.Tables["history-table"]
	var want []ReportHistoryPoint
	for i, row := range rows {
		if len(row) != len(historyColumns) {
			t.Fatalf("history row %d %q: %d cells, want %d (%s)", i, row, len(row), len(historyColumns), strings.Join(historyColumns, ", "))
		}
		if row[4] != "-" {
			want = append(want, ReportHistoryPoint{Drill: row[0], Figure: row[5], Seconds: row[4], Index: int64(i)})
		}
	}
	if len(p.HistoryPoints) != len(want) {
		t.Fatalf("%d points on the history chart, %d rows with an RTO: %+v", len(p.HistoryPoints), len(want), p.HistoryPoints)
	}
	for i, pt := range p.HistoryPoints {
		w := want[i]
		if pt.Drill != w.Drill || pt.Figure != w.Figure || pt.Seconds != w.Seconds || pt.Index != w.Index {
			t.Errorf("history point %d %+v, want row %d: %s %s %s s", i, pt, w.Index, w.Drill, w.Figure, w.Seconds)
			continue
		}
		s, err := strconv.ParseFloat(pt.Seconds, 64)
		if err != nil {
			t.Fatalf("history point %d: seconds %q: %v", i, pt.Seconds, err)
		}
		if y := p.HistoryTop + p.HistoryPlotH - s/p.HistoryYMax*p.HistoryPlotH; p.HistoryYMax <= 0 || math.Abs(pt.Y-y) > 0.001 {
			t.Errorf("history point %s: y %.3f for %s s, want %.3f (0 to %g s over %g units)", pt.Drill, pt.Y, pt.Seconds, y, p.HistoryYMax, p.HistoryPlotH)
		}
	}
}

// historyJSON is what CheckHistoryTable reads of `drill history --json`,
// decoded on its own: the documented field names.
type historyJSON struct {
	Drills []struct {
		DrillID         string    `json:"drill_id"`
		StartedAt       time.Time `json:"started_at"`
		Strategy        string    `json:"strategy"`
		OK              bool      `json:"ok"`
		RTOName         string    `json:"rto_name"`
		RTO             *float64  `json:"rto_seconds"`
		RTOChange       *float64  `json:"rto_change_seconds"`
		RPO             *float64  `json:"rpo_seconds"`
		RPOChange       *float64  `json:"rpo_change_seconds"`
		RecordsRestored int64     `json:"records_restored"`
		RecordsChange   *int64    `json:"records_change"`
		Bytes           int64     `json:"bytes"`
		Topics          int64     `json:"topics"`
		Partitions      int64     `json:"partitions"`
	} `json:"drills"`
	Trend struct {
		Grew bool `json:"grew"`
	} `json:"trend"`
}

// CheckHistoryTable compares the page's history section with `drill
// history --json` of the same repository: the table row for row (the
// same drills in the same order, each cell the JSON's figure: seconds to
// 3 decimals, changes signed, "-" for null and for a count of 0), the
// chart's points (checkHistoryChart) and the trend's grew.
func CheckHistoryTable(t testing.TB, p *ReportPage, historyJSONBytes []byte) {
	t.Helper()
	var h historyJSON
	if err := json.Unmarshal(historyJSONBytes, &h); err != nil {
		t.Fatalf("drill history --json does not decode: %v", err)
	}
	secs := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatFloat(*v, 'f', 3, 64)
	}
	change := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%+.3f", *v)
	}
	count := func(n int64) string {
		if n == 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	var want [][]string
	for _, d := range h.Drills {
		result, name, rc := "passed", d.RTOName, "-"
		if !d.OK {
			result = "FAILED"
		}
		if name == "" {
			name = "-"
		}
		if d.RecordsChange != nil {
			rc = fmt.Sprintf("%+d", *d.RecordsChange)
		}
		want = append(want, []string{d.DrillID, d.StartedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"), result, d.Strategy,
			secs(d.RTO), name, change(d.RTOChange), secs(d.RPO), change(d.RPOChange),
			strconv.FormatInt(d.RecordsRestored, 10), rc, count(d.Bytes), count(d.Topics), count(d.Partitions)})
	}
	got := p.Tables["history-table"]
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("history table:\n%q\ndrill history --json's rows:\n%q", got, want)
	}
	CheckHistoryChart(t, p)
	if g := strconv.FormatBool(h.Trend.Grew); p.HistoryGrew != g {
		t.Errorf("the history trend's data-grew %q, drill history --json's grew %s", p.HistoryGrew, g)
	}
}
