package bench

import (
	"math"
	"slices"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want Range
	}{
		{name: "odd count: the middle value", in: []float64{3, 1, 2}, want: Range{Median: 2, Min: 1, Max: 3, N: 3}},
		{name: "even count: the mean of the two middle values", in: []float64{4, 1, 3, 2}, want: Range{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{name: "one value", in: []float64{0.7}, want: Range{Median: 0.7, Min: 0.7, Max: 0.7, N: 1}},
		{name: "nothing measured", in: nil, want: Range{}},
		{name: "NaN and infinity left out", in: []float64{math.NaN(), 5, math.Inf(1), 1}, want: Range{Median: 3, Min: 1, Max: 5, N: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ours, base []float64
		want       []float64
	}{
		{name: "round by round", ours: []float64{2, 3, 8}, base: []float64{4, 3, 2}, want: []float64{0.5, 1, 4}},
		{name: "a zero base is skipped", ours: []float64{2, 3}, base: []float64{0, 6}, want: []float64{0.5}},
		{name: "only the rounds both have", ours: []float64{1, 2, 3}, base: []float64{2}, want: []float64{0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ratios(tc.ours, tc.base); !slices.Equal(got, tc.want) {
				t.Errorf("Ratios(%v, %v) = %v, want %v", tc.ours, tc.base, got, tc.want)
			}
		})
	}
}

// A throughput ratio is the baseline's wall time over ours on the same
// data: ours twice as slow is 0.5x.
func TestThroughputRatios(t *testing.T) {
	ours := &Row{Samples: []Sample{{Wall: 4e9}, {Wall: 3e9}}}
	base := &Row{Samples: []Sample{{Wall: 2e9}, {Wall: 6e9}}}
	got := ThroughputRatios(ours, base)
	want := []float64{0.5, 2}
	if !slices.Equal(got, want) {
		t.Errorf("ThroughputRatios = %v, want %v", got, want)
	}
	c := &Case{Bytes: 8e6, Records: 1000}
	if got := c.MBps(ours); !slices.Equal(got, []float64{2, 8.0 / 3}) {
		t.Errorf("MBps = %v, want [2 2.666...]", got)
	}
	if got := c.RecordsPerSec(ours); !slices.Equal(got, []float64{250, 1000.0 / 3}) {
		t.Errorf("RecordsPerSec = %v", got)
	}
}

func TestLastLine(t *testing.T) {
	for in, want := range map[string]string{
		"x: exit status 1; stderr ends:\nwarning: w\nError: restore: no leader\nrun the same command again\n": "Error: restore: no leader",
		"one line": "one line",
		"a\nb\n\n": "b",
	} {
		if got := lastLine(in); got != want {
			t.Errorf("lastLine(%q) = %q, want %q", in, got, want)
		}
	}
}
