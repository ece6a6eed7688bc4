package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// withOSO adds OSO kafka-backup's rows to sampleCases' (a) and (c): in
// (a) its restore takes osoRestoreA per round (ours 1 s), in (c) its
// backup 2 s (ours 1 s) and its restore osoRestoreC (ours 1 s); every
// round 10% slower than the one before, as ours.
func withOSO(osoRestoreA, osoRestoreC time.Duration) []*Case {
	v := variantName(Variants[0])
	rounds := func(wall time.Duration) []Sample {
		var s []Sample
		for i := range 3 {
			s = append(s, Sample{Wall: wall + time.Duration(i)*wall/10, CPU: wall / 2, MaxRSS: 20 << 20})
		}
		return s
	}
	cs := sampleCases()
	a, c := cs[0], cs[3]
	a.Rows = append(a.Rows,
		&Row{Tool: osoBackupTool, Op: "backup", Baseline: true, Samples: rounds(4 * time.Second), Stored: []int64{9 << 20, 9 << 20, 9 << 20}},
		&Row{Tool: osoRestoreTool, Op: "restore", Baseline: true, Samples: rounds(osoRestoreA), Stored: make([]int64, 3)})
	c.Rows = append(c.Rows,
		&Row{Tool: v + " restore → dir", Op: "restore", Samples: rounds(time.Second)},
		&Row{Tool: osoBackupTool, Op: "backup", Baseline: true, Samples: rounds(2 * time.Second), Stored: make([]int64, 3)},
		&Row{Tool: osoRestoreTool, Op: "restore", Baseline: true, Samples: rounds(osoRestoreC), Stored: make([]int64, 3)})
	return cs
}

// With OSO's rows the two targets that compare with it are judged from
// the round-by-round ratios: met at 3x and 2x, not met at 1.5x and
// 0.5x, the evidence naming the ratio and OSO's row.
func TestJudgeOSO(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		restoreA, restoreC       time.Duration
		wantRestore, wantMany    string
		restoreEvidence, manyEvd string
	}{
		{"both met", 3 * time.Second, 2 * time.Second, statusMet, statusMet,
			"kafkastreams-dr restore → dir at 3.00x the throughput of OSO kafka-backup restore → dir (median of 3 rounds, range 3.00-3.00)",
			"case (c), 12 partitions, kafkastreams-dr: backup at 2.00x the throughput of OSO kafka-backup backup → dir (median of 3 rounds, range 2.00-2.00), restore at 2.00x the throughput of OSO kafka-backup restore → dir"},
		{"exactly 2x and 1x are met", 2 * time.Second, time.Second, statusMet, statusMet,
			"at 2.00x the throughput of OSO kafka-backup restore → dir", "restore at 1.00x the throughput of OSO kafka-backup restore → dir"},
		{"neither met", 1500 * time.Millisecond, 500 * time.Millisecond, statusNotMet, statusNotMet,
			"kafkastreams-dr restore → dir at 1.50x the throughput of OSO kafka-backup restore → dir",
			"restore at 0.50x the throughput of OSO kafka-backup restore → dir (median of 3 rounds, range 0.50-0.50); no profile of this run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := Judge(withOSO(tc.restoreA, tc.restoreC))
			if ts[2].Status != tc.wantRestore || !strings.Contains(ts[2].Evidence, tc.restoreEvidence) {
				t.Errorf("%q: %s (%s), want %s with %q", ts[2].Text, ts[2].Status, ts[2].Evidence, tc.wantRestore, tc.restoreEvidence)
			}
			if ts[4].Status != tc.wantMany || !strings.Contains(ts[4].Evidence, tc.manyEvd) {
				t.Errorf("%q: %s (%s), want %s with %q", ts[4].Text, ts[4].Status, ts[4].Evidence, tc.wantMany, tc.manyEvd)
			}
			// The kcat targets do not change with OSO's rows beside them.
			if ts[0].Status != statusNotMet || ts[1].Status != statusMet {
				t.Errorf("kcat targets: %s, %s; want not met, met as without OSO", ts[0].Status, ts[1].Status)
			}
		})
	}
}

