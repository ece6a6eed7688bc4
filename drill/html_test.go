package drill_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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

// TestHTMLHistorySection: the history section is there only with history
// rows, one row per earlier drill, oldest first.
func TestHTMLHistorySection(t *testing.T) {
	rto := 12.5
	run := testRun
	run.History = []format.DrillReport{
		{DrillID: "d-2", StartedAt: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), OK: true, RTODataRestored: &rto, RecordsRestored: 300},
		{DrillID: "d-1", StartedAt: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC), OK: false, RecordsRestored: 290},
	}
	p := testkit.ParseReportPage(t, renderHTML(t, passedReport(), run))
	rows := p.Tables["history-table"]
	if !p.IDs["history"] || len(rows) != 2 || rows[0][0] != "d-1" || rows[1][0] != "d-2" || rows[1][4] != "12.500" || rows[0][4] != "-" {
		t.Errorf("history section %v, rows %q", p.IDs["history"], rows)
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
	file := filepath.Join(t.TempDir(), "drill-report.html")
	if err := os.WriteFile(file, []byte(renderHTML(t, r, testRun)), 0o600); err != nil {
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
