package drill_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// Untrusted text as a topic, an application.id, a warning or a problem
// may hold it: it must render as text.
const (
	evilTopic = `<script>alert("topic")</script>`
	evilApp   = `app"><img src=x onerror=alert(1)>`
	evilWarn  = `restore: </style><script>alert('w')</script> & more`
	evilProb  = `record at offset 7: <b>bold</b> "quoted" 'single'`
)

// passedReport is a drill that passed with the application, every section
// filled, with untrusted text in its names.
func passedReport() *drill.Report {
	t0 := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	phase := func(name string, startMs, durMs int) drill.Phase {
		return drill.Phase{Name: name, Status: drill.StatusPassed, StartedAt: t0.Add(time.Duration(startMs) * time.Millisecond),
			Duration: drill.Duration(time.Duration(durMs) * time.Millisecond), Detail: "did " + name}
	}
	r := &drill.Report{
		ApplicationID: evilApp, Repository: "s3://bucket/prefix", BackupID: "20260504T095900Z-aaaa", BackupTaken: true,
		RestoreID: "r-1", Strategy: "changelog", StartedAt: t0, FinishedAt: t0.Add(9000 * time.Millisecond), OK: true,
		Phases: []drill.Phase{
			phase(drill.PhaseBackup, 0, 1200), phase(drill.PhasePlan, 1200, 300), phase(drill.PhaseVerifyRepository, 1500, 500),
			phase(drill.PhaseRestore, 2000, 2500), phase(drill.PhaseVerifyCluster, 4500, 700), phase(drill.PhaseVerifyOffsets, 5200, 100),
			phase(drill.PhaseAppRunning, 5300, 2200), phase(drill.PhaseAppCaughtUp, 7500, 1400),
		},
		LostAt: t0.Add(1200 * time.Millisecond), CutAt: t0.Add(900 * time.Millisecond), RPO: drill.Duration(300 * time.Millisecond),
		RTO: drill.Duration(5200 * time.Millisecond), RTODataRestored: drill.Duration(4000 * time.Millisecond),
		RTOAppRunning: drill.Duration(6100 * time.Millisecond), RTOAppCaughtUp: drill.Duration(7650 * time.Millisecond),
		Volume:  drill.Volume{Topics: 2, Partitions: 3, Segments: 4, Records: 300, Bytes: 9000, BackupRecords: 300, BackupBytes: 9000, RecordsRestored: 300, RecordsVerified: 300},
		GroupID: evilApp, Offsets: []drill.Offset{{Topic: evilTopic, Partition: 0, Committed: 120, Translated: 100, OnTarget: 100, Action: format.OffsetCommit}},
		WipeState: true, Warnings: []string{evilWarn, evilProb},
		States: []verify.StoreSummary{{Store: "counts", Topic: "app-counts-changelog", Result: "equal", Partitions: 2}},
		Partitions: []drill.RestoredPartition{
			{Topic: evilTopic, Partition: 0, Class: "input", Records: 100, Bytes: 2000, StoredBytes: 900, OldStart: 20, OldEnd: 140, NewStart: 0, NewEnd: 100},
			{Topic: "app-counts-changelog", Partition: 0, Class: "changelog", Records: 150, Bytes: 3000, StoredBytes: 1100, OldStart: 0, OldEnd: 150, NewStart: 0, NewEnd: 150, State: "equal"},
			{Topic: "app-counts-changelog", Partition: 1, Class: "changelog", Records: 50, Bytes: 1000, StoredBytes: 500, OldStart: 3, OldEnd: 60, NewStart: 0, NewEnd: 50, State: "equal"},
		},
		RestoreProgress:    []drill.Sample{{}, {AtMs: 250, Records: 40, Bytes: 800}, {AtMs: 500, Records: 120, Bytes: 2400}, {AtMs: 2400, Records: 300, Bytes: 6000}},
		SourceKafkaVersion: "v4.4", TargetKafkaVersion: "v4.4",
		App: &drill.AppReport{GroupType: "classic", GroupState: "Stable", StartedAt: t0.Add(5300 * time.Millisecond), Members: 1, Partitions: 3},
	}
	return r
}

var testRun = drill.HTMLRun{Version: "v9.9.9-test", GoVersion: "go1.26.8",
	Command: `kafkastreams-dr drill -c '/etc/kdr/<app>.yaml' --report drill.html`, ConfigFile: "/etc/kdr/<app>.yaml"}

