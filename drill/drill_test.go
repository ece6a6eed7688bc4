package drill_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// sampleSource starts a 3-broker kfake cluster seeded with the sample
// application, compacted like a broker's log cleaner would.
func sampleSource(t *testing.T) []string {
	t.Helper()
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	src.Compact()
	return src.Addrs()
}

// drillOptions drills the sample application from source into a new
// 3-broker kfake target, through store.
func drillOptions(t *testing.T, source []string, store storage.Backend) (drill.Options, []string) {
	t.Helper()
	target := testkit.StartKfake(t, 3).Addrs()
	return drill.Options{
		Store: store,
		Backup: backup.Options{
			Source: []kgo.Opt{kgo.SeedBrokers(source...)}, ApplicationID: sample.AppID,
			SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include, Exclude: sample.Exclude,
			SegmentMaxBytes: 2 << 10, // several segments per partition
		},
		Restore: restorer.Options{
			Target: []kgo.Opt{kgo.SeedBrokers(target...)}, ApplicationID: sample.AppID,
			SourceChangelogTopics: sample.SourceChangelogs,
		},
	}, target
}

func newStore(t *testing.T) storage.Backend {
	t.Helper()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return store
}

var allPhases = []string{drill.PhaseBackup, drill.PhasePlan, drill.PhaseVerifyRepository, drill.PhaseRestore, drill.PhaseVerifyCluster, drill.PhaseVerifyOffsets}

func TestDrillPasses(t *testing.T) {
	ctx := t.Context()
	source := sampleSource(t)
	store := newStore(t)
	o, _ := drillOptions(t, source, store)
	var seen []string
	o.OnPhase = func(p drill.Phase) { seen = append(seen, p.Name+" "+string(p.Status)) }

	rep, err := drill.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Failed() != nil {
		t.Fatalf("drill failed: %+v", rep)
	}
	checkPhases(t, rep, allPhases, "")
	if got := strings.Join(seen, ", "); got != "backup passed, restore-plan passed, verify-repository passed, restore passed, verify-cluster passed, verify-offsets passed" {
		t.Errorf("OnPhase saw %s", got)
	}

	m := backupcheck.Latest(t, store, rep.BackupID)
	var records, bytes int64
	var parts int
	// The in-flight tails are part of the backup's volume and restored
	// with it (docs/DOMAIN.md#in-flight).
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range tp.PartitionCuts {
			parts++
			records += p.Records
			for _, s := range p.Segments {
				bytes += s.Size
			}
		}
	}
	v := rep.Volume
	if v.Topics != len(sample.BackedUp)+len(m.InFlight) || v.Partitions != parts || v.Records != records || v.Bytes != bytes || records == 0 || len(m.InFlight) != 2 {
		t.Errorf("volume %+v, want %d topics and 2 in-flight tails, %d partitions, %d records, %d bytes", v, len(sample.BackedUp), parts, records, bytes)
	}
	if v.RecordsRestored != records || v.RecordsVerified != records || v.BackupRecords != records {
		t.Errorf("volume %+v: want %d records backed up, restored and verified", v, records)
	}
	if !rep.BackupTaken || rep.RestoreID == "" || rep.ApplicationID != sample.AppID || rep.Strategy != restorer.StrategyChangelog || !rep.WipeState {
		t.Errorf("report: %+v", rep)
	}
	if rep.RTO <= 0 || time.Duration(rep.RTO) > rep.FinishedAt.Sub(rep.StartedAt) {
		t.Errorf("RTO %v, drill took %v", rep.RTO, rep.FinishedAt.Sub(rep.StartedAt))
	}
	if rep.RPO < 0 || !rep.CutAt.Equal(m.CutAt) || rep.LostAt.Before(rep.CutAt) {
		t.Errorf("RPO %v, cut %v, lost %v", rep.RPO, rep.CutAt, rep.LostAt)
	}
	// The group's offsets, and those of the 3 in-flight partitions it
	// never committed on the source.
	if rep.GroupID != sample.AppID || len(rep.Offsets) != len(m.Group.Offsets)+3 {
		t.Fatalf("offsets of %q: %+v, want %d", rep.GroupID, rep.Offsets, len(m.Group.Offsets)+3)
	}
	want := map[string]string{"orders/0": "12 -> 12", "payments/0": "15 -> 7", sample.Repartition + "/0": "2 -> 0"}
	for _, op := range rep.Offsets {
		if op.OnTarget != op.Translated {
			t.Errorf("%s/%d: on the target %d, translated %d", op.Topic, op.Partition, op.OnTarget, op.Translated)
		}
		tp := op.Topic + "/" + strconv.Itoa(int(op.Partition))
		if w, ok := want[tp]; ok && w != strconv.FormatInt(op.Committed, 10)+" -> "+strconv.FormatInt(op.OnTarget, 10) {
			t.Errorf("%s: %d -> %d, want %s", tp, op.Committed, op.OnTarget, w)
		}
	}

	checkRestoreFigures(t, rep, m)

	// The report survives JSON.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back drill.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.BackupID != rep.BackupID || back.Volume != rep.Volume || len(back.Phases) != 6 ||
		time.Duration(back.RTO-rep.RTO).Abs() > time.Millisecond || !strings.Contains(string(b), `"rto_seconds":`) {
		t.Errorf("JSON round trip: %s", b)
	}

	suite := parseJUnit(t, rep)
	if suite.Tests != 6 || suite.Failures != 0 || suite.Skipped != 0 || len(suite.Cases) != 6 {
		t.Errorf("JUnit suite %+v", suite)
	}
	for i, c := range suite.Cases {
		if c.Name != allPhases[i] || c.Classname != "drill."+sample.AppID || c.Failure != nil || c.Skipped != nil {
			t.Errorf("JUnit case %d: %+v", i, c)
		}
	}
	props := suite.props()
	if props["backup_id"] != rep.BackupID || props["restore_id"] != rep.RestoreID || props["records"] != strconv.FormatInt(records, 10) {
		t.Errorf("JUnit properties %v", props)
	}
	if rto, err := strconv.ParseFloat(props["rto_seconds"], 64); err != nil || rto <= 0 {
		t.Errorf("rto_seconds %q", props["rto_seconds"])
	}
	if rpo, err := strconv.ParseFloat(props["rpo_seconds"], 64); err != nil || rpo < 0 {
		t.Errorf("rpo_seconds %q", props["rpo_seconds"])
	}

	// Drilling the same backup again into another new cluster: no backup
	// phase, and the source counts as lost when the drill starts.
	o2, _ := drillOptions(t, source, store)
	o2.BackupID = "latest"
	rep2, err := drill.Run(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	checkPhases(t, rep2, allPhases[1:], "")
	if rep2.BackupID != rep.BackupID || rep2.BackupTaken || !rep2.LostAt.Equal(rep2.StartedAt) || rep2.RPO < rep.RPO || rep2.Volume.BackupRecords != 0 {
		t.Errorf("drill of an existing backup: %+v", rep2)
	}
}

