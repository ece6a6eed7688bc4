package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// sampleCases are synthetic measurements of every case: ours backup takes
// 2 s where kcat -C takes 1 s (0.5x), ours restore 1 s where kcat -P
// takes 2 s (2x), the offsets phase 0.5 s, one row at 300 MiB.
func sampleCases() []*Case {
	v := variantName(Variants[0])
	rounds := func(wall time.Duration, rssMiB int64) []Sample {
		var s []Sample
		for i := range 3 {
			s = append(s, Sample{Wall: wall + time.Duration(i)*wall/10, CPU: wall / 2, MaxRSS: rssMiB << 20})
		}
		return s
	}
	phases := func(name string, secs float64) []map[string]float64 {
		return []map[string]float64{{name: secs}, {name: secs}, {name: secs}}
	}
	mk := func(id, title string, rows ...*Row) *Case {
		return &Case{ID: id, Title: title, Data: "synthetic", Records: 1000, Bytes: 100e6, Partitions: 12, Rows: rows}
	}
	base := func() []*Row {
		return []*Row{
			{Tool: "kcat -C > /dev/null", Op: "backup", Baseline: true, Samples: rounds(time.Second, 10), Stored: make([]int64, 3)},
			{Tool: "kcat -P", Op: "restore", Baseline: true, Samples: rounds(2*time.Second, 10), Stored: make([]int64, 3)},
		}
	}
	a := mk("a", "1 GiB", append(base(),
		&Row{Tool: v + " backup → dir", Op: "backup", Samples: rounds(2*time.Second, 150), Stored: []int64{5 << 20, 5 << 20, 5 << 20}, Phases: phases("copy", 1.5)},
		&Row{Tool: v + " restore → dir", Op: "restore", Samples: rounds(time.Second, 120)})...)
	a.Profiles = []Profile{{Run: "backup of case a → dir", Total: 3 * time.Second,
		Top:  []ProfileLine{{Func: "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll", CumPct: 79, FlatPct: 70}},
		Flat: []ProfileLine{{Func: "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll", CumPct: 79, FlatPct: 70}}}}
	b2 := mk("b", "2 GiB", &Row{Tool: v + " backup → dir", Op: "backup", Samples: rounds(time.Second, 160)})
	b4 := mk("b", "4 GiB", &Row{Tool: v + " backup → dir", Op: "backup", Samples: rounds(time.Second, 300)})
	c := mk("c", "2000 partitions", append(base(), &Row{Tool: v + " backup → dir", Op: "backup", Samples: rounds(time.Second, 100)})...)
	d := mk("d", "S3", append(base(), &Row{Tool: v + " backup → S3", Op: "backup", Samples: rounds(time.Second, 200)})...)
	e := mk("e", "offsets", &Row{Tool: v + " restore → dir", Op: "restore", Samples: rounds(time.Second, 50), Phases: phases("offsets", 0.5)})
	return []*Case{a, b2, b4, c, d, e}
}

func TestJudge(t *testing.T) {
	ts := Judge(sampleCases())
	want := []string{statusNotMet, statusMet, statusNotMeasured, statusNotMet, statusNotMeasured, statusMet}
	if len(ts) != len(want) {
		t.Fatalf("%d targets, want %d", len(ts), len(want))
	}
	for i, tg := range ts {
		if tg.Text != TargetTexts[i] || tg.Status != want[i] {
			t.Errorf("target %d %q: %s (%s), want %s", i, tg.Text, tg.Status, tg.Evidence, want[i])
		}
	}
	if !strings.Contains(ts[0].Evidence, "0.50x") || !strings.Contains(ts[0].Evidence, "zstd.(*Encoder).EncodeAll 79%") {
		t.Errorf("backup target evidence %q: want the 0.50x ratio and the profile's top function", ts[0].Evidence)
	}
	if !strings.Contains(ts[3].Evidence, "300 MiB") {
		t.Errorf("RSS evidence %q: want the 300 MiB row named", ts[3].Evidence)
	}
	if !strings.Contains(ts[5].Evidence, "0.50 s median") {
		t.Errorf("offsets evidence %q: want the offsets phase's 0.50 s", ts[5].Evidence)
	}
}

