package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Target is one target of issue 13 and what this run found.
type Target struct {
	Text string
	// Status is "met", "not met" or "not measured".
	Status string
	// Evidence gives the measured figures and, for a target not met, what
	// bounds the case (its profile's top functions).
	Evidence string
}

const (
	statusMet         = "met"
	statusNotMet      = "not met"
	statusNotMeasured = "not measured"
	// rssLimitMiB is the peak RSS target.
	rssLimitMiB = 256
	// offsetsLimitSeconds is the offsets target.
	offsetsLimitSeconds = 2.0
)

// TargetTexts are the targets in its words, in Judge's order.
var TargetTexts = []string{
	"backup >= 0.9x the throughput of `kcat -C` to /dev/null on the same data",
	"restore >= 1.0x `kcat -P`",
	"restore >= 2x OSO kafka-backup",
	"peak RSS <= 256 MiB at 1, 2 and 4 GiB and at 2,000 partitions, S3 included",
	"backup and restore of 2,000 partitions at least as fast as OSO kafka-backup",
	"offsets of 1,000 partitions translated, committed and read back in under 2 s",
}

func findCase(cs []*Case, id string) []*Case {
	var out []*Case
	for _, c := range cs {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

func (c *Case) find(tool string) *Row {
	for _, r := range c.Rows {
		if r.Tool == tool {
			return r
		}
	}
	return nil
}

// bound names what the case's profile of run (Profile.Run, or its
// first word: the op) says bounds it.
func (c *Case) bound(run string) string {
	op, _, _ := strings.Cut(run, " ")
	for _, p := range c.Profiles {
		if (p.Run == run || !strings.Contains(run, " ") && strings.HasPrefix(p.Run, op+" ")) && len(p.Top) > 0 {
			var fs []string
			for _, l := range p.Top[:min(3, len(p.Top))] {
				fs = append(fs, fmt.Sprintf("%s %.0f%%", shortFunc(l.Func), l.CumPct))
			}
			return "; bound by (cumulative CPU of the profiled " + op + "): " + strings.Join(fs, ", ")
		}
	}
	return "; no profile of this run"
}

// ratioTarget judges ours' throughput over a baseline's against at least,
// for every variant: met when one of them meets it (named).
func ratioTarget(text string, cs []*Case, caseID, op, base string, atLeast float64) Target {
	t := Target{Text: text, Status: statusNotMeasured, Evidence: "case (" + caseID + ") was not run"}
	var ev []string
	for _, c := range findCase(cs, caseID) {
		b := c.find(base)
		for _, v := range Variants {
			ours := variantName(v) + " " + op + " → dir"
			o := c.find(ours)
			if o == nil || b == nil {
				continue
			}
			r := Summarize(ThroughputRatios(o, b))
			if t.Status != statusMet {
				t.Status = statusNotMet
			}
			e := fmt.Sprintf("case (%s): %s at %s the throughput of %s (median of %d rounds, range %.2f-%.2f)",
				caseID, ours, fmtRatio(r.Median), base, r.N, r.Min, r.Max)
			if r.Median >= atLeast {
				t.Status = statusMet
			} else {
				e += c.bound(op + " of case " + caseID + " → dir" + variantTag(v))
			}
			ev = append(ev, e)
		}
	}
	if len(ev) > 0 {
		t.Evidence = strings.Join(ev, "; ")
	}
	return t
}

// Judge checks each target of TargetTexts against the cases measured.
func Judge(cs []*Case) []Target {
	v := variantName(Variants[0])
	ts := []Target{
		ratioTarget(TargetTexts[0], cs, "a", "backup", "kcat -C > /dev/null", 0.9),
		ratioTarget(TargetTexts[1], cs, "a", "restore", "kcat -P", 1.0),
		osoRestoreTarget(cs),
		rssTarget(cs, v),
		osoManyPartitionsTarget(cs, v),
		offsetsTarget(cs, v),
	}
	return ts
}

// osoNotMeasured is the evidence of a target that compares with OSO
// kafka-backup when its case ran without OSO's rows.
const osoNotMeasured = "OSO kafka-backup was not measured in this run (see Baselines)"

// osoRestoreTarget is "restore >= 2x OSO kafka-backup": ours' restore over
// OSO's in case (a), round by round, for every variant.
func osoRestoreTarget(cs []*Case) Target {
	as := findCase(cs, "a")
	for _, c := range as {
		if c.find(osoRestoreTool) != nil {
			return ratioTarget(TargetTexts[2], cs, "a", "restore", osoRestoreTool, 2.0)
		}
	}
	if len(as) == 0 {
		return Target{Text: TargetTexts[2], Status: statusNotMeasured, Evidence: "case (a) was not run"}
	}
	return Target{Text: TargetTexts[2], Status: statusNotMeasured, Evidence: osoNotMeasured}
}

// osoManyPartitionsTarget is "backup and restore of 2,000 partitions at
// least as fast as OSO kafka-backup" in case (c): met when one variant's
// backup and restore both have a median throughput ratio over OSO's of at
// least 1.
func osoManyPartitionsTarget(cs []*Case, v string) Target {
	t := Target{Text: TargetTexts[4], Status: statusNotMeasured, Evidence: osoNotMeasured + manyPartitionsContext(cs, v)}
	if len(findCase(cs, "c")) == 0 {
		t.Evidence = "case (c) was not run"
	}
	var ev []string
	for _, c := range findCase(cs, "c") {
		for _, vr := range Variants {
			var parts, bounds []string
			both := true
			for _, op := range []string{"backup", "restore"} {
				base := osoBackupTool
				if op == "restore" {
					base = osoRestoreTool
				}
				o, b := c.find(variantName(vr)+" "+op+" → dir"), c.find(base)
				if o == nil || b == nil {
					both = false
					continue
				}
				r := Summarize(ThroughputRatios(o, b))
				parts = append(parts, fmt.Sprintf("%s at %s the throughput of %s (median of %d rounds, range %.2f-%.2f)",
					op, fmtRatio(r.Median), base, r.N, r.Min, r.Max))
				if r.Median < 1 {
					both = false
					bounds = append(bounds, c.bound(op+" of case c → dir"+variantTag(vr)))
				}
			}
			if len(parts) == 0 {
				continue
			}
			if t.Status != statusMet {
				t.Status = statusNotMet
			}
			if both {
				t.Status = statusMet
			}
			// Without profiles both ops say "no profile of this run": once.
			ev = append(ev, fmt.Sprintf("case (c), %d partitions, %s: %s%s", c.Partitions, variantName(vr), strings.Join(parts, ", "), strings.Join(slices.Compact(bounds), "")))
		}
	}
	if len(ev) > 0 {
		t.Evidence = strings.Join(ev, "; ")
	}
	return t
}

func rssTarget(cs []*Case, v string) Target {
	t := Target{Text: TargetTexts[3], Status: statusNotMeasured}
	var ev, missing []string
	over := false
	for _, id := range []string{"a", "b", "c", "d"} {
		found := findCase(cs, id)
		if len(found) == 0 {
			missing = append(missing, "("+id+")")
		}
		for _, c := range found {
			for _, r := range c.Rows {
				if r.Baseline || !strings.HasPrefix(r.Tool, v+" ") {
					continue
				}
				peak := slices.Max(RSSMiB(r))
				if peak > rssLimitMiB {
					over = true
				}
				ev = append(ev, fmt.Sprintf("(%s) %s %s: %.0f MiB", id, c.Title, strings.TrimPrefix(r.Tool, v+" "), peak))
			}
		}
	}
	switch {
	case over:
		t.Status = statusNotMet
	case len(ev) > 0 && len(missing) == 0:
		t.Status = statusMet
	}
	t.Evidence = "peak RSS over the rounds: " + strings.Join(ev, "; ")
	if len(ev) == 0 {
		t.Evidence = "no case was run"
	}
	if len(missing) > 0 {
		t.Evidence += "; cases not run: " + strings.Join(missing, ", ")
	}
	return t
}

func manyPartitionsContext(cs []*Case, v string) string {
	var ev []string
	for _, c := range findCase(cs, "c") {
		for _, op := range []string{"backup", "restore"} {
			o := c.find(v + " " + op + " → dir")
			base := "kcat -C > /dev/null"
			if op == "restore" {
				base = "kcat -P"
			}
			b := c.find(base)
			if o == nil || b == nil {
				continue
			}
			r := Summarize(ThroughputRatios(o, b))
			ev = append(ev, fmt.Sprintf("%s at %s the throughput of %s", op, fmtRatio(r.Median), base))
		}
		if len(ev) > 0 {
			return fmt.Sprintf("; for scale, case (c) at %d partitions: %s", c.Partitions, strings.Join(ev, ", "))
		}
	}
	return ""
}

func offsetsTarget(cs []*Case, v string) Target {
	t := Target{Text: TargetTexts[5], Status: statusNotMeasured, Evidence: "case (e) was not run"}
	for _, c := range findCase(cs, "e") {
		r := c.find(v + " restore → dir")
		if r == nil {
			continue
		}
		var secs []float64
		what := "the offsets phase (kafkastreams_dr_phase_duration_seconds{phase=\"offsets\"})"
		for i, ph := range r.Phases {
			if s, ok := ph["offsets"]; ok {
				secs = append(secs, s)
			} else {
				secs = append(secs, r.Samples[i].Wall.Seconds())
				what = "the whole restore (the offsets phase was not pushed)"
			}
		}
		if len(secs) == 0 {
			continue
		}
		s := Summarize(secs)
		t.Status = statusNotMet
		if s.Max < offsetsLimitSeconds {
			t.Status = statusMet
		}
		t.Evidence = fmt.Sprintf("case (e), %d partitions: %s took %.2f s median, %.2f-%.2f s over %d rounds (every round must be under %.0f s)",
			c.Partitions, what, s.Median, s.Min, s.Max, s.N, offsetsLimitSeconds)
		if t.Status == statusNotMet {
			t.Evidence += c.bound("restore")
		}
	}
	return t
}

// shortFunc drops the module path of a function name and cuts a name
// longer than 100 bytes (a generic's shape) to its first 100.
func shortFunc(fn string) string {
	const mod = "github.com/kafkastreams-dr/kafkastreams-dr/"
	fn = strings.TrimPrefix(fn, mod)
	if len(fn) > 100 {
		fn = fn[:100] + "..."
	}
	return fn
}

func fmtRatio(r float64) string { return fmt.Sprintf("%.2fx", r) }