// TestDrillRefusesATargetHoldingTheApp: the drill target must be new. A
// target holding the app's data is refused by the restorer's preflight;
// empty topics (which a restore would fill) and an earlier drill's restore
// by the drill itself. Nothing is restored or verified after the refusal.
func TestDrillRefusesATargetHoldingTheApp(t *testing.T) {
	source := sampleSource(t)
	store := newStore(t)
	// One backup for every case.
	o, _ := drillOptions(t, source, store)
	first, err := drill.Run(t.Context(), o)
	if err != nil || !first.OK {
		t.Fatalf("first drill: %v %+v", err, first)
	}
	earlier := o.Restore.Target

	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, target []string)
		reuse   bool // drill into the first drill's target
		want    string
	}{
		{"target holds the app's data", func(t *testing.T, target []string) {
			if err := sample.Seed(t.Context(), testkit.Client(t, target)); err != nil {
				t.Fatal(err)
			}
		}, false, `"orders"`},
		{"target holds an empty topic of the app", func(t *testing.T, target []string) {
			if _, err := testkit.Admin(t, target).CreateTopic(t.Context(), 3, -1, nil, sample.Orders); err != nil {
				t.Fatal(err)
			}
		}, false, `topic "orders" already exists on the drill target (the restore would fill it)`},
		{"an earlier drill restored into the target", nil, true, "already restored into the drill target"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, target := drillOptions(t, source, store)
			o.BackupID = "latest"
			if tt.reuse {
				o.Restore.Target = earlier
			}
			if tt.prepare != nil {
				tt.prepare(t, target)
			}
			rep, err := drill.Run(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkPhases(t, rep, allPhases[1:], drill.PhasePlan)
			p := rep.Phase(drill.PhasePlan)
			t.Logf("restore phase: %s: %s", p.Error, strings.Join(p.Problems, "; "))
			if !p.Refused || !strings.Contains(p.Error, "refused") || !strings.Contains(strings.Join(p.Problems, "\n"), tt.want) {
				t.Errorf("restore phase %+v, want refused with %q", p, tt.want)
			}
			if !p.TargetNotNew {
				t.Errorf("restore phase %+v: a target that holds the application is not marked TargetNotNew (the hint to delete its topics or choose another target keys on it)", p)
			}
			if rep.RTO != 0 || rep.RestoreID != "" || rep.Volume.RecordsVerified != 0 {
				t.Errorf("refused drill: RTO %v, restore %q, verified %d", rep.RTO, rep.RestoreID, rep.Volume.RecordsVerified)
			}
			suite := parseJUnit(t, rep)
			f := suite.Cases[0].Failure
			if suite.Tests != 5 || suite.Failures != 1 || suite.Skipped != 4 || f == nil || f.Type != "refused" ||
				!strings.Contains(f.Message, "restore refused") || !strings.Contains(f.Text, tt.want) {
				t.Errorf("JUnit: %+v, failure %+v", suite, f)
			}
		})
	}
}