// A target whose case did not run is not measured, never met.
func TestJudgeWithoutCases(t *testing.T) {
	for _, tg := range Judge(nil) {
		if tg.Status != statusNotMeasured {
			t.Errorf("%q: %s without any case, want %s", tg.Text, tg.Status, statusNotMeasured)
		}
	}
}

func TestMarkdown(t *testing.T) {
	cs := sampleCases()
	r := &Report{
		Machine: Machine{Cores: 2, CPU: "test CPU", MemoryGB: 24, Kernel: "6.1", Kafka: "4.4.0", Go: "go1.26", Kcat: "Version 1.7.1", Zstd: "v1.5.4"},
		Command: "BENCH_SCALE=1 go run ./internal/bench/kdrbench -out docs/PERFORMANCE.md",
		Started: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC), Elapsed: 20 * time.Minute,
		Cases: cs, Targets: Judge(cs), Rounds: 3, Scale: 1,
	}
	md := r.Markdown()
	for _, want := range []string{
		"| cores | 2 (test CPU) |",
		"| Kafka | Apache Kafka 4.4.0",
		"2026-12-01T23:00:00Z (run took 20m0s)",
		"```\nBENCH_SCALE=1 go run ./internal/bench/kdrbench -out docs/PERFORMANCE.md\n```",
		"| run | rounds | MB/s | records/s | CPU s | peak RSS MiB | stored | throughput vs baselines |",
		// 100 MB in 2, 2.2, 2.4 s; 1000 records; ratio 0.5 in every round.
		"| kafkastreams-dr backup → dir | 3 | 45.5 (41.7-50.0) | 455 (417-500) | 1.0 | 150 | 5.0 MiB | 0.50x kcat -C > /dev/null |",
		"| kafkastreams-dr restore → dir | 3 | 90.9 (83.3-100.0) | 909 (833-1000) | 0.5 | 120 | - | 2.00x kcat -P |",
		"phases (median seconds, as the run pushed them): copy 1.50",
		"`github.com/klauspost/compress/zstd.(*Encoder).EncodeAll` 79.0%",
		"OSO kafka-backup was not measured in this run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("document lacks %q:\n%s", want, md)
		}
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if !strings.Contains(md, "### ("+id+") ") {
			t.Errorf("document lacks case (%s)", id)
		}
	}
	for _, tg := range r.Targets {
		if line := fmt.Sprintf("- **%s**: %s.", tg.Status, tg.Text); !strings.Contains(md, line) {
			t.Errorf("document lacks the target line %q", line)
		}
	}
}

// The backup target is met when one variant meets it (the pass-through
// mode, say), and the evidence names every variant.
func TestJudgeVariant(t *testing.T) {
	saved := Variants
	t.Cleanup(func() { Variants = saved })
	Variants = append(slices.Clone(saved), Variant{Name: "batch", BackupConfig: map[string]string{"segment_kind": "batch"}})
	cs := sampleCases()
	a := cs[0]
	a.Rows = append(a.Rows, &Row{Tool: "kafkastreams-dr [batch] backup → dir", Op: "backup",
		Samples: []Sample{{Wall: time.Second}, {Wall: 1100 * time.Millisecond}, {Wall: 1200 * time.Millisecond}}})
	tg := Judge(cs)[0]
	if tg.Status != statusMet || !strings.Contains(tg.Evidence, "kafkastreams-dr [batch] backup → dir at 1.00x") ||
		!strings.Contains(tg.Evidence, "kafkastreams-dr backup → dir at 0.50x") {
		t.Errorf("backup target with a batch variant: %s, %s; want met, naming both variants", tg.Status, tg.Evidence)
	}
	if !strings.Contains(a.find("kafkastreams-dr [batch] backup → dir").Tool, "[batch]") {
		t.Fatal("row lookup")
	}
	md := (&Report{Cases: cs, Targets: Judge(cs)}).Markdown()
	if !strings.Contains(md, "| kafkastreams-dr [batch] backup → dir | 3 |") {
		t.Errorf("document lacks the batch variant's row:\n%s", md)
	}
}