// Without OSO's rows both targets say "not measured", the 2,000
// partitions one with kcat's ratios for scale.
func TestJudgeWithoutOSO(t *testing.T) {
	ts := Judge(sampleCases())
	for _, i := range []int{2, 4} {
		if ts[i].Status != statusNotMeasured || !strings.Contains(ts[i].Evidence, "OSO kafka-backup was not measured in this run") {
			t.Errorf("%q: %s (%s), want not measured", ts[i].Text, ts[i].Status, ts[i].Evidence)
		}
	}
	if !strings.Contains(ts[4].Evidence, "for scale, case (c) at 12 partitions: backup at 1.00x the throughput of kcat -C > /dev/null") {
		t.Errorf("2,000 partitions evidence %q: want kcat's ratio for scale", ts[4].Evidence)
	}
}

// A measured OSO with case (c) left out (BENCH_CASES=a) does not send
// the reader to a Baselines section the document does not have.
func TestJudgeOSOWithoutCaseC(t *testing.T) {
	var cs []*Case
	for _, c := range withOSO(3*time.Second, time.Second) {
		if c.ID == "a" {
			cs = append(cs, c)
		}
	}
	ts := Judge(cs)
	if ts[2].Status != statusMet {
		t.Errorf("%q: %s (%s), want met", ts[2].Text, ts[2].Status, ts[2].Evidence)
	}
	if ts[4].Status != statusNotMeasured || ts[4].Evidence != "case (c) was not run" {
		t.Errorf("%q: %s (%s), want not measured: case (c) was not run", ts[4].Text, ts[4].Status, ts[4].Evidence)
	}
	ts = Judge(nil)
	if ts[2].Evidence != "case (a) was not run" {
		t.Errorf("%q without cases: %s, want case (a) was not run", ts[2].Text, ts[2].Evidence)
	}
}

// A measured OSO has its version in the machine table, its bullet under
// How it measures, its rows with ours' ratios over them, and no
// "Baselines not measured" section; an unmeasured one has the section,
// saying why and how to measure it.
func TestMarkdownOSO(t *testing.T) {
	cs := withOSO(3*time.Second, 2*time.Second)
	r := &Report{Machine: Machine{OSO: "kafka-backup 0.17.4"}, Cases: cs, Targets: Judge(cs), Rounds: 3, Scale: 1}
	md := r.Markdown()
	for _, want := range []string{
		"| OSO kafka-backup | kafka-backup 0.17.4 |",
		"- `OSO kafka-backup` (github.com/osodevops/kafka-backup, kafka-backup 0.17.4) with its own defaults",
		"| OSO kafka-backup backup → dir | 3 | 22.7 (20.8-25.0) | 227 (208-250) | 2.0 | 20 | 9.0 MiB | - |",
		"| kafkastreams-dr restore → dir | 3 | 90.9 (83.3-100.0) | 909 (833-1000) | 0.5 | 120 | - | 2.00x kcat -P; 3.00x OSO kafka-backup restore → dir |",
		"- **met**: restore >= 2x OSO kafka-backup. case (a): kafkastreams-dr restore → dir at 3.00x",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Baselines not measured") {
		t.Errorf("document with OSO measured has a Baselines not measured section:\n%s", md)
	}

	r = &Report{Machine: Machine{OSO: ""}, OSO: "neither " + OSOEnv + " nor $PATH names its kafka-backup binary", Cases: sampleCases()}
	r.Targets = Judge(r.Cases)
	md = r.Markdown()
	for _, want := range []string{
		"## Baselines not measured",
		"OSO kafka-backup was not measured in this run: neither KDR_OSO_KAFKA_BACKUP nor $PATH names its kafka-backup binary; the targets that compare with it say \"not measured\". To measure it, build it from its repository with cargo",
		"KDR_OSO_KAFKA_BACKUP=PATH/target/release/kafka-backup make bench",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document without OSO lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| OSO kafka-backup |") || strings.Contains(md, "with its own defaults") {
		t.Errorf("document without OSO describes it as measured:\n%s", md)
	}
}

// OSO's rows are of the directory: case (d), ours to S3, keeps the kcat
// baselines but not OSO's, whose ratios would compare S3 with a local
// directory.
func TestSplitByStoreKeepsOSOWithTheDirectory(t *testing.T) {
	b := &bench{stores: []string{"dir", "s3"}, c: &Case{ID: "c", Rows: []*Row{
		{Tool: "kcat -P", Op: "restore", Baseline: true},
		{Tool: osoRestoreTool, Op: "restore", Baseline: true},
		{Tool: "kafkastreams-dr restore → dir", Op: "restore"},
		{Tool: "kafkastreams-dr restore → S3", Op: "restore"},
	}}}
	got := map[string][]string{}
	for _, c := range b.splitByStore("S3") {
		for _, r := range c.Rows {
			got[c.ID] = append(got[c.ID], r.Tool)
		}
	}
	want := map[string]string{
		"c": "kcat -P|" + osoRestoreTool + "|kafkastreams-dr restore → dir",
		"d": "kcat -P|kafkastreams-dr restore → S3",
	}
	for id, w := range want {
		if g := strings.Join(got[id], "|"); g != w {
			t.Errorf("case (%s) rows %q, want %q", id, g, w)
		}
	}
}

