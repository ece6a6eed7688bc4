package repository_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
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
	seg := putSegment(t, store, readerTopic, 0, headeredRecords(n, 0, 1))
	ctx := context.Background()
	var check *repository.SegmentCheck
	allocs := testing.AllocsPerRun(3, func() {
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, seg, repository.CheckRecords)
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

// The restore's default pre-check (CheckHeader) reads every byte of a
// segment for its size and SHA-256 but decodes only its header, not its
// records (issue 13: no decode done twice; the restore's own read decodes
// them). Shown by what it cannot see: a segment whose zstd frame is
// damaged far past its header, its manifest entry's size and SHA-256 set
// to the damaged bytes, passes the header check with no record counted,
// and fails the record check and the restore's read.
func TestHeaderCheckDoesNotDecodeRecords(t *testing.T) {
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	recs := make([]format.Record, n)
	for i := range recs {
		val := make([]byte, 1000)
		rand.Read(val) // incompressible: the frame has many blocks
		recs[i] = format.Record{Partition: 0, Offset: int64(i), Timestamp: 1, Key: []byte("key"), Value: val}
	}
	seg := putSegment(t, store, readerTopic, 0, recs)
	ctx := context.Background()
	b := getSegment(t, store, seg.Key)
	b[len(b)-100] ^= 0x55 // in the last block, megabytes past the header
	sum := sha256.Sum256(b)
	seg.SHA256 = hex.EncodeToString(sum[:])
	if err := store.Put(ctx, seg.Key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}

	c, err := repository.CheckSegment(ctx, store, readerTopic, 0, seg, repository.CheckHeader)
	if err != nil || !c.Complete || c.Bytes != seg.Size || c.SHA256 != seg.SHA256 {
		t.Fatalf("header check: %+v, %v; want every byte read and hashed", c, err)
	}
	if p := c.Problems(seg); len(p) != 0 || !c.Decoded || !c.HeaderOnly || c.HeaderTopic != readerTopic || c.Records != 0 {
		t.Errorf("header check: problems %q, %+v; want the header decoded, no record, no problem", p, c)
	}
	c, err = repository.CheckSegment(ctx, store, readerTopic, 0, seg, repository.CheckRecords)
	if err != nil || c.DecodeErr == nil || len(c.Problems(seg)) == 0 {
		t.Errorf("record check: %+v, %v; want the damage after the header found", c, err)
	}
	err = repository.ReadSegment(ctx, store, readerTopic, 0, seg, -1, func(*format.Record) error { return nil })
	if !errors.Is(err, repository.ErrSegmentDamaged) {
		t.Errorf("ReadSegment: %v; want the damage found", err)
	}
}

func getSegment(t *testing.T, store storage.Backend, key string) []byte {
	t.Helper()
	rc, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// headeredRecords returns n records of partition 0 from offset first,
// step apart, each with a key, a 1000-byte value and one header: what the
// allocation tests decode.
func headeredRecords(n int, first, step int64) []format.Record {
	recs := make([]format.Record, n)
	val := bytes.Repeat([]byte("v"), 1000)
	for i := range recs {
		recs[i] = format.Record{Partition: 0, Offset: first + step*int64(i), Timestamp: 1, Key: []byte("key"), Value: val,
			Headers: []format.Header{{Key: "h", Value: []byte("x")}}}
	}
	return recs
}