// corruptingStore flips a byte in the first segment of one partition it is
// asked for: a repository damaged after the backup.
type corruptingStore struct {
	storage.Backend
	match string

	mu  sync.Mutex
	key string // the segment corrupted
}

func (c *corruptingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := c.Backend.Get(ctx, key)
	if err != nil || !strings.HasPrefix(key, "segments/") || !strings.Contains(key, c.match) {
		return rc, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != "" && c.key != key {
		return rc, nil
	}
	c.key = key
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	b[len(b)/2] ^= 0x20
	return io.NopCloser(bytes.NewReader(b)), nil
}

func TestDrillDamagedRepositoryFailsVerification(t *testing.T) {
	source := sampleSource(t)
	store := &corruptingStore{Backend: newStore(t), match: "/" + sample.Orders + "/1/"}
	o, target := drillOptions(t, source, store)
	rep, err := drill.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkPhases(t, rep, allPhases, drill.PhaseVerifyRepository)
	if store.key == "" {
		t.Fatal("no segment was corrupted")
	}
	p := rep.Phase(drill.PhaseVerifyRepository)
	if len(p.Problems) == 0 || !strings.Contains(p.Problems[0], store.key) || !strings.Contains(p.Problems[0], "SHA-256") {
		t.Errorf("problems %q, want the damaged %s named", p.Problems, store.key)
	}
	if rep.RTO != 0 || rep.RestoreID != "" {
		t.Errorf("RTO %v, restore %q: nothing should have been restored", rep.RTO, rep.RestoreID)
	}
	if topics, err := testkit.Admin(t, target).ListTopics(t.Context()); err != nil || len(topics) != 0 {
		t.Errorf("the target holds %v (%v): the drill stops before the restore", topics.Names(), err)
	}
	suite := parseJUnit(t, rep)
	f := suite.Cases[2].Failure
	if suite.Tests != 6 || suite.Failures != 1 || suite.Skipped != 3 || f == nil || !strings.Contains(f.Message, store.key) || f.Type != "problems" {
		t.Errorf("JUnit %+v, failure %+v", suite, f)
	}
	for _, c := range suite.Cases[3:] {
		if c.Skipped == nil {
			t.Errorf("case %s not skipped", c.Name)
		}
	}
}

func TestRunNeedsStoreAndTarget(t *testing.T) {
	if _, err := drill.Run(t.Context(), drill.Options{Restore: restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers("x:1")}}}); err == nil {
		t.Error("no store: no error")
	}
	if _, err := drill.Run(t.Context(), drill.Options{Store: newStore(t)}); err == nil {
		t.Error("no target: no error")
	}
}