func renderHTML(t *testing.T, r *drill.Report, run drill.HTMLRun) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHTMLEscapesUntrustedText: a topic named <script>..., an
// application.id that closes an attribute, a warning that closes the style
// element: each renders as its text, and the page holds no script element
// and no reference to anything outside it.
func TestHTMLEscapesUntrustedText(t *testing.T) {
	page := renderHTML(t, passedReport(), testRun)
	for _, raw := range []string{"<script", "<img", "<b>bold", "</style><"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	p := testkit.ParseReportPage(t, page)
	if p.Scripts != 0 || len(p.External) != 0 {
		t.Errorf("%d script elements, external references %q: want none", p.Scripts, p.External)
	}
	for _, text := range []string{evilTopic, evilApp, evilWarn, evilProb, testRun.Command, testRun.ConfigFile} {
		if !strings.Contains(p.Text, text) {
			t.Errorf("the page's text does not hold %q", text)
		}
	}
	if rows := p.Tables["partitions"]; len(rows) != 3 || rows[0][0] != evilTopic {
		t.Errorf("partitions table %q: want the first row's topic %q", rows, evilTopic)
	}
}

// TestHTMLTimelineToScale: each phase's rect has the phase's start and
// duration in milliseconds, and every rect's width and position are the
// same scale of them; the RTO marks sit at the drill's figures; the
// figures, tables and chart hold the report's numbers.
func TestHTMLTimelineToScale(t *testing.T) {
	r := passedReport()
	p := testkit.ParseReportPage(t, renderHTML(t, r, testRun))
	checkPageAgainstReport(t, p, r)
	if p.Outcome != "passed" {
		t.Errorf("outcome %q", p.Outcome)
	}
	// The figures are those of the report: 1200 + 4000 ms.
	if want := map[string]int64{"lost": 1200, "rto_data_restored": 5200, "rto_app_running": 7300, "rto_app_caught_up": 8850}; !mapsEqual(p.Marks, want) {
		t.Errorf("marks %v, want %v", p.Marks, want)
	}
	if p.Figures["rpo"] != "0.300" || p.Figures["rto_app_caught_up"] != "7.650" {
		t.Errorf("figures %v", p.Figures)
	}
	if p.IDs["history"] {
		t.Errorf("a history section without history rows")
	}
}

// checkPageAgainstReport compares what the page shows with the report's
// JSON (testkit.CheckReportPage), as the browser test of a real drill does.
func checkPageAgainstReport(t *testing.T, p *testkit.ReportPage, r *drill.Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckReportPage(t, p, b)
}

// TestHTMLOfAFailedOrInterruptedDrill: the page of a drill that did not
// pass says so, draws only the phases that ran, lists the skipped ones,
// and reports a figure it did not reach as not reached, never 0.
func TestHTMLOfAFailedOrInterruptedDrill(t *testing.T) {
	refused := passedReport()
	refused.OK = false
	refused.Phases = refused.Phases[:2]
	refused.Phases[1].Status, refused.Phases[1].Error, refused.Phases[1].Refused = drill.StatusFailed, "restore refused: nothing was written to the drill target", true
	refused.Phases[1].Problems = []string{evilProb}
	for _, name := range []string{drill.PhaseVerifyRepository, drill.PhaseRestore, drill.PhaseVerifyCluster, drill.PhaseVerifyOffsets} {
		refused.Phases = append(refused.Phases, drill.Phase{Name: name, Status: drill.StatusSkipped})
	}
	refused.RTO, refused.RTODataRestored, refused.RTOAppRunning, refused.RTOAppCaughtUp = 0, 0, 0, 0
	refused.Partitions, refused.RestoreProgress, refused.App, refused.States, refused.Offsets = nil, nil, nil, nil, nil

	interrupted := passedReport()
	interrupted.OK, interrupted.Interrupted = false, true
	interrupted.Phases = interrupted.Phases[:4]
	interrupted.Phases[3].Status, interrupted.Phases[3].Error = drill.StatusFailed, "interrupted"
	interrupted.Phases = append(interrupted.Phases, drill.Phase{Name: drill.PhaseVerifyCluster, Status: drill.StatusSkipped})
	interrupted.RTO, interrupted.RTODataRestored, interrupted.RTOAppRunning, interrupted.RTOAppCaughtUp = 0, 0, 0, 0
	interrupted.Partitions, interrupted.App = nil, nil
	interrupted.RestoreProgress = interrupted.RestoreProgress[:3] // the restore's progress until it was stopped

	for _, tt := range []struct {
		name    string
		r       *drill.Report
		outcome string
		says    []string
		ids     []string // sections that must be there
		noIDs   []string // and not
	}{
		{"refused in restore-plan", refused, "failed", []string{"FAILED in phase restore-plan", "restore refused", evilProb, "Skipped (an earlier phase failed): verify-repository, restore, verify-cluster, verify-offsets"},
			[]string{"failure", "skipped", "no-partitions", "no-throughput"}, []string{"interrupted", "throughput-chart", "app", "offsets"}},
		{"interrupted in restore", interrupted, "interrupted", []string{"INTERRUPTED in phase restore", "The drill was interrupted", "Skipped (an earlier phase failed): verify-cluster"},
			[]string{"interrupted", "throughput-chart", "no-partitions"}, []string{"app"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := testkit.ParseReportPage(t, renderHTML(t, tt.r, testRun))
			checkPageAgainstReport(t, p, tt.r)
			if p.Outcome != tt.outcome {
				t.Errorf("outcome %q, want %q", p.Outcome, tt.outcome)
			}
			for _, s := range tt.says {
				if !strings.Contains(p.Text, s) {
					t.Errorf("the page does not say %q:\n%s", s, p.Text)
				}
			}
			for _, id := range tt.ids {
				if !p.IDs[id] {
					t.Errorf("no element #%s", id)
				}
			}
			for _, id := range tt.noIDs {
				if p.IDs[id] {
					t.Errorf("element #%s, want none", id)
				}
			}
			if strings.Contains(p.Text, "0.000 s") {
				t.Errorf("a figure reads 0.000 s: %s", p.Text)
			}
		})
	}
}

// TestHTMLHistorySection: the history section is there only with
// history rows or warnings: one row per drill (the last
// drill.HistoryPageRows), this drill marked, the trend's sentence flagged
// when the RTO grew, a chart point per drill with an RTO drawn to scale,
// and the warnings as text.
func TestHTMLHistorySection(t *testing.T) {
	secs := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	rep := passedReport()
	rep.DrillID = "20260504T100000Z-cccc"
	rows := func(n int, last float64) []drill.HistoryRow {
		var out []drill.HistoryRow
		for i := range n {
			rto := 10 + float64(i%3)
			r := drill.HistoryRow{DrillID: fmt.Sprintf("d-%03d", i), StartedAt: t0.Add(time.Duration(i) * time.Hour), Strategy: format.StrategyChangelog,
				OK: true, RTODataRestored: secs(rto), RTOName: drill.FigureRTODataRestored, RTO: secs(rto), RPO: secs(0.25),
				RecordsRestored: 300 + int64(i), Bytes: 9000, Topics: 2, Partitions: 3}
			if i == 1 { // failed before the restore was verified: no RTO
				r.OK, r.RTODataRestored, r.RTOName, r.RTO = false, nil, "", nil
			}
			out = append(out, r)
		}
		out[n-1].DrillID, out[n-1].RTO, out[n-1].RTODataRestored = rep.DrillID, secs(last), secs(last)
		for i := 1; i < n; i++ {
			if out[i].RTO != nil && out[i-1].RTO != nil {
				out[i].RTOChange = secs(*out[i].RTO - *out[i-1].RTO)
			}
			d := out[i].RecordsRestored - out[i-1].RecordsRestored
			out[i].RecordsChange = &d
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		rows     []drill.HistoryRow
		warnings []string
		section  bool
		shown    int
		grew     string
		text     []string
	}{
		{"no history: no section", nil, nil, false, 0, "", nil},
		{"steady", rows(4, 11.5), nil, true, 4, "false", []string{"RTO steady: the latest drill's rto_data_restored is 11.500 s, +5% against the median 11.000 s of 2 earlier drills (threshold 20%).", "this drill the last"}},
		{"grew", rows(5, 16), nil, true, 5, "true", []string{"RTO GREW: the latest drill's rto_data_restored is 16.000 s, 60% above the median 10.000 s of 3 earlier drills (threshold 20%)."}},
		{"capped at the last 100", rows(105, 11), nil, true, drill.HistoryPageRows, "false", []string{"the last 100 of 105 drills recorded"}},
		{"unreadable reports are warnings", rows(3, 12), []string{evilWarn}, true, 3, "false", []string{evilWarn}},
		{"only a warning", nil, []string{"drill history: " + evilProb}, true, 0, "", []string{"drill history: " + evilProb}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := testRun
			run.History, run.HistoryWarnings, run.Trend = tc.rows, tc.warnings, drill.Trend(tc.rows, drill.DefaultRTOGrowthThreshold)
			page := renderHTML(t, rep, run)
			p := testkit.ParseReportPage(t, page)
			got := p.Tables["history-table"]
			if p.IDs["history"] != tc.section || len(got) != tc.shown || p.HistoryGrew != tc.grew {
				t.Fatalf("history section %v with %d rows, grew %q; want %v with %d, grew %q", p.IDs["history"], len(got), p.HistoryGrew, tc.section, tc.shown, tc.grew)
			}
			for _, w := range tc.text {
				if !strings.Contains(p.Text, w) {
					t.Errorf("the page does not say %q:\n%s", w, p.Text)
				}
			}
			if p.Scripts != 0 || strings.Contains(page, "<script>") {
				t.Errorf("a warning became markup: %d scripts", p.Scripts)
			}
			if tc.shown == 0 {
				return
			}
			if tc.grew == "true" && !strings.Contains(page, `class="grew"`) {
				t.Errorf("the grown RTO is not flagged")
			}
			shown := tc.rows[len(tc.rows)-tc.shown:]
			for i, r := range shown {
				row := got[i]
				rto := "-"
				if r.RTO != nil {
					rto = strconv.FormatFloat(*r.RTO, 'f', 3, 64)
				}
				if row[0] != r.DrillID || row[4] != rto || row[9] != strconv.FormatInt(r.RecordsRestored, 10) || row[12] != "2" || row[13] != "3" {
					t.Errorf("history row %d %q, want %s, RTO %s, %d records", i, row, r.DrillID, rto, r.RecordsRestored)
				}
			}
			last := got[len(got)-1]
			if last[2] != "passed" || last[5] != drill.FigureRTODataRestored || last[7] != "0.250" {
				t.Errorf("the last row %q", last)
			}
			if tc.shown == 4 && (got[1][2] != "FAILED" || got[1][4] != "-" || got[1][6] != "-" || got[2][6] != "-" || got[3][6] != "-0.500" || got[3][10] != "+1") {
				t.Errorf("the changes: %q", got)
			}
			// The chart: the points are the rows' RTO, to scale.
			testkit.CheckHistoryChart(t, p)
			if n := len(p.HistoryPoints); n != tc.shown-1 && n != tc.shown {
				t.Errorf("%d history points for %d rows", n, tc.shown)
			}
		})
	}
}

// TestHTMLRendersInChromium loads the page in headless Chromium: no
// console message (no script error, nothing its policy had to block), the
// untrusted names are text in the DOM after load, the timeline and tables
// are the report's, and a screenshot shows more than one colour.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := testkit.NewChromium(t)
	r := passedReport()
	r.Phases[1].Problems = []string{evilProb}
	// Its history: two earlier drills and this one, whose RTO grew.
	r.DrillID = "20260504T100000Z-cccc"
	run := testRun
	for i, rto := range []float64{5.2, 5.9, 7.65} {
		run.History = append(run.History, drill.HistoryRow{DrillID: fmt.Sprintf("2026050%dT100000Z-cccc", i+2), OK: true, Strategy: format.StrategyChangelog,
			StartedAt: r.StartedAt.AddDate(0, 0, i-2), RTOName: drill.FigureRTOAppCaughtUp, RTO: &rto, RTOAppCaughtUp: &rto, RecordsRestored: 300})
	}
	run.Trend = drill.Trend(run.History, drill.DefaultRTOGrowthThreshold)
	run.HistoryWarnings = []string{evilWarn}
	file := filepath.Join(t.TempDir(), "drill-report.html")
	if err := os.WriteFile(file, []byte(renderHTML(t, r, run)), 0o600); err != nil {
		t.Fatal(err)
	}
	page := browser.Load(t, file)
	if len(page.Console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(page.Console, "\n"))
	}
	p := testkit.ParseReportPage(t, page.DOM)
	if p.Scripts != 0 || !strings.Contains(p.Text, evilTopic) || !strings.Contains(p.Text, evilProb) {
		t.Errorf("after load: %d scripts; text holds the topic %v, the problem %v", p.Scripts, strings.Contains(p.Text, evilTopic), strings.Contains(p.Text, evilProb))
	}
	checkPageAgainstReport(t, p, r)
	if len(p.Tables["history-table"]) != 3 || p.HistoryGrew != "true" || len(p.HistoryPoints) != 3 {
		t.Errorf("after load: history rows %q, grew %q, %d points", p.Tables["history-table"], p.HistoryGrew, len(p.HistoryPoints))
	}
	png := filepath.Join(t.TempDir(), "drill-report.png")
	browser.Screenshot(t, file, png, 1280, 1600)
	if n := testkit.Colours(t, png); n < 8 {
		t.Errorf("screenshot %s: %d colours, want a drawn page", png, n)
	}
	t.Logf("screenshot: %s", png)
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
