package bench

import "time"

// Row is one tool's runs of one operation in a case, one Sample per round
// in round order.
type Row struct {
	// Tool names the command as the document shows it, e.g.
	// "kafkastreams-dr backup → dir" or "kcat -C > /dev/null".
	Tool string
	// Op is "backup" or "restore": ratios compare rows of one Op.
	Op string
	// Baseline is true for kcat's rows, the denominators of the ratios.
	Baseline bool
	Samples  []Sample
	// Stored is the bytes each round left in its output (0 for none).
	Stored []int64
	// Phases holds, per round, the phase durations in seconds the run
	// pushed (kafkastreams_dr_phase_duration_seconds; ours only).
	Phases []map[string]float64
}

// Case is one benchmark case's data and rows.
type Case struct {
	ID    string // "a", "b", ...: the case letters
	Title string
	// Data describes the generated data in words.
	Data       string
	Records    int64
	Bytes      int64 // logical bytes: keys + values + headers
	Partitions int
	Rows       []*Row
	Profiles   []Profile
	Notes      []string
}

// Profile is the top of one CPU profile of ours.
type Profile struct {
	Run string // e.g. "backup of case a"
	// Top is the functions with the most cumulative CPU, at most five,
	// generic frames (runtime, main, cobra) left out.
	Top []ProfileLine
	// Flat is the functions with the most flat (own) CPU, at most five.
	Flat []ProfileLine
	// Total is the profile's total CPU time sampled.
	Total time.Duration
}

// ProfileLine is one function of a profile: its flat and cumulative CPU
// share of the total, in percent.
type ProfileLine struct {
	Func    string
	FlatPct float64
	CumPct  float64
	Cum     time.Duration
}

// row returns the case's row for tool, added with op when missing.
func (c *Case) row(tool, op string, baseline bool) *Row {
	for _, r := range c.Rows {
		if r.Tool == tool {
			return r
		}
	}
	r := &Row{Tool: tool, Op: op, Baseline: baseline}
	c.Rows = append(c.Rows, r)
	return r
}

// MBps is the case's logical megabytes (10^6 bytes) per wall second of each
// round.
func (c *Case) MBps(r *Row) []float64 {
	var v []float64
	for _, s := range r.Samples {
		v = append(v, float64(c.Bytes)/1e6/s.Wall.Seconds())
	}
	return v
}

// RecordsPerSec is the case's records per wall second of each round.
func (c *Case) RecordsPerSec(r *Row) []float64 {
	var v []float64
	for _, s := range r.Samples {
		v = append(v, float64(c.Records)/s.Wall.Seconds())
	}
	return v
}

// CPUSeconds is each round's user + system CPU seconds.
func CPUSeconds(r *Row) []float64 {
	var v []float64
	for _, s := range r.Samples {
		v = append(v, s.CPU.Seconds())
	}
	return v
}

// RSSMiB is each round's peak RSS in MiB.
func RSSMiB(r *Row) []float64 {
	var v []float64
	for _, s := range r.Samples {
		v = append(v, float64(s.MaxRSS)/(1<<20))
	}
	return v
}

// ThroughputRatios is ours' throughput over the baseline's, round by
// round: base wall / ours wall (the same data), > 1 when ours is faster.
func ThroughputRatios(ours, base *Row) []float64 {
	var o, b []float64
	for _, s := range ours.Samples {
		o = append(o, 1/s.Wall.Seconds())
	}
	for _, s := range base.Samples {
		b = append(b, 1/s.Wall.Seconds())
	}
	return Ratios(o, b)
}
