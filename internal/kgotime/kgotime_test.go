package kgotime

import (
	"math"
	"testing"
	"time"
)

// franzTime is franz-go's kgo.timeFromMillis, as of v1.22.3.
func franzTime(ms int64) time.Time { return time.Unix(0, ms*1e6) }

func TestMillisUndoesFranzGoWrap(t *testing.T) {
	for _, ms := range []int64{
		0, 1, -1, 1_700_000_000_000,
		9_223_372_036_854, 9_223_372_036_855, -9_223_372_036_854, -9_223_372_036_855,
		32_503_680_000_000, -62_135_596_800_000, 253_402_300_799_999, // year 9999
		1<<57 - 1, -(1 << 57),
	} {
		if got := Millis(franzTime(ms)); got != ms {
			t.Errorf("Millis(timeFromMillis(%d)) = %d", ms, got)
		}
	}
	// In the nanosecond range it is UnixMilli.
	for _, ms := range []int64{0, -1, 1_700_000_000_123, math.MaxInt64 / 1_000_000, math.MinInt64 / 1_000_000} {
		if got, want := Millis(time.UnixMilli(ms)), time.UnixMilli(ms).UnixMilli(); got != want {
			t.Errorf("Millis(time.UnixMilli(%d)) = %d, want %d", ms, got, want)
		}
	}
}

func TestInBatchIsExactForEveryTimestamp(t *testing.T) {
	for _, tt := range []struct{ first, delta int64 }{
		{math.MaxInt64, 0}, {math.MaxInt64 - 5, 5}, {math.MinInt64, 0}, {math.MinInt64, 7},
		{1<<58 - 1, 0}, {1 << 57, 1}, {-1, 0}, {-1, 1}, {0, 0},
		{1_700_000_000_000, 12345}, {32_503_680_000_000, -3}, {9_223_372_036_850, 10},
	} {
		ms := tt.first + tt.delta
		if got := InBatch(franzTime(ms), tt.first); got != ms {
			t.Errorf("InBatch(timeFromMillis(%d), first %d) = %d", ms, tt.first, got)
		}
	}
}

func TestInverse(t *testing.T) {
	if 15625*inv15625 != 1 {
		t.Fatalf("15625 * %d = %d mod 2^64, want 1", inv15625, 15625*inv15625)
	}
}
