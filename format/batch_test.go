package format

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codecs of a batch's attributes (Kafka's CompressionType ids); snappy is
// written two ways, as a raw block and in the xerial framing the Java
// producer writes.
const (
	codecNone = iota
	codecGzip
	codecSnappy
	codecLz4
	codecZstd
	codecSnappyXerial = 0x102 // test-only: snappy id, xerial framing
)

// testBatch encodes recs (one partition, offsets from base) as a
// RecordBatch v2 the way Kafka's DefaultRecordBatch lays it out, compressed
// with codec; logAppend sets the LogAppendTime bit and maxTS.
func testBatch(t testing.TB, base int64, recs []Record, codec int, attrs uint16, maxTS int64) []byte {
	t.Helper()
	var body []byte
	baseTS := recs[0].Timestamp
	for _, r := range recs {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, r.Timestamp-baseTS)
		rec = binary.AppendVarint(rec, r.Offset-base)
		rec = appendNBytes(rec, r.Key)
		rec = appendNBytes(rec, r.Value)
		rec = binary.AppendVarint(rec, int64(len(r.Headers)))
		for _, h := range r.Headers {
			rec = appendNBytes(rec, []byte(h.Key))
			rec = appendNBytes(rec, h.Value)
		}
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	switch codec {
	case codecGzip:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	case codecSnappy:
		body = s2.EncodeSnappy(nil, body)
	case codecSnappyXerial:
		out := append([]byte{}, xerialMagic...)
		out = binary.BigEndian.AppendUint32(out, 1)
		out = binary.BigEndian.AppendUint32(out, 1)
		for rem := body; len(rem) > 0; {
			n := min(len(rem), 7) // several blocks
			blk := s2.EncodeSnappy(nil, rem[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
			rem = rem[n:]
		}
		body = out
		codec = codecSnappy
	case codecLz4:
		var buf bytes.Buffer
		zw := lz4.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	case codecZstd:
		zw, _ := zstd.NewWriter(nil)
		body = zw.EncodeAll(body, nil)
	}
	last := recs[len(recs)-1].Offset - base
	b := make([]byte, batchHeaderBytes, batchHeaderBytes+len(body))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(batchHeaderBytes-12+len(body)))
	binary.BigEndian.PutUint32(b[12:], 0)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(codec)|attrs)
	binary.BigEndian.PutUint32(b[23:], uint32(last))
	binary.BigEndian.PutUint64(b[27:], uint64(baseTS))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTS))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[batchCRCFrom:], crc32c))
	return b
}

func appendNBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

// goldenBatchRecords are goldenRecords in CreateTime (a batch has one
// timestamp type), split into two batches.
func goldenBatchRecords() ([]Record, []Record) {
	recs := goldenRecords()
	for i := range recs {
		recs[i].TimestampType = CreateTime
	}
	return recs[:4], recs[4:]
}

