package repository_test

import (
	"context"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// CountBelow decodes the segment a group's committed offset falls in
// (the restore's offset translation, before its first write) to count
// the records below it: it needs their offsets only, not their keys,
// values and headers. It used to copy every one of them (ReadSegment's
// records for a caller that may keep them: 6 allocations per record of
// one header; 23% of the CPU of a restore of case (a) at scale 0.25,
// docs/PERFORMANCE.md), and the restore decodes the segment again to
// produce it. It allocates per segment now, not per record, and counts
// the same.
func TestCountBelowDoesNotCopyRecords(t *testing.T) {
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	p := &format.Partition{Partition: 0, Segments: []format.Segment{putSegment(t, store, readerTopic, 0, headeredRecords(n, 10, 2))}}
	ctx := context.Background()
	for _, tc := range []struct {
		o, end, want int64
	}{
		{10 + 2*4500, -1, 4500},     // a committed offset of a record
		{10 + 2*4500 + 1, -1, 4501}, // between two records (a compacted log's gap)
		{10 + 2*4500, 10 + 2*100, 100},
		{10 + 2*n, -1, n}, // past the last record: the manifest's count
		{10, -1, 0},
	} {
		got, err := repository.CountBelow(ctx, store, readerTopic, p, tc.o, tc.end)
		if err != nil || got != tc.want {
			t.Errorf("CountBelow(%d, end %d) = %d, %v; want %d", tc.o, tc.end, got, err, tc.want)
		}
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := repository.CountBelow(ctx, store, readerTopic, p, 10+2*4500, -1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > n/10 {
		t.Errorf("CountBelow over %d records made %.0f allocations: it copies the records it only counts", 4500, allocs)
	}
}
