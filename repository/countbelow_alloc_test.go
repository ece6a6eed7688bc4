package repository_test

import (
	"context"
	"io"
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

// getCounter is a storage.Backend that counts its Gets.
type getCounter struct {
	storage.Backend
	gets int
}

func (g *getCounter) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	g.gets++
	return g.Backend.Get(ctx, key)
}

// A segment whose manifest entry has as many records as offsets from its
// first to its last (a log without compaction, aborted transactions or
// markers: Kafka gives every record the next offset) holds every offset
// in between (a segment's offsets increase): CountBelow counts the
// records below a bound inside it from the manifest alone, reading no
// object (it decoded the segment, which the restore decodes again to
// produce it). A segment with gaps is still decoded; the restore's read
// checks the manifest's counts and offsets at each trailer either way.
func TestCountBelowOfAGaplessSegmentReadsNothing(t *testing.T) {
	fs, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &getCounter{Backend: fs}
	segment := func(partition int32, first, step int64, n int) format.Segment {
		recs := make([]format.Record, n)
		for i := range recs {
			recs[i] = format.Record{Partition: partition, Offset: first + step*int64(i), Timestamp: 1, Key: []byte("k"), Value: []byte("v")}
		}
		return putSegment(t, fs, readerTopic, partition, recs)
	}
	gapless := &format.Partition{Partition: 0, Segments: []format.Segment{segment(0, 100, 1, 1000), segment(0, 1100, 1, 1000)}}
	gaps := &format.Partition{Partition: 1, Segments: []format.Segment{segment(1, 100, 2, 1000)}}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		p         *format.Partition
		o, end    int64
		want      int64
		wantReads int
	}{
		{"gapless, inside the first segment", gapless, 350, -1, 250, 0},
		{"gapless, inside the second segment", gapless, 1500, -1, 1400, 0},
		{"gapless, the cut below the offset", gapless, 1500, 1200, 1100, 0},
		{"gapless, at the first offset of a segment", gapless, 1100, -1, 1000, 0},
		{"gapless, at the last offset", gapless, 2099, -1, 1999, 0},
		{"with gaps", gaps, 351, -1, 126, 1},
	} {
		store.gets = 0
		got, err := repository.CountBelow(ctx, store, readerTopic, tc.p, tc.o, tc.end)
		if err != nil || got != tc.want || store.gets != tc.wantReads {
			t.Errorf("%s: CountBelow(%d, end %d) = %d, %v reading %d objects; want %d reading %d", tc.name, tc.o, tc.end, got, err, store.gets, tc.want, tc.wantReads)
		}
	}
}