func writeBatchSegment(t testing.TB, topic string, partition int32, batches [][]byte, keep [][]Record) ([]byte, SegmentStats) {
	t.Helper()
	var buf bytes.Buffer
	sw, err := NewBatchSegmentWriter(&buf, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range batches {
		if err := sw.Write(b, keep[i]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	// raw_size is the records' volume in the record encoding, in either kind.
	var held []Record
	for _, k := range keep {
		held = append(held, k...)
	}
	if _, rst := encode(t, topic, partition, held); st.RawBytes != rst.RawBytes {
		t.Fatalf("raw bytes %d, a record segment of the same records %d", st.RawBytes, rst.RawBytes)
	}
	return buf.Bytes(), st
}

func TestBatchSegmentReadsEveryCodec(t *testing.T) {
	a, b := goldenBatchRecords()
	for _, tc := range []struct {
		name  string
		codec int
	}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"snappy xerial", codecSnappyXerial}, {"lz4", codecLz4}, {"zstd", codecZstd}} {
		t.Run(tc.name, func(t *testing.T) {
			b1, b2 := testBatch(t, 0, a, tc.codec, 0, 0), testBatch(t, 4, b, tc.codec, 0, 0)
			seg, st := writeBatchSegment(t, "profiles-store-changelog", 3, [][]byte{b1, b2}, [][]Record{a, b})
			got := decodeAll(t, seg)
			want := append(append([]Record{}, a...), b...)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
			}
			if st.Records != 7 || st.FirstOffset != 0 || st.LastOffset != 9 || st.MinTimestamp != -1 || st.NullKeys != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestBatchSegmentHoldsOnlyTheFrameRange: a batch straddling the backup's
// start or end is stored whole; a reader returns only the records of the
// frame's range.
func TestBatchSegmentHoldsOnlyTheFrameRange(t *testing.T) {
	a, b := goldenBatchRecords()
	b1, b2 := testBatch(t, 0, a, codecLz4, 0, 0), testBatch(t, 4, b, codecZstd, 0, 0)
	seg, st := writeBatchSegment(t, "t", 3, [][]byte{b1, b2}, [][]Record{a[2:], b[:2]})
	got := decodeAll(t, seg)
	want := append(append([]Record{}, a[2:]...), b[:2]...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if st.Records != 4 || st.FirstOffset != 2 || st.LastOffset != 7 {
		t.Fatalf("stats %+v", st)
	}
}

// TestBatchLogAppendTimeUsesMaxTimestamp: under LogAppendTime every record
// of a batch has the batch's maxTimestamp (DefaultRecordBatch).
func TestBatchLogAppendTimeUsesMaxTimestamp(t *testing.T) {
	a, _ := goldenBatchRecords()
	raw := testBatch(t, 0, a, codecNone, attrLogAppend, 1800000000000)
	recs, err := DecodeBatch(raw, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Timestamp != 1800000000000 || r.TimestampType != LogAppendTime {
			t.Fatalf("offset %d: timestamp %d %v, want 1800000000000 LogAppendTime", r.Offset, r.Timestamp, r.TimestampType)
		}
	}
}

// TestSplitBatchesKeepsWholeBatches: a fetch's last batch cut short by its
// size limit is left out; old message sets are flagged by their magic.
func TestSplitBatchesKeepsWholeBatches(t *testing.T) {
	a, b := goldenBatchRecords()
	b1, b2 := testBatch(t, 0, a, codecNone, attrTxn, 0), testBatch(t, 4, b, codecNone, 0, 0)
	raw := append(append([]byte{}, b1...), b2[:len(b2)-3]...)
	got := SplitBatches(raw)
	if len(got) != 1 || got[0].BaseOffset != 0 || got[0].LastOffset != 3 || !got[0].Transactional || got[0].Control || !bytes.Equal(got[0].Bytes, b1) {
		t.Fatalf("split %+v", got)
	}
	old := bytes.Clone(b2)
	old[16] = 1
	if got := SplitBatches(old); len(got) != 1 || got[0].Magic != 1 {
		t.Fatalf("a magic 1 message set: %+v", got)
	}
}

// TestBatchSegmentGolden pins the batch segment stream byte for byte and
// checks that the stored golden segment still decodes.
func TestBatchSegmentGolden(t *testing.T) {
	a, b := goldenBatchRecords()
	path := filepath.Join("testdata", "segment-batch-v1.golden")
	if *update {
		b1, b2 := testBatch(t, 0, a, codecNone, 0, 0), testBatch(t, 4, b, codecZstd, 0, 0)
		seg, _ := writeBatchSegment(t, "profiles-store-changelog", 3, [][]byte{b1, b2}, [][]Record{a[1:], b})
		os.WriteFile(path, seg, 0o644)
	}
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]Record{}, a[1:]...), b...)
	if got := decodeAll(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("golden batch segment decodes differently:\n got %#v\nwant %#v", got, want)
	}
	// The writer, given the golden's own batches, writes the golden's bytes.
	var batches [][]byte
	for rest := stored[8+2+len("profiles-store-changelog")+4:]; rest[0] == tagRecord; {
		n := binary.BigEndian.Uint32(rest[17:21])
		batches = append(batches, rest[21:21+n])
		rest = rest[21+n:]
	}
	if seg, _ := writeBatchSegment(t, "profiles-store-changelog", 3, batches, [][]Record{a[1:], b}); !bytes.Equal(seg, stored) {
		t.Fatal("batch segment stream changed: the encoding is a contract (docs/FORMAT.md); run with -update only for a new format_version")
	}
}

func TestBatchSegmentDetectsDamage(t *testing.T) {
	a, b := goldenBatchRecords()
	b1, b2 := testBatch(t, 0, a, codecGzip, 0, 0), testBatch(t, 4, b, codecNone, 0, 0)
	seg, _ := writeBatchSegment(t, "t", 3, [][]byte{b1, b2}, [][]Record{a, b})
	hdr := 8 + 2 + 1 + 4
	firstBatch := hdr + 21
	huge := bytes.Clone(seg)
	binary.BigEndian.PutUint32(huge[hdr+17:], 1<<30) // a length far beyond the object
	wrongRange := bytes.Clone(seg)
	binary.BigEndian.PutUint64(wrongRange[hdr+1:], 1) // the frame says offsets 1 (held)
	binary.BigEndian.PutUint64(wrongRange[hdr+9:], 5) // and ends at 5, which it does not hold
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated in a batch", seg[:firstBatch+30], "cut short"},
		{"truncated before the trailer", seg[:len(seg)-25], "cut short"},
		{"flipped byte in a batch (its CRC-32C)", flip(seg, firstBatch+40), "CRC-32C"},
		{"flipped batch length", flip(seg, firstBatch+10), "says"},
		{"a length beyond the segment", huge, "cut short"},
		{"a frame range the batch does not hold", wrongRange, "holds no record"},
		{"flipped trailer", flip(seg, len(seg)-2), "trailer"},
		{"data after the trailer", append(bytes.Clone(seg), 0), "after the trailer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := ReadSegment(bytes.NewReader(tc.data), nil)
			if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrCorrupt saying %q", err, tc.want)
			}
		})
	}
}

