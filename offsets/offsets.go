// Package offsets translates the committed offsets of a consumer group from
// a source partition's numbering to a restored partition's.
//
// A restore re-produces records, so the restored partition numbers them
// again from its own log start: compaction holes, transaction markers and
// aborted records of the source take no offsets on the target. The rule
// (docs/DOMAIN.md#offset-translation, this project's decision, stricter
// than existing tools' "nearest lower + delta"): a committed offset O maps
// to the new offset of the first restored record whose original offset is
// >= O; when there is none, to the restored partition's log end. The
// mapping is monotonic and never points past the new end, so a consumer
// resumes at exactly the record it would have read next on the source, or
// at the end.
package offsets

import (
	"fmt"
	"sort"
)

// Run is a stretch of records restored with consecutive offsets on both
// sides: original offsets Orig..Orig+Count-1 became New..New+Count-1.
type Run struct {
	Orig  int64 `json:"orig"`
	New   int64 `json:"new"`
	Count int64 `json:"count"`
}

// Map is the offset map of one restored partition: which original offset
// each restored record had and which offset it got, kept as runs (one per
// hole on either side), and the restored partition's log end. The zero
// value is an empty map of a partition whose log end is 0. Not safe for
// concurrent use.
type Map struct {
	Runs   []Run `json:"runs"`
	NewEnd int64 `json:"new_end"` // log end offset of the restored partition
}

// Add records that the record with original offset orig was restored at
// offset newOff. Both must be greater than every earlier Add's (records are
// restored in order); otherwise Add returns an error and changes nothing.
// It moves NewEnd to newOff+1 when that is larger.
func (m *Map) Add(orig, newOff int64) error {
	if orig < 0 || newOff < 0 {
		return fmt.Errorf("offset map: negative offset (original %d, new %d)", orig, newOff)
	}
	if n := len(m.Runs); n > 0 {
		last := &m.Runs[n-1]
		lo, ln := last.Orig+last.Count-1, last.New+last.Count-1
		if orig <= lo || newOff <= ln {
			return fmt.Errorf("offset map: original %d -> new %d does not follow %d -> %d", orig, newOff, lo, ln)
		}
		if orig == lo+1 && newOff == ln+1 {
			last.Count++
			m.NewEnd = max(m.NewEnd, newOff+1)
			return nil
		}
	}
	m.Runs = append(m.Runs, Run{Orig: orig, New: newOff, Count: 1})
	m.NewEnd = max(m.NewEnd, newOff+1)
	return nil
}

// Records is the number of restored records the map holds.
func (m *Map) Records() int64 {
	var n int64
	for _, r := range m.Runs {
		n += r.Count
	}
	return n
}

// Translate maps a committed offset of the source partition to the restored
// partition: the new offset of the first restored record whose original
// offset is >= committed, or NewEnd when there is none. The result is
// always within [first restored offset or NewEnd, NewEnd].
func (m *Map) Translate(committed int64) int64 {
	// First run whose last original offset is >= committed.
	i := sort.Search(len(m.Runs), func(i int) bool {
		r := m.Runs[i]
		return r.Orig+r.Count-1 >= committed
	})
	if i == len(m.Runs) {
		return m.NewEnd
	}
	r := m.Runs[i]
	if committed <= r.Orig {
		return r.New
	}
	return r.New + (committed - r.Orig)
}

// Original returns the original offset of the record restored at newOff,
// and false when no restored record has that offset.
func (m *Map) Original(newOff int64) (int64, bool) {
	i := sort.Search(len(m.Runs), func(i int) bool {
		r := m.Runs[i]
		return r.New+r.Count-1 >= newOff
	})
	if i == len(m.Runs) || newOff < m.Runs[i].New {
		return 0, false
	}
	r := m.Runs[i]
	return r.Orig + (newOff - r.New), true
}
