package format

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenRecords covers every field rule of the encoding
// (docs/DOMAIN.md#record-fidelity): null vs empty key and value (field case
// 12, a tombstone is not an empty value), header order, duplicates, null
// and binary header values (field case 13, headers kept byte for byte),
// negative timestamps and LogAppendTime.
func goldenRecords() []Record {
	return []Record{
		{Partition: 3, Offset: 0, Timestamp: 1700000000000, Key: []byte("k1"), Value: []byte("v1")},
		{Partition: 3, Offset: 1, Timestamp: 1700000000001, Key: []byte("k1"), Value: nil},      // tombstone
		{Partition: 3, Offset: 2, Timestamp: 1700000000002, Key: []byte("k2"), Value: []byte{}}, // empty value
		{Partition: 3, Offset: 3, Timestamp: 1700000000003, Key: nil, Value: []byte("x")},       // null key
		{Partition: 3, Offset: 4, Timestamp: 1700000000004, Key: []byte{}, Value: []byte("y")},  // empty key
		{Partition: 3, Offset: 7, Timestamp: -1, TimestampType: LogAppendTime, Key: []byte("k"), Value: []byte("after a hole")},
		{Partition: 3, Offset: 9, Timestamp: 1700000000009, Key: []byte("cmd"), Value: []byte("v"), Headers: []Header{
			{Key: "x-tag", Value: []byte("tag1")},
			{Key: "x-tag", Value: []byte("tag2")},
			{Key: "trace-id", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "kafka_replyPartition", Value: []byte{0, 0, 0, 3}},
			{Key: "bin\xff", Value: []byte{0xff, 0xfe, 0x00}},
		}},
	}
}

func encode(t testing.TB, topic string, partition int32, recs []Record) ([]byte, SegmentStats) {
	t.Helper()
	var buf bytes.Buffer
	sw, err := NewSegmentWriter(&buf, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := sw.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st
}

func decodeAll(t testing.TB, b []byte) []Record {
	t.Helper()
	var got []Record
	_, _, _, err := ReadSegment(bytes.NewReader(b), func(r *Record) error { got = append(got, *r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSegmentRoundTripKeepsEveryField(t *testing.T) {
	want := goldenRecords()
	b, st := encode(t, "profiles-store-changelog", 3, want)
	got := decodeAll(t, b)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
	}
	// reflect.DeepEqual treats nil and empty slices as different, but check
	// the case-12 rule explicitly anyway.
	if got[1].Value != nil || got[2].Value == nil || len(got[2].Value) != 0 || got[3].Key != nil || got[4].Key == nil {
		t.Fatal("null and empty not kept apart")
	}
	h := got[6].Headers
	if len(h) != 6 || h[2].Value != nil || h[3].Value == nil {
		t.Fatalf("headers: %#v", h)
	}
	if st.Records != 7 || st.FirstOffset != 0 || st.LastOffset != 9 || st.MinTimestamp != -1 || st.NullKeys != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSegmentGolden pins the uncompressed stream byte for byte and checks
// that the stored golden segment still decodes (readers of old backups).
func TestSegmentGolden(t *testing.T) {
	b, _ := encode(t, "profiles-store-changelog", 3, goldenRecords())
	raw := decompress(t, b)
	rawPath := filepath.Join("testdata", "segment-v1.raw.golden")
	segPath := filepath.Join("testdata", "segment-v1.kseg.golden")
	if *update {
		os.WriteFile(rawPath, raw, 0o644)
		os.WriteFile(segPath, b, 0o644)
	}
	wantRaw, err := os.ReadFile(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, wantRaw) {
		t.Fatalf("uncompressed segment stream changed: the encoding is a contract (docs/FORMAT.md); run with -update only for a new format_version")
	}
	stored, err := os.ReadFile(segPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeAll(t, stored); !reflect.DeepEqual(got, goldenRecords()) {
		t.Fatal("golden segment decodes differently")
	}
}

func decompress(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestSegmentDetectsDamage(t *testing.T) {
	b, _ := encode(t, "t", 3, goldenRecords()[:1])
	b2, _ := encode(t, "t", 3, []Record{{Partition: 3, Offset: 5, Key: []byte("a")}})
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated in the middle", b[:len(b)/2]},
		{"truncated by one byte", b[:len(b)-1]},
		{"empty object", nil},
		{"flipped byte", flip(b, len(b)/2)},
		{"flipped last byte (frame checksum)", flip(b, len(b)-1)},
		{"two segments concatenated", append(append([]byte{}, b...), b2...)},
		{"not a segment", []byte("hello world")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := ReadSegment(bytes.NewReader(tc.data), nil)
			if err == nil {
				t.Fatal("damage not detected")
			}
			if tc.name != "not a segment" && !errors.Is(err, ErrCorrupt) && !errors.Is(err, zstd.ErrMagicMismatch) {
				t.Logf("error (not ErrCorrupt): %v", err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x40
	return c
}

func TestSegmentWriterRefusesDisorder(t *testing.T) {
	var buf bytes.Buffer
	sw, _ := NewSegmentWriter(&buf, "t", 0)
	if err := sw.Write(&Record{Offset: 5}); err != nil {
		t.Fatal(err)
	}
	if err := sw.Write(&Record{Offset: 5}); err == nil {
		t.Fatal("duplicate offset accepted")
	}
	if err := sw.Write(&Record{Partition: 1, Offset: 6}); err == nil {
		t.Fatal("record of another partition accepted")
	}
}

func FuzzSegmentHeaders(f *testing.F) {
	f.Add([]byte("k"), []byte{0xff, 0x00}, true)
	f.Fuzz(func(t *testing.T, key, val []byte, null bool) {
		if null {
			val = nil
		}
		rec := []Record{{Offset: 1, Key: key, Value: val, Headers: []Header{{Key: string(key), Value: val}}}}
		if rec[0].Key == nil {
			rec[0].Key = []byte{}
		}
		b, _ := encode(t, "t", 0, rec)
		got := decodeAll(t, b)
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("got %#v want %#v", got, rec)
		}
	})
}
