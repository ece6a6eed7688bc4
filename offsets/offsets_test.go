package offsets

import (
	"math/rand/v2"
	"testing"
)

// mapOf restores the given original offsets at new offsets base, base+1, ...
func mapOf(t *testing.T, base int64, origs ...int64) *Map {
	t.Helper()
	var m Map
	m.NewEnd = base
	for i, o := range origs {
		if err := m.Add(o, base+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	return &m
}

func TestTranslate(t *testing.T) {
	tests := []struct {
		name      string
		m         *Map
		committed int64
		want      int64
	}{
		// Field case 14 (docs/DOMAIN.md#field-case-14), transactions: log 0 data,
		// 1 commit, 2 aborted, 3 abort marker, 4 data, 5 commit; end 6.
		{"field case 14, transactions: committed at log end", mapOf(t, 0, 0, 4), 6, 2},
		{"field case 14, transactions: committed on an aborted record", mapOf(t, 0, 0, 4), 2, 1},
		{"field case 14, transactions: committed on an abort marker", mapOf(t, 0, 0, 4), 3, 1},
		{"field case 14, transactions: committed on a commit marker", mapOf(t, 0, 0, 4), 1, 1},
		{"field case 14, transactions: committed at the first record", mapOf(t, 0, 0, 4), 0, 0},
		// Field case 16 (docs/DOMAIN.md#field-case-16): transactions-0 log
		// 100..129 restored at 0..29, committed 120.
		{"field case 16, offsets past the end: inside the restored range", mapOf(t, 0, seq(100, 130)...), 120, 20},
		{"field case 16, offsets past the end: empty partition, committed 500", mapOf(t, 0), 500, 0},
		{"field case 16, offsets past the end: committed before the log start", mapOf(t, 0, seq(100, 130)...), 90, 0},
		// Field case 07 (docs/DOMAIN.md#field-case-07): partition 0 has 3
		// records, committed 3 (all consumed).
		{"field case 07, empty partitions: all consumed", mapOf(t, 0, 0, 1, 2), 3, 3},
		{"field case 07, empty partitions: log start 120, nothing restored", mapOf(t, 0), 120, 0},
		// Compaction holes: 0, 5, 6, 9 kept.
		{"compaction: committed in a hole", mapOf(t, 0, 0, 5, 6, 9), 3, 1},
		{"compaction: committed on a kept record", mapOf(t, 0, 0, 5, 6, 9), 6, 2},
		{"compaction: committed in the last hole", mapOf(t, 0, 0, 5, 6, 9), 8, 3},
		{"compaction: committed past the last record", mapOf(t, 0, 0, 5, 6, 9), 10, 4},
		{"compaction: committed far past the end", mapOf(t, 0, 0, 5, 6, 9), 1 << 40, 4},
		// A target whose log did not start at 0.
		{"restored at a log start of 7", mapOf(t, 7, 3, 4, 10), 5, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Translate(tc.committed); got != tc.want {
				t.Fatalf("Translate(%d) = %d, want %d (runs %+v, end %d)", tc.committed, got, tc.want, tc.m.Runs, tc.m.NewEnd)
			}
		})
	}
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestAddRefusesDisorder(t *testing.T) {
	m := mapOf(t, 0, 1, 2)
	for _, c := range [][2]int64{{2, 5}, {1, 5}, {7, 1}, {7, 0}, {-1, 9}} {
		if err := m.Add(c[0], c[1]); err == nil {
			t.Errorf("Add(%d, %d) accepted", c[0], c[1])
		}
	}
	if m.Records() != 2 || len(m.Runs) != 1 {
		t.Fatalf("a refused Add changed the map: %+v", m)
	}
}

// TestTranslateAgainstBruteForce checks the run-length map against the rule
// applied to the full list of restored records, on random logs.
func TestTranslateAgainstBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 11))
	for range 300 {
		var origs []int64
		o := rnd.Int64N(50)
		for range rnd.IntN(60) {
			origs = append(origs, o)
			o += 1 + rnd.Int64N(4)*rnd.Int64N(2) // runs and holes
		}
		base := rnd.Int64N(3)
		m := mapOf(t, base, origs...)
		for c := int64(0); c < o+5; c++ {
			want := base + int64(len(origs))
			for i, x := range origs {
				if x >= c {
					want = base + int64(i)
					break
				}
			}
			if got := m.Translate(c); got != want {
				t.Fatalf("origs %v base %d: Translate(%d) = %d, want %d", origs, base, c, got, want)
			}
			if got := m.Translate(c); got < base || got > m.NewEnd {
				t.Fatalf("Translate(%d) = %d outside [%d, %d]", c, got, base, m.NewEnd)
			}
		}
		for i, x := range origs {
			if got, ok := m.Original(base + int64(i)); !ok || got != x {
				t.Fatalf("Original(%d) = %d %v, want %d", base+int64(i), got, ok, x)
			}
		}
	}
}

func FuzzTranslateMonotonic(f *testing.F) {
	f.Add([]byte{1, 0, 3, 1, 1}, int64(4), int64(9))
	f.Fuzz(func(t *testing.T, steps []byte, a, b int64) {
		var m Map
		o := int64(0)
		for i, s := range steps {
			o += int64(s % 5)
			if err := m.Add(o, int64(i)); err != nil {
				return // steps of 0 repeat an offset: refused, fine
			}
			o++
		}
		if a > b {
			a, b = b, a
		}
		ta, tb := m.Translate(a), m.Translate(b)
		if ta > tb || tb > m.NewEnd || ta < 0 {
			t.Fatalf("not monotonic or out of range: T(%d)=%d T(%d)=%d end %d", a, ta, b, tb, m.NewEnd)
		}
	})
}
