package bench

import (
	"math"
	"slices"
)

// Range is the median, minimum and maximum of one figure over the rounds
// of a case. N is the number of values; N == 0 means not measured.
type Range struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the Range of xs (the median of an even count is the
// mean of the two middle values). NaN and infinite values are left out.
func Summarize(xs []float64) Range {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Range{}
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Range{Median: med, Min: v[0], Max: v[n-1], N: n}
}

// Ratios divides ours by base round by round (the runs of one round were
// interleaved, so they saw the same machine load): ours[i] / base[i] for
// every round both have, skipping a zero base.
func Ratios(ours, base []float64) []float64 {
	var r []float64
	for i := range min(len(ours), len(base)) {
		if base[i] != 0 {
			r = append(r, ours[i]/base[i])
		}
	}
	return r
}