// FindOSO takes KDR_OSO_KAFKA_BACKUP's binary, else kafka-backup on
// $PATH, else none; a binary that is missing or is not kafka-backup is an
// error naming it and how to build the real one.
func TestFindOSO(t *testing.T) {
	dir := t.TempDir()
	script := func(name, version string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := script("kafka-backup", "kafka-backup 0.17.4")
	other := script("other", "something-else 1.0")
	empty := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		name, env, path, want, wantErr string
	}{
		{"the variable's binary", good, empty, good, ""},
		{"kafka-backup on $PATH", "", dir, good, ""},
		{"none", "", empty, "", ""},
		{"a missing file", filepath.Join(dir, "nope"), dir, "", "KDR_OSO_KAFKA_BACKUP=\"" + filepath.Join(dir, "nope") + "\" is not an executable file"},
		{"another program", other, empty, "", "want OSO's kafka-backup (build it from its repository with cargo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path+string(os.PathListSeparator)+"/bin:/usr/bin")
			got, err := FindOSO(ctx, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FindOSO(%q) = %q, %v; want an error with %q", tc.env, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FindOSO(%q) = %q, %v; want %q", tc.env, got, err, tc.want)
			}
		})
	}
}

// checkRecordCount passes when the topics hold the source's records and
// fails, naming the counts, when a restore left fewer or more, or a topic
// has other partitions.
func TestCheckRecordCount(t *testing.T) {
	k := testkit.StartKfake(t, 1)
	adm := testkit.Admin(t, k.Addrs())
	cl := testkit.Client(t, k.Addrs())
	ctx := context.Background()
	ds := Dataset{Topics: []TopicSpec{{Name: "t1", Partitions: 3}, {Name: "t2", Partitions: 2, Compact: true}}}
	if err := createTopics(ctx, adm, ds.Topics); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 25 {
		recs = append(recs, &kgo.Record{Topic: ds.Topics[i%2].Name, Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := checkRecordCount(ctx, adm, ds, 25); err != nil {
		t.Errorf("25 records produced, 25 wanted: %v", err)
	}
	err := checkRecordCount(ctx, adm, ds, 26)
	if err == nil || !strings.Contains(err.Error(), "hold 25 records (high watermarks minus log start offsets), the source 26") {
		t.Errorf("25 records, 26 wanted: %v; want an error naming both counts", err)
	}
	wrong := Dataset{Topics: []TopicSpec{{Name: "t1", Partitions: 4}, {Name: "t2", Partitions: 2}}}
	err = checkRecordCount(ctx, adm, wrong, 25)
	if err == nil || !strings.Contains(err.Error(), "topic t1 has 3 partitions, the source 4") {
		t.Errorf("t1 with 3 partitions, 4 wanted: %v; want an error naming them", err)
	}
}

// OSO's restore creates the topics with a client of its own right after
// the harness deleted them: the harness's client, which knew the deleted
// topics, must still count the new ones (make bench failed with
// UNKNOWN_TOPIC_OR_PARTITION listing their log start offsets).
func TestCheckRecordCountAfterRecreation(t *testing.T) {
	k := testkit.StartKafka(t)
	adm := testkit.Admin(t, k.Addrs())
	ctx := context.Background()
	ds := Dataset{Topics: []TopicSpec{{Name: "re1", Partitions: 3}, {Name: "re2", Partitions: 2}}}
	produce := func(n int) {
		t.Helper()
		cl := testkit.Client(t, k.Addrs())
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: ds.Topics[i%2].Name, Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := createTopics(ctx, adm, ds.Topics); err != nil {
		t.Fatal(err)
	}
	produce(10)
	if err := checkRecordCount(ctx, adm, ds, 10); err != nil {
		t.Fatalf("before the deletion: %v", err)
	}
	if _, err := adm.DeleteTopics(ctx, "re1", "re2"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // as env.reset: until the broker lists neither
		td, err := adm.ListTopics(ctx, "re1", "re2")
		left := 0
		for _, d := range td {
			if d.Err == nil {
				left++
			}
		}
		if err == nil && left == 0 {
			break
		}
		if i == 100 {
			t.Fatalf("%d topics still listed 20 s after their deletion (%v)", left, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	other := testkit.Admin(t, k.Addrs())
	if err := createTopics(ctx, other, ds.Topics); err != nil {
		t.Fatal(err)
	}
	produce(7)
	if err := checkRecordCount(ctx, adm, ds, 7); err != nil {
		t.Errorf("after the topics were created again by another client: %v", err)
	}
}

// A failed restore, OSO's as ours, runs once more from the start and the
// document says so (OSO's restore at 2,000 partitions on a loaded machine
// once failed with NOT_LEADER_OR_FOLLOWER right after it created the
// topics, and the whole run stopped); a restore that left the wrong
// record count, or a failed op without retry, stops the run.
func TestRunOpsRetriesFailedRestores(t *testing.T) {
	newBench := func() *bench {
		return &bench{e: &env{o: Options{Log: io.Discard}, started: time.Now()}, c: &Case{ID: "c"}, rounds: 2}
	}
	sample := func(context.Context, int) (Sample, int64, map[string]float64, error) {
		return Sample{Wall: time.Second}, 0, nil, nil
	}
	failOnce := func(calls *int, err error) func(context.Context, int) (Sample, int64, map[string]float64, error) {
		return func(ctx context.Context, r int) (Sample, int64, map[string]float64, error) {
			*calls++
			if *calls == 1 {
				return Sample{}, 0, nil, err
			}
			return sample(ctx, r)
		}
	}

	b := newBench()
	calls := 0
	produceErr := errors.New("kafka-backup restore: exit status 1; its log ends:\nError: Produce error for events-c:7: code 6")
	err := b.runOps(context.Background(), []op{{tool: osoBackupTool, kind: "backup", baseline: true, run: sample}},
		[]op{{tool: osoRestoreTool, kind: "restore", baseline: true, retry: true, run: failOnce(&calls, produceErr)}})
	if err != nil {
		t.Fatalf("a restore that failed once: %v", err)
	}
	if r := b.c.find(osoRestoreTool); calls != 3 || r == nil || len(r.Samples) != 2 {
		t.Errorf("%d runs, row %+v; want 3 runs (round 1 twice) and 2 samples", calls, r)
	}
	if len(b.c.Notes) != 1 || !strings.Contains(b.c.Notes[0], "round 1: "+osoRestoreTool+" failed and was run again from the start (its figures are the second run's): Error: Produce error for events-c:7: code 6") {
		t.Errorf("notes %q: want round 1's second run of OSO's restore named with its error", b.c.Notes)
	}

	for _, tc := range []struct {
		name string
		o    op
		err  error
	}{
		{"the wrong record count", op{tool: osoRestoreTool, kind: "restore", baseline: true, retry: true},
			fmt.Errorf("after OSO's restore: %w: topics hold 9 records, the source 10", errWrongCount)},
		{"a failed read", op{tool: osoBackupTool, kind: "backup", baseline: true}, errors.New("exit status 1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench()
			calls := 0
			tc.o.run = failOnce(&calls, tc.err)
			err := b.runOps(context.Background(), nil, []op{tc.o})
			if err == nil || !strings.Contains(err.Error(), "case c round 1: "+tc.o.tool+": "+tc.err.Error()) || calls != 1 {
				t.Errorf("error %v after %d runs; want the run's error after 1 run", err, calls)
			}
		})
	}
}

// Both of (c)'s ratios under 1 without profiles (-no-profile) say so
// once, not once per op.
func TestJudgeOSOBothSlowerSaysNoProfileOnce(t *testing.T) {
	cs := withOSO(3*time.Second, 500*time.Millisecond)
	cs[3].find(osoBackupTool).Samples = []Sample{{Wall: 500 * time.Millisecond}, {Wall: 550 * time.Millisecond}, {Wall: 600 * time.Millisecond}}
	tg := Judge(cs)[4]
	if tg.Status != statusNotMet || strings.Count(tg.Evidence, "no profile of this run") != 1 || !strings.Contains(tg.Evidence, "backup at 0.50x") {
		t.Errorf("%q: %s (%s), want not met, backup at 0.50x, 'no profile of this run' once", tg.Text, tg.Status, tg.Evidence)
	}
}
