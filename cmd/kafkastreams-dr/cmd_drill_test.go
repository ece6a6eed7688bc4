package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestDrillEmbedded is the README's first command, as make quickstart runs
// it: the whole drill on in-process clusters, with --json and --junit; then
// the readable report, into a new temporary directory.
func TestDrillEmbedded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "kdr-quickstart")
	junit := filepath.Join(dir, "drill-junit.xml")
	priv, pub := signingKey(t, t.TempDir(), "drill-signing") // openssl genpkey -algorithm ed25519
	scorecard := filepath.Join(t.TempDir(), "scorecard.json")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "--embedded", "--out", dir, "--junit", junit, "--json", "--scorecard", scorecard, "--sign-key-file", priv)
	if code != exitOK {
		t.Fatalf("drill --embedded: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep drill.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
	}
	if !rep.OK || len(rep.Phases) != 6 || rep.RTO <= 0 || rep.RPO < 0 || rep.Volume.Records == 0 ||
		rep.Volume.RecordsRestored != rep.Volume.Records || rep.ApplicationID != sample.AppID || len(rep.Offsets) != 9 { // 6, and the 3 in-flight partitions never committed
		t.Errorf("report: %+v", rep)
	}
	for _, w := range []string{"the source cluster is gone", "IMPORTANT: before the application starts"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not contain %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "backups", rep.BackupID, "manifest.json")); err != nil {
		t.Errorf("the backup is not in --out: %v", err)
	}
	suite := readJUnit(t, junit)
	if suite.Name != "kafkastreams-dr drill" || suite.Tests != 6 || suite.Failures != 0 || len(suite.Cases) != 6 {
		t.Errorf("JUnit: %+v", suite)
	}
	props := map[string]string{}
	for _, p := range suite.Properties {
		props[p.Name] = p.Value
	}
	if props["backup_id"] != rep.BackupID || props["restore_id"] != rep.RestoreID || props["records"] != strconv.FormatInt(rep.Volume.Records, 10) || props["rto_seconds"] == "" {
		t.Errorf("JUnit properties %v", props)
	}
	if props["state.order-totals-store"] != "equal" || props["state.customers"] != "equal" || len(rep.States) != 2 {
		t.Errorf("state of the stores: JUnit %v, --json %+v; want order-totals-store and customers equal", props, rep.States)
	}

	// The signed scorecard verifies; a tampered copy does not (issue 15).
	if code, out, errOut := runCLI(t, "drill", "verify-report", scorecard, "--public-key-file", pub); code != exitOK || !strings.Contains(out, "is valid") {
		t.Errorf("verify-report of the drill's scorecard: exit %d\n%s%s", code, out, errOut)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.json")
	env, _ := envelopeOf(t, scorecard)
	env.Payload = bytes.Replace(env.Payload, []byte(`"ok":true`), []byte(`"ok":false`), 1)
	writeEnvelope(t, filepath.Dir(tampered), filepath.Base(tampered), env)
	if code, out, errOut := runCLI(t, "drill", "verify-report", tampered, "--public-key-file", pub); code != exitUsage || !strings.Contains(errOut, "the signature does not verify") {
		t.Errorf("verify-report of a tampered scorecard: exit %d, want 2\n%s%s", code, out, errOut)
	}

	// The readable report, into a new temporary directory.
	code, stdout, stderr = runCLI(t, "--log-level", "error", "drill", "--embedded")
	m := regexp.MustCompile(`repository: (\S+) \(a new temporary directory`).FindStringSubmatch(stderr)
	if m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
	}
	if code != exitOK || m == nil {
		t.Fatalf("drill --embedded: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, re := range []string{
		`The source cluster is gone`,
		`(?m)^PHASE +DURATION +RESULT$`,
		`(?m)^backup +\S+ +passed: \d+ records copied`,
		`(?m)^verify-repository +\S+ +passed: \d+ segments, \d+ bytes: sizes and SHA-256, \d+ records decoded$`,
		`(?m)^restore +\S+ +passed: `,
		`(?m)^verify-cluster +\S+ +passed: `,
		`(?m)^verify-offsets +\S+ +passed: 9 offsets of group order-processor equal to the plan$`, // the in-flight tails' 4 too
		`(?m)^RTO +\S+ +from the start of the drill to restored and verified$`,
		`(?m)^RPO +\S+ +age of the backup's cut`,
		`(?m)^data +\S+: \d+ records in 8 topics`, // 6 and the 2 in-flight tails
		`(?m)^  orders/0: committed 12 on the lost cluster -> 12 on the new one$`,
		`(?m)^  payments/0: committed 15 on the lost cluster -> 7 on the new one$`,
		`(?m)^  ` + regexp.QuoteMeta(sample.Repartition) + `/1: never committed on the lost cluster -> \d+ on the new one$`, // not "committed 0"
		`(?m)^state of the restored stores \(state digest of each changelog on the target against the backup's\):$`,
		`(?m)^  order-totals-store \(topic order-processor-order-totals-store-changelog, 2 partitions\): equal$`,
		`(?m)^  customers \(topic customers, 2 partitions\): equal$`,
		`WIPE LOCAL STATE BEFORE THE APPLICATION STARTS`,
		`(?m)^drill PASSED \(backup \S+, restore \S+\)$`,
		`the repository stays in ` + regexp.QuoteMeta(m[1]),
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("stdout does not match %s:\n%s", re, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(m[1], "backups")); err != nil {
		t.Errorf("the temporary repository: %v", err)
	}
}

func TestDrillEmbeddedRefusesNonEmptyOut(t *testing.T) {
	dir := t.TempDir()
	writeFileIn(t, dir, "something", "x")
	code, _, stderr := runCLI(t, "drill", "--embedded", "--out", dir)
	if code != exitUsage || !strings.Contains(stderr, "is not empty") {
		t.Errorf("exit %d, want 2\n%s", code, stderr)
	}
}

func TestDrillFlags(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()
	t.Run("config", func(t *testing.T) {
		var got *drillOptions
		cmd := newDrillCmd(g, s, func(_ context.Context, o *drillOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "-c", "app.yaml", "--backup-id", "latest", "--strategy", "rebuild", "--to-time", "2024-05-01T12:00:00Z",
			"--topics", "orders,payments", "--replication-factor", "1", "--target-bootstrap-servers", "dr:9092", "--json", "--junit", "out/j.xml", "--no-deep")
		if got == nil || got.ConfigFile != "app.yaml" || got.BackupID != "latest" || got.Strategy != restorer.StrategyRebuild || got.ToTime == nil ||
			fmt.Sprint(got.Topics) != "[orders payments]" || got.ReplicationFactor != 1 || fmt.Sprint(got.TargetBootstrap) != "[dr:9092]" ||
			!got.JSON || got.JUnit != "out/j.xml" || !got.NoDeep || got.Embedded || got.Logger == nil {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("retention", func(t *testing.T) {
		var got *drillOptions
		cmd := newDrillCmd(g, s, func(_ context.Context, o *drillOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "-c", "app.yaml", "--retention", "keep", "--allow-kafka-4-2")
		if got == nil || got.Retention != restorer.RetentionKeep || !got.AllowKafka42 {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		var got *drillOptions
		cmd := newDrillCmd(g, s, func(_ context.Context, o *drillOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "--embedded")
		if got == nil || !got.Embedded || got.Out != "" || got.BackupID != "" || got.Strategy != restorer.StrategyChangelog || got.NoDeep {
			t.Errorf("options = %+v", got)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no config", nil, "no config file"},
		{"embedded with config", []string{"--embedded", "-c", "app.yaml"}, "drop --config"},
		{"embedded with backup id", []string{"--embedded", "--backup-id", "latest"}, "--backup-id does not go with --embedded"},
		{"embedded with target", []string{"--embedded", "--target-bootstrap-servers", "dr:9092"}, "--target-bootstrap-servers does not go with --embedded"},
		{"out without embedded", []string{"-c", "app.yaml", "--out", "x"}, "--out goes with --embedded"},
		{"bad backup id", []string{"-c", "app.yaml", "--backup-id", "yesterday"}, `invalid --backup-id "yesterday"`},
		{"bad strategy", []string{"-c", "app.yaml", "--strategy", "magic"}, `invalid --strategy "magic"`},
		{"bad target", []string{"-c", "app.yaml", "--target-bootstrap-servers", "kafka://dr:9092"}, "listener URL"},
		{"junit is a directory", []string{"-c", "app.yaml", "--junit", "out/"}, "want a file name"},
		{"a negative RTO growth threshold", []string{"-c", "app.yaml", "--report", "r.html", "--rto-growth-threshold", "-5"}, "--rto-growth-threshold -5: want a percentage of 0 or more"},
		// Issue 15: NaN and ±Inf were accepted.
		{"a NaN RTO growth threshold", []string{"-c", "app.yaml", "--rto-growth-threshold", "NaN"}, "--rto-growth-threshold NaN: want a percentage of 0 or more"},
		{"an infinite RTO growth threshold", []string{"-c", "app.yaml", "--rto-growth-threshold", "Inf"}, "--rto-growth-threshold +Inf: want a percentage of 0 or more"},
		{"a -Inf RTO growth threshold", []string{"-c", "app.yaml", "--rto-growth-threshold", "-Inf"}, "--rto-growth-threshold -Inf: want a percentage of 0 or more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"drill"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "Usage:") {
				t.Errorf("exit %d, want 2 with %q and the usage:\n%s", code, tt.want, stderr)
			}
		})
	}
}

// TestDrillConfig drills with a config on kfake clusters: a drill that
// passes (exit 0); the same backup into the same target again, refused
// (exit 2); a damaged repository (exit 1); the source as the target
// (exit 2). JUnit XML is written whatever the outcome.
func TestDrillConfig(t *testing.T) {
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	target := testkit.StartKfake(t, 3)
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, strings.Join(src.Addrs(), ", "), strings.Join(target.Addrs(), ", "), repo))
	junit := filepath.Join(t.TempDir(), "reports", "drill.xml")
	// The drill does not create --junit's directory (it is checked first).
	if err := os.Mkdir(filepath.Dir(junit), 0o755); err != nil {
		t.Fatal(err)
	}

	report := filepath.Join(filepath.Dir(junit), "drill.html")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--junit", junit, "--report", report)
	if code != exitOK || !strings.Contains(stdout, "drill PASSED") || !strings.Contains(stdout, "DR drill of order-processor") {
		t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if s := readJUnit(t, junit); s.Tests != 6 || s.Failures != 0 {
		t.Errorf("JUnit %+v", s)
	}
	if !strings.Contains(stderr, "HTML report: "+report+"\n") {
		t.Errorf("stderr does not name the HTML report:\n%s", stderr)
	}
	if p := readReportPage(t, report); p.Outcome != "passed" || len(p.Bars) != 6 || len(p.Tables["partitions"]) == 0 || len(p.Points) < 2 ||
		!strings.Contains(p.Text, "kafkastreams-dr --log-level error drill --config "+cfg+" --junit "+junit+" --report "+report) {
		t.Errorf("the HTML report of the drill that passed: outcome %q, %d bars, %d partition rows, %d samples\n%s",
			p.Outcome, len(p.Bars), len(p.Tables["partitions"]), len(p.Points), p.Text)
	}

	t.Run("target already restored: refused", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest", "--junit", junit, "--report", report)
		if p := readReportPage(t, report); p.Outcome != "failed" || len(p.Bars) != 1 || p.Bars[0].Status != "failed" || !strings.Contains(p.Text, "already restored into the drill target") {
			t.Errorf("the HTML report of the refused drill: outcome %q, bars %+v\n%s", p.Outcome, p.Bars, p.Text)
		}
		if code != exitUsage || !strings.Contains(stderr, "drill FAILED in phase restore-plan: restore refused") ||
			!strings.Contains(stderr, "a drill restores into a new cluster") || !regexp.MustCompile(`(?m)^restore-plan +\S+ +FAILED \(refused\)`).MatchString(stdout) {
			t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		s := readJUnit(t, junit)
		if s.Tests != 5 || s.Failures != 1 || s.Cases[0].Failure == nil || !strings.Contains(s.Cases[0].Failure.Text, "already restored into the drill target") {
			t.Errorf("JUnit %+v", s)
		}
	})

	// New-user pass after issue 10: a drill whose backup phase finds another
	// application's backups in the repository exited 1 ("check the source
	// cluster"); the backup itself refuses that with exit 2.
	t.Run("another application's repository: refused", func(t *testing.T) {
		other := writeFile(t, "other.yaml", strings.Replace(readFile(t, cfg), "application_id: order-processor", "application_id: other-app", 1))
		fresh := testkit.StartKfake(t, 3)
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", other,
			"--target-bootstrap-servers", fresh.Bootstrap(), "--junit", junit)
		if code != exitUsage || !strings.Contains(stderr, "drill FAILED in phase backup") ||
			!strings.Contains(stderr, `"other-app"`) || !strings.Contains(stderr, "storage.prefix") {
			t.Errorf("exit %d, want 2 naming the applications and storage.prefix\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	t.Run("damaged repository", func(t *testing.T) {
		var segment string
		filepath.WalkDir(filepath.Join(repo, "segments"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && segment == "" && strings.HasSuffix(path, ".kseg") {
				segment = path
			}
			return err
		})
		b, err := os.ReadFile(segment)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x20
		if err := os.WriteFile(segment, b, 0o600); err != nil {
			t.Fatal(err)
		}
		key, _ := filepath.Rel(repo, segment)
		fresh := testkit.StartKfake(t, 3)
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
			"--target-bootstrap-servers", fresh.Bootstrap(), "--junit", junit, "--json")
		if code != exitUsage || !strings.Contains(stderr, "drill FAILED in phase verify-repository: "+key) || !strings.Contains(stderr, "verify -c "+cfg+" --deep") {
			t.Errorf("exit %d, want 2\nstderr:\n%s", code, stderr)
		}
		var rep drill.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.OK || rep.Failed() == nil || rep.Failed().Name != drill.PhaseVerifyRepository {
			t.Errorf("--json report (%v): %s", err, stdout)
		}
		s := readJUnit(t, junit)
		if s.Failures != 1 || s.Cases[1].Failure == nil || !strings.Contains(s.Cases[1].Failure.Message, key) {
			t.Errorf("JUnit %+v", s)
		}
	})

	t.Run("target is the source", func(t *testing.T) {
		code, _, stderr := runCLI(t, "drill", "-c", cfg, "--target-bootstrap-servers", strings.Join(src.Addrs(), ","))
		if code != exitUsage || !strings.Contains(stderr, "the drill target is the source cluster") {
			t.Errorf("exit %d, want 2\n%s", code, stderr)
		}
	})
}

// junitXML is JUnit XML as CI servers read it.
type junitXML struct {
	XMLName    xml.Name `xml:"testsuite"`
	Name       string   `xml:"name,attr"`
	Tests      int      `xml:"tests,attr"`
	Failures   int      `xml:"failures,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []struct {
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
	} `xml:"testcase"`
}

func readJUnit(t *testing.T, file string) *junitXML {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s junitXML
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s does not parse: %v\n%s", file, err, b)
	}
	return &s
}

func writeFileIn(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptedDrillWritesJUnit is a regression test (new-user test): a
// drill stopped by Ctrl-C wrote no JUnit file, so a cancelled CI job showed
// nothing. It writes its HTML report (--report) too, with the history of
// the drills recorded before it, read although the drill's context is
// cancelled.
func TestInterruptedDrillWritesJUnit(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	report := filepath.Join(t.TempDir(), "drill.html")
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rto := 4.25
	earlier := &format.DrillReport{DrillID: format.NewBackupID(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), [4]byte{1, 2, 3, 4}), ApplicationID: "app", Strategy: format.StrategyChangelog,
		StartedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), OK: true, RTODataRestored: &rto, RecordsRestored: 20}
	if err := repository.SaveDrillReport(t.Context(), store, earlier); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // as SIGINT does
	o := &drillOptions{JUnit: junit, Report: report, RTOGrowthThreshold: 20, Logger: slog.New(slog.DiscardHandler)}
	rep := &drill.Report{ApplicationID: "app", Interrupted: true, Phases: []drill.Phase{
		{Name: drill.PhaseBackup, Status: drill.StatusPassed},
		{Name: drill.PhaseRestore, Status: drill.StatusFailed, Error: "context canceled"},
		{Name: drill.PhaseVerifyCluster, Status: drill.StatusSkipped},
	}}
	st, _, _ := testStreams()
	err = drillRunError(ctx, context.Canceled, o, store, rep, st, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	s := readJUnit(t, junit)
	if s.Tests != 3 || s.Failures != 1 || s.Cases[1].Failure == nil {
		t.Fatalf("JUnit of the interrupted drill: %+v", s)
	}
	if p := readReportPage(t, report); p.Outcome != "interrupted" || !strings.Contains(p.Text, "INTERRUPTED in phase restore") {
		t.Errorf("HTML report of the interrupted drill: outcome %q\n%s", p.Outcome, p.Text)
	}
	if rows := readReportPage(t, report).Tables["history-table"]; len(rows) != 1 || rows[0][0] != earlier.DrillID || rows[0][4] != "4.250" {
		t.Errorf("the interrupted drill's page has the history %q, want the earlier drill %s", rows, earlier.DrillID)
	}
}

// readReportPage reads and parses the HTML report of --report.
func readReportPage(t *testing.T, file string) *testkit.ReportPage {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.ParseReportPage(t, string(b))
}
