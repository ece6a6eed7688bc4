package repository_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// The restore's pre-check decodes every segment before the first write
// and the restore decodes it again: the pre-check must not also pay for
// copying every key, value and header (issue 13: "no decode done twice";
// the profile of a 1 GiB restore had repository.(*SegmentCheck).decode at
// 69% of its CPU, format.(*SegmentReader).bytes at 51%). A deep check
// allocates per segment, not per record.
func TestDeepCheckDoesNotCopyRecords(t *testing.T) {
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	recs := make([]format.Record, n)
	val := bytes.Repeat([]byte("v"), 1000)
	for i := range recs {
		recs[i] = format.Record{Partition: 0, Offset: int64(i), Timestamp: 1, Key: []byte("key"), Value: val,
			Headers: []format.Header{{Key: "h", Value: []byte("x")}}}
	}
	seg := putSegment(t, store, readerTopic, 0, recs)
	ctx := context.Background()
	var check *repository.SegmentCheck
	allocs := testing.AllocsPerRun(3, func() {
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, seg, true)
		if err != nil {
			t.Fatal(err)
		}
		check = c
	})
	if check.DecodeErr != nil || check.Records != n || check.FirstOffset != 0 || check.LastOffset != n-1 {
		t.Fatalf("deep check: %+v, want %d records 0..%d decoded", check, n, n-1)
	}
	if allocs > n/10 {
		t.Errorf("a deep check of %d records made %.0f allocations: it copies the records it only needs to check", n, allocs)
	}
}
