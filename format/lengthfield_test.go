package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// craftedSegment is a record segment (zstd) of topic "t" partition 0 whose
// one record has the given lengths: key key, value value and a header count
// nh (a length of -1 is null), followed by tail bytes only, as if a length
// field had been damaged (or forged) in a segment of a few dozen bytes.
func craftedSegment(t *testing.T, key, value, nh int32, tail int) []byte {
	t.Helper()
	var raw bytes.Buffer
	raw.Write(segmentMagic[:])
	be := func(v any) { _ = binary.Write(&raw, binary.BigEndian, v) }
	be(int16(1))
	raw.WriteString("t")
	be(int32(0))
	raw.WriteByte(tagRecord)
	be(int32(0))          // partition
	be(int64(0))          // offset
	be(int64(1700000000)) // timestamp
	raw.WriteByte(0)      // CreateTime
	be(key)
	if key == -1 {
		be(value)
	}
	if key == -1 && value == -1 {
		be(nh)
	}
	raw.Write(make([]byte, tail))
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(raw.Bytes())
	zw.Close()
	return out.Bytes()
}

// TestLengthFieldsDoNotSizeAllocations: a damaged key, value or header
// count of a record segment is detected with memory bounded by the bytes
// the segment holds, not by what the length field claims. A 43-byte
// segment whose key length said 1 GiB made restore allocate 1.18 GB
// (issue 14), above the 512Mi the Kubernetes manifests set.
func TestLengthFieldsDoNotSizeAllocations(t *testing.T) {
	for _, tc := range []struct {
		name           string
		key, value, nh int32
	}{
		{"key of 1 GiB", maxFieldBytes, 0, 0},
		{"value of 1 GiB", -1, maxFieldBytes, 0},
		{"a million headers", -1, -1, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg := craftedSegment(t, tc.key, tc.value, tc.nh, 16)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, _, err := ReadSegment(bytes.NewReader(seg), func(*Record) error { return nil })
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("a %d-byte segment claiming %s: %v; want ErrCorrupt", len(seg), tc.name, err)
			}
			// The zstd decoder's window and the reader's buffers are a
			// few MiB at most; a length field must add nothing like it.
			const bound = 8 << 20
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Errorf("a %d-byte segment claiming %s allocated %d bytes reading it (%v); want at most %d", len(seg), tc.name, got, err, bound)
			}
		})
	}
	// The bound is not a limit on real data: a 3 MiB value reads whole.
	v := bytes.Repeat([]byte("v"), 3<<20)
	b, _ := encode(t, "t", 0, []Record{{Offset: 0, Key: []byte("k"), Value: v}})
	got := decodeAll(t, b)
	if len(got) != 1 || !bytes.Equal(got[0].Value, v) {
		t.Fatalf("a 3 MiB value read back as %d records", len(got))
	}
}

// TestZstdWindowDoesNotSizeAllocations: the window size a record
// segment's zstd frame header declares is a length field too. A 12-byte
// object (magic, a frame header declaring a 32 MiB window, nothing more;
// FuzzRecordSegment's finding, testdata/fuzz/FuzzRecordSegment/81b45b37192d3a7f)
// made the reader allocate 33 MB for the window before reading a block;
// a 64 MiB window was accepted, where the writer's is 1 MiB (compression.go).
// It is now refused as damage with the allocation bounded.
func TestZstdWindowDoesNotSizeAllocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		seg  []byte
	}{
		// FHD 0x44: a 2-byte content size, no single segment, checksum;
		// window descriptor 0x78: 2^(10+15) = 32 MiB.
		{"window of 32 MiB", []byte("\x28\xb5\x2f\xfd\x44\x78\x30\x30\x32\x30\x02\x30")},
		// window descriptor 0x80: 2^(10+16) = 64 MiB, the old limit.
		{"window of 64 MiB", []byte("\x28\xb5\x2f\xfd\x04\x80\x01\x00\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, _, err := ReadSegment(bytes.NewReader(tc.seg), nil)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("a %d-byte segment declaring a %s: %v; want ErrCorrupt", len(tc.seg), tc.name, err)
			}
			// One window of the writer's size (1 MiB) and the buffers.
			const bound = 4 << 20
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Errorf("a %d-byte segment declaring a %s allocated %d bytes reading it (%v); want at most %d", len(tc.seg), tc.name, got, err, bound)
			}
		})
	}
	// Every compression level's segment still reads (the writer's window).
	for _, level := range CompressionLevels {
		var buf bytes.Buffer
		sw, err := NewSegmentWriterLevel(&buf, "t", 0, level)
		if err != nil {
			t.Fatal(err)
		}
		v := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB, past one window
		if err := sw.Write(&Record{Offset: 0, Key: []byte("k"), Value: v}); err != nil {
			t.Fatal(err)
		}
		if _, err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decodeAll(t, buf.Bytes()); len(got) != 1 || !bytes.Equal(got[0].Value, v) {
			t.Fatalf("level %s: a 2 MiB value read back as %d records", level, len(got))
		}
	}
}