func TestBatchSegmentWriterRefuses(t *testing.T) {
	a, _ := goldenBatchRecords()
	raw := testBatch(t, 0, a, codecNone, 0, 0)
	sw, _ := NewBatchSegmentWriter(&bytes.Buffer{}, "t", 3)
	if err := sw.Write(raw, nil); err == nil {
		t.Fatal("a batch with no records kept accepted")
	}
	if err := sw.Write(raw, a); err != nil {
		t.Fatal(err)
	}
	if err := sw.Write(raw, a); err == nil {
		t.Fatal("offsets that do not increase accepted")
	}
}

// TestBatchLengthFieldsDoNotAllocate: a batch whose snappy block claims a
// huge decoded length, or whose zstd frame header claims a huge content
// size, is refused without allocating by the claim (the snappy block
// allocated its 1 GiB claim before failing).
func TestBatchLengthFieldsDoNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  []byte
		codec uint16
	}{
		{"snappy block claiming 1 GiB", append(binary.AppendUvarint(nil, 1<<30), 0, 'x'), codecSnappy},
		// magic; frame header: single segment, 4-byte content size of 1 GiB;
		// then one last raw block of 1 byte.
		{"zstd frame claiming 1 GiB", append(binary.LittleEndian.AppendUint32([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xa0}, 1<<30), 0x09, 0x00, 0x00, 'x'), codecZstd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decompressBatch(nil, tc.data, tc.codec)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("accepted")
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Fatalf("decoding %d bytes allocated %d MiB (%v)", len(tc.data), grown>>20, err)
			}
		})
	}
}

// FuzzBatchSegment: no input panics the reader or makes it allocate by a
// length field alone (allocBound: in proportion to the input), and a
// segment it refuses is refused as ErrCorrupt. Seeds: the golden batch
// segment (testdata/fuzz/FuzzBatchSegment) and one per codec.
func FuzzBatchSegment(f *testing.F) {
	a, b := goldenBatchRecords()
	for _, codec := range []int{codecNone, codecGzip, codecSnappyXerial, codecLz4, codecZstd} {
		seg, _ := writeBatchSegment(f, "t", 3, [][]byte{testBatch(f, 0, a, codec, 0, 0), testBatch(f, 4, b, codec, 0, 0)}, [][]Record{a, b})
		f.Add(seg)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var err error
		grown := allocated(func() { _, _, _, err = ReadSegment(bytes.NewReader(data), nil) })
		if grown > allocBound(len(data)) {
			t.Fatalf("a %d-byte segment allocated %d bytes reading it (%v)", len(data), grown, err)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a damaged segment failed without ErrCorrupt: %v", err)
		}
	})
}