// checkPhases checks the report's phases are names, in order, passed up
// to failed (if any), failed there and skipped after it.
func checkPhases(t *testing.T, rep *drill.Report, names []string, failed string) {
	t.Helper()
	if len(rep.Phases) != len(names) {
		t.Fatalf("phases %+v, want %v", rep.Phases, names)
	}
	status := drill.StatusPassed
	for i, p := range rep.Phases {
		want := status
		if p.Name == failed {
			want, status = drill.StatusFailed, drill.StatusSkipped
		}
		if p.Name != names[i] || p.Status != want {
			t.Errorf("phase %d: %s %s (%s %v), want %s %s", i, p.Name, p.Status, p.Error, p.Problems, names[i], want)
		}
		if p.Status != drill.StatusSkipped && (p.StartedAt.IsZero() || p.Duration <= 0 || p.Detail == "" && p.Status == drill.StatusPassed) {
			t.Errorf("phase %s: started %v, duration %v, detail %q", p.Name, p.StartedAt, p.Duration, p.Detail)
		}
	}
	if rep.OK != (failed == "") {
		t.Errorf("OK %v with failed phase %q", rep.OK, failed)
	}
}

// JUnit XML as CI servers read it, parsed independently of the writer's types.
type junitSuite struct {
	XMLName    xml.Name `xml:"testsuite"`
	Name       string   `xml:"name,attr"`
	Tests      int      `xml:"tests,attr"`
	Failures   int      `xml:"failures,attr"`
	Skipped    int      `xml:"skipped,attr"`
	Time       float64  `xml:"time,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []struct {
		Classname string  `xml:"classname,attr"`
		Name      string  `xml:"name,attr"`
		Time      float64 `xml:"time,attr"`
		Failure   *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Skipped *struct{} `xml:"skipped"`
	} `xml:"testcase"`
}

func (s *junitSuite) props() map[string]string {
	m := map[string]string{}
	for _, p := range s.Properties {
		m[p.Name] = p.Value
	}
	return m
}

func parseJUnit(t *testing.T, rep *drill.Report) *junitSuite {
	t.Helper()
	var buf bytes.Buffer
	if err := rep.JUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var s junitSuite
	if err := xml.Unmarshal(buf.Bytes(), &s); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, buf.String())
	}
	if s.Name != drill.JUnitSuiteName || s.Time <= 0 || !strings.HasPrefix(buf.String(), "<?xml") {
		t.Errorf("JUnit suite %q time %v:\n%s", s.Name, s.Time, buf.String())
	}
	return &s
}

// TestJUnitOfAnyText: problems quote keys and values from the data, so the
// XML must stay valid whatever they hold (CDATA terminators, control
// characters, invalid UTF-8).
func TestJUnitOfAnyText(t *testing.T) {
	nasty := "key \"]]>\" value <a>&amp; \x00\x1b bytes \xff\xfe end"
	rep := &drill.Report{ApplicationID: "app", StartedAt: time.Now().Add(-time.Second), FinishedAt: time.Now(),
		Warnings: []string{"backup: " + nasty},
		Phases: []drill.Phase{
			{Name: drill.PhaseVerifyRepository, Status: drill.StatusFailed, Duration: drill.Duration(time.Millisecond), Detail: nasty,
				Error: "restore: " + nasty, Problems: []string{nasty, "second ]]> problem"}},
			{Name: drill.PhaseRestore, Status: drill.StatusSkipped},
		}}
	s := parseJUnit(t, rep)
	if s.Tests != 2 || s.Failures != 1 || s.Skipped != 1 || s.Cases[1].Skipped == nil {
		t.Fatalf("suite %+v", s)
	}
	f := s.Cases[0].Failure
	for _, want := range []string{`key "]]>" value <a>&amp;`, "second ]]> problem", "end"} {
		if !strings.Contains(f.Text, want) {
			t.Errorf("failure text %q does not contain %q", f.Text, want)
		}
	}
	if !strings.Contains(f.Message, "(and 1 more problem)") || f.Type != "problems" {
		t.Errorf("failure %+v", f)
	}
}

// TestRTOFiguresAbsentWhenNotReached (DESIGN invariant 35, issue 11): a
// figure the drill did not reach is null in JSON and absent from JUnit,
// never 0; the ones reached are written.
func TestRTOFiguresAbsentWhenNotReached(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := &drill.Report{ApplicationID: "app", StartedAt: at, FinishedAt: at.Add(time.Minute), LostAt: at,
		RTO: drill.Duration(2 * time.Second), RTODataRestored: drill.Duration(2 * time.Second), RTOAppRunning: drill.Duration(5 * time.Second),
		App: &drill.AppReport{StartedAt: at.Add(3 * time.Second), ExitStatus: "exit status 1"}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rto_data_restored_seconds":2.000`, `"rto_app_running_seconds":5.000`, `"rto_app_caught_up_seconds":null`, `"exit_status":"exit status 1"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON does not hold %s:\n%s", want, b)
		}
	}
	props := parseJUnit(t, rep).props()
	if props["rto_data_restored_seconds"] != "2.000" || props["rto_app_running_seconds"] != "5.000" {
		t.Errorf("JUnit properties %v, want the data and running figures", props)
	}
	if v, ok := props["rto_app_caught_up_seconds"]; ok {
		t.Errorf("JUnit rto_app_caught_up_seconds = %q, want absent", v)
	}
}

// TestRunRefusesAnAppWithoutCommand: Options.App needs a command.
func TestRunRefusesAnAppWithoutCommand(t *testing.T) {
	_, err := drill.Run(t.Context(), drill.Options{Store: newStore(t), Restore: restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}, App: &drill.App{}})
	if err == nil || !strings.Contains(err.Error(), "Options.App.Command") {
		t.Errorf("err = %v, want one naming Options.App.Command", err)
	}
}

// checkRestoreFigures checks the restore's per-partition figures and its
// progress samples against the backup's manifest and the report's volume:
// one row per restored partition with the manifest's offsets and stored
// bytes, and samples from 0 to every record and byte restored. And the
// drill read the clusters' Kafka versions.
func checkRestoreFigures(t *testing.T, rep *drill.Report, m *format.Manifest) {
	t.Helper()
	backed := map[string]format.Partition{}
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range tp.PartitionCuts {
			backed[tp.Name+"/"+strconv.Itoa(int(p.Partition))] = p
		}
	}
	var records, bytes int64
	for _, rp := range rep.Partitions {
		tp := rp.Topic + "/" + strconv.Itoa(int(rp.Partition))
		bp, ok := backed[tp]
		if !ok {
			t.Errorf("partition %s restored, not in the backup", tp)
			continue
		}
		var stored int64
		for _, s := range bp.Segments {
			stored += s.Size
		}
		if rp.OldStart != bp.StartOffset || rp.OldEnd != bp.EndOffset || rp.StoredBytes != stored || rp.Records != bp.Records ||
			rp.NewEnd-rp.NewStart != rp.Records || (rp.Records > 0 && rp.Bytes <= 0) || rp.Class == "" {
			t.Errorf("partition %s: %+v; the backup holds [%d, %d), %d records, %d stored bytes", tp, rp, bp.StartOffset, bp.EndOffset, bp.Records, stored)
		}
		if rp.Class == "changelog" && rp.State != format.StateDigestEqual {
			t.Errorf("changelog partition %s: state %q, want equal", tp, rp.State)
		}
		records += rp.Records
		bytes += rp.Bytes
	}
	if len(rep.Partitions) != len(backed) || records != rep.Volume.RecordsRestored {
		t.Errorf("%d partitions with %d records in the report, want %d with %d", len(rep.Partitions), records, len(backed), rep.Volume.RecordsRestored)
	}
	ps := rep.RestoreProgress
	if len(ps) < 2 || ps[0] != (drill.Sample{}) || ps[len(ps)-1].Records != records || ps[len(ps)-1].Bytes != bytes {
		t.Fatalf("restore progress %+v: want 0 first and %d records, %d bytes last", ps, records, bytes)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].AtMs < ps[i-1].AtMs || ps[i].Records < ps[i-1].Records || ps[i].Bytes < ps[i-1].Bytes {
			t.Errorf("restore progress goes back at sample %d: %+v after %+v", i, ps[i], ps[i-1])
		}
	}
	if restore := rep.Phase(drill.PhaseRestore); ps[len(ps)-1].AtMs > time.Duration(restore.Duration).Milliseconds() {
		t.Errorf("last sample at %d ms, the restore phase took %v", ps[len(ps)-1].AtMs, restore.Duration)
	}
	t.Logf("%d partitions restored (%d records, %d bytes), %d progress samples over %d ms; Kafka: source %q, target %q",
		len(rep.Partitions), records, bytes, len(ps), ps[len(ps)-1].AtMs, rep.SourceKafkaVersion, rep.TargetKafkaVersion)
	if rep.TargetKafkaVersion == "" || (rep.BackupTaken && rep.SourceKafkaVersion == "") {
		t.Errorf("Kafka versions: source %q, target %q", rep.SourceKafkaVersion, rep.TargetKafkaVersion)
	}
}
