package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// calibrationTolerance is how far estimate's projected recovery may be
// from the drill's measured rto_app_caught_up (issue 11): a factor of 1.5
// either way.
const calibrationTolerance = 1.5

// TestDrillStreamsAppRTO drills the real Kafka Streams drill application
// (e2e/streams-app, exactly_once_v2) on real Kafka 4.4 with
// --app-command: a backup of the app after it processed its input on a
// source broker, then, with the source gone, a changelog drill and a
// rebuild drill each into a new broker, each starting the app with an
// empty state dir. Each reports the three RTO figures (JSON and JUnit), in
// order; and estimate, calibrated by them, projects each strategy's
// recovery within a factor of 1.5 of the drill's rto_app_caught_up.
func TestDrillStreamsAppRTO(t *testing.T) {
	t.Parallel()
	const events = 3000
	repo, dir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "drill-app.yaml")
	t.Run("source", func(t *testing.T) {
		src := testkit.StartKafka(t)
		testkit.CreateStreamsAppTopics(t, src.Bootstrap(), 3)
		cl := testkit.Client(t, src.Addrs())
		base := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
		var recs []*kgo.Record
		cats := []string{"books", "games", "music", "garden", "food"}
		for i, c := range cats {
			recs = append(recs, &kgo.Record{Topic: testkit.StreamsAppCategoriesTopic, Key: []byte(c), Value: []byte(strings.ToUpper(c[:1]) + c[1:]), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
		}
		for i := range events {
			recs = append(recs, &kgo.Record{Topic: testkit.StreamsAppEventsTopic, Key: fmt.Appendf(nil, "u%02d", i%30),
				Value: fmt.Appendf(nil, "%s:%d", cats[i%len(cats)], i), Timestamp: base.Add(time.Minute + time.Duration(i)*100*time.Millisecond)})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		app := testkit.StartStreamsApp(t, src.Bootstrap())
		waitGroupAtEnd(t, testkit.Admin(t, src.Addrs()), testkit.StreamsAppDefaultID, testkit.StreamsAppEventsTopic, 3*time.Minute)
		app.Stop(t)
		writeFileIn(t, dir, "drill-app.yaml", fmt.Sprintf(`application_id: %s
source:
  bootstrap_servers: [%s]
  topics:
    include: [%s, "%s-*"]
storage:
  backend: filesystem
  path: %s
`, testkit.StreamsAppDefaultID, src.Bootstrap(), strings.Join(testkit.StreamsAppTopics, ", "), testkit.StreamsAppDefaultID, repo))
		if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
			t.Fatalf("backup: exit %d\n%s", code, stderr)
		}
		// The end of this subtest stops the source broker: the disaster.
	})
	if t.Failed() {
		t.FailNow()
	}

	for _, tt := range []struct {
		name, strategy string
		opts           []testkit.StreamsAppOpt
		groupType      string
	}{
		{"changelog", "changelog", nil, "classic"},
		{"rebuild", "rebuild", nil, "classic"},
		{"changelog-streams-group", "changelog", []testkit.StreamsAppOpt{testkit.StreamsAppProperty("group.protocol", "streams")}, "streams"},
	} {
		strategy := tt.strategy
		t.Run(tt.name, func(t *testing.T) {
			dst := testkit.StartKafka(t)
			stateDir := t.TempDir() // empty: the app starts with no local state
			app := testkit.StreamsAppCommand(t, tt.opts, "--bootstrap-servers", `"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"`,
				"--application-id", `"$KAFKASTREAMS_DR_APPLICATION_ID"`, "--state-dir", stateDir)
			junit := filepath.Join(t.TempDir(), "drill.xml")
			args := []string{"--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest", "--strategy", strategy,
				"--target-bootstrap-servers", dst.Bootstrap(), "--app-command", app, "--app-timeout", "4m", "--json", "--junit", junit}
			// The changelog drill also writes the HTML report, which the
			// browser test below checks against this run's --json.
			// It signs its scorecard too, which verify-report accepts and
			// refuses once tampered with.
			report := filepath.Join(t.TempDir(), "drill-report.html")
			keys := t.TempDir()
			scorecard := filepath.Join(keys, "scorecard.json")
			priv, pub := signingKey(t, keys, "drill")
			if tt.name == "changelog" {
				args = append(args, "--report", report, "--scorecard", scorecard, "--sign-key-file", priv)
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if tt.name == "changelog" {
				checkReportInBrowser(t, report, stdout)
				checkScorecardTamperingFails(t, scorecard, pub, cfg)
			}
			d := decodeDrillJSON(t, stdout)
			if d.RTODataRestored == nil || d.RTOAppRunning == nil || d.RTOAppCaughtUp == nil {
				t.Fatalf("RTO figures: data %v, running %v, caught up %v; want all three\n%s", d.RTODataRestored, d.RTOAppRunning, d.RTOAppCaughtUp, stdout)
			}
			if !(*d.RTODataRestored > 0 && *d.RTODataRestored < *d.RTOAppRunning && *d.RTOAppRunning <= *d.RTOAppCaughtUp) {
				t.Errorf("want 0 < data restored < running <= caught up: %.3f, %.3f, %.3f", *d.RTODataRestored, *d.RTOAppRunning, *d.RTOAppCaughtUp)
			}
			if d.App == nil || d.App.Lag != 0 || d.App.Partitions == 0 || d.App.Stopped == "" || d.App.GroupType != tt.groupType {
				t.Errorf("app report %+v: want a %s group, lag 0 on its partitions, stopped by the drill", d.App, tt.groupType)
			}
			props := map[string]string{}
			for _, p := range readJUnit(t, junit).Properties {
				props[p.Name] = p.Value
			}
			if v, err := strconv.ParseFloat(props["rto_app_caught_up_seconds"], 64); err != nil || fmt.Sprintf("%.3f", v) != fmt.Sprintf("%.3f", *d.RTOAppCaughtUp) {
				t.Errorf("JUnit rto_app_caught_up_seconds %q, --json %.3f", props["rto_app_caught_up_seconds"], *d.RTOAppCaughtUp)
			}
			t.Logf("%s drill: rto_data_restored %.3fs, rto_app_running %.3fs, rto_app_caught_up %.3fs (app %+v)",
				strategy, *d.RTODataRestored, *d.RTOAppRunning, *d.RTOAppCaughtUp, d.App)

			code, stdout, stderr = runCLI(t, "estimate", "-c", cfg, "--no-cluster", "--json")
			if code != exitOK {
				t.Fatalf("estimate: exit %d\n%s", code, stderr)
			}
			var e estimate.Estimate
			if err := json.Unmarshal([]byte(stdout), &e); err != nil {
				t.Fatal(err)
			}
			var st *estimate.Strategy
			for i := range e.Strategies {
				if e.Strategies[i].Name == strategy {
					st = &e.Strategies[i]
				}
			}
			if st == nil || st.Recovery == nil || !st.Recovery.Calibrated || st.Recovery.Seconds == nil {
				t.Fatalf("estimate of %s: %+v, want a calibrated recovery", strategy, st)
			}
			ratio := *st.Recovery.Seconds / *d.RTOAppCaughtUp
			t.Logf("estimate %s: recovery %.3fs (tool restore alone %.3fs), drill measured %.3fs: ratio %.2f; %s",
				strategy, *st.Recovery.Seconds, st.RestoreSeconds, *d.RTOAppCaughtUp, ratio, st.Recovery.Note)
			if ratio > calibrationTolerance || ratio < 1/calibrationTolerance {
				t.Errorf("estimate projects %.3fs for %s, the drill measured %.3fs: outside a factor of %.1f", *st.Recovery.Seconds, strategy, *d.RTOAppCaughtUp, calibrationTolerance)
			}
		})
	}
}

// checkScorecardTamperingFails: verify-report accepts the drill's signed
// scorecard (signature and binding to this repository's restore report
// and manifest), and refuses (exit 2) a copy whose restored record count
// was changed without re-signing.
func checkScorecardTamperingFails(t *testing.T, scorecard, pub, cfg string) {
	t.Helper()
	if code, stdout, stderr := runCLI(t, "drill", "verify-report", scorecard, "--public-key-file", pub, "-c", cfg); code != exitOK || !strings.Contains(stdout, "is valid") {
		t.Fatalf("verify-report of the drill's scorecard: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	env, _ := envelopeOf(t, scorecard)
	tampered := *env
	tampered.Payload = bytes.Replace(env.Payload, []byte(`"records_restored":`), []byte(`"records_restored":1`), 1)
	if bytes.Equal(tampered.Payload, env.Payload) {
		t.Fatalf("the scorecard has no records_restored to change:\n%s", env.Payload)
	}
	bad := writeEnvelope(t, t.TempDir(), "tampered.json", &tampered)
	code, stdout, stderr := runCLI(t, "drill", "verify-report", bad, "--public-key-file", pub, "-c", cfg)
	if code != exitUsage || !strings.Contains(stderr, "signature: the signature does not verify") {
		t.Errorf("verify-report of a tampered scorecard: exit %d, want %d naming the signature\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}
}

// checkReportInBrowser renders the drill's HTML report in headless
// Chromium and checks, on the DOM after load, that it rendered with no
// console message (no script error, nothing its Content-Security-Policy
// blocked: no network), that its timeline, figures and tables are those of
// the JSON report of the same run (testkit.CheckReportPage), that it names
// the target's Kafka 4.4, and that a screenshot of it is not blank.
func checkReportInBrowser(t *testing.T, report, reportJSON string) {
	t.Helper()
	begin := time.Now()
	browser := testkit.NewChromium(t)
	page := browser.Load(t, report)
	if len(page.Console) > 0 {
		t.Errorf("the report's console:\n%s", strings.Join(page.Console, "\n"))
	}
	p := testkit.ParseReportPage(t, page.DOM)
	testkit.CheckReportPage(t, p, []byte(reportJSON))
	var rep drill.Report
	if err := json.Unmarshal([]byte(reportJSON), &rep); err != nil {
		t.Fatal(err)
	}
	want := []string{drill.PhasePlan, drill.PhaseVerifyRepository, drill.PhaseRestore, drill.PhaseVerifyCluster, drill.PhaseVerifyOffsets, drill.PhaseAppRunning, drill.PhaseAppCaughtUp}
	var got []string
	for _, b := range p.Bars {
		got = append(got, b.Phase)
	}
	if !slices.Equal(got, want) || p.Outcome != "passed" || p.Scripts != 0 || len(p.External) != 0 {
		t.Errorf("the page: phases %v, outcome %q, %d scripts, external %q; want phases %v, passed, none", got, p.Outcome, p.Scripts, p.External, want)
	}
	if len(p.Tables["partitions"]) == 0 || len(p.Tables["partitions"]) != len(rep.Partitions) || len(p.Points) < 2 {
		t.Errorf("the page: %d partition rows (JSON %d), %d throughput samples", len(p.Tables["partitions"]), len(rep.Partitions), len(p.Points))
	}
	if !strings.Contains(rep.TargetKafkaVersion, "4.4") || !strings.Contains(p.Text, rep.TargetKafkaVersion) {
		t.Errorf("target Kafka version %q, want 4.4, on the page", rep.TargetKafkaVersion)
	}
	png := filepath.Join(t.TempDir(), "drill-report.png")
	browser.Screenshot(t, report, png, 1280, 1400)
	if n := testkit.Colours(t, png); n < 8 {
		t.Errorf("screenshot %s: %d colours, want a drawn page", png, n)
	}
	t.Logf("HTML report %s rendered in Chromium as the JSON report says (%d phases, %d partitions, %d samples) in %v; screenshot %s",
		report, len(p.Bars), len(p.Tables["partitions"]), len(p.Points), time.Since(begin).Round(time.Millisecond), png)
}

// waitGroupAtEnd waits until group's committed offsets on every partition
// of topic are at the partition's end, for at most timeout.
func waitGroupAtEnd(t *testing.T, adm *kadm.Client, group, topic string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ends, err := adm.ListCommittedOffsets(t.Context(), topic)
		fetched, ferr := adm.FetchOffsets(t.Context(), group)
		done := err == nil && ferr == nil && len(ends[topic]) > 0
		if done {
			ends.Each(func(e kadm.ListedOffset) {
				if o, ok := fetched.Lookup(e.Topic, e.Partition); !ok || o.At < e.Offset {
					done = false
				}
			})
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not commit the end of %s within %s", group, topic, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
