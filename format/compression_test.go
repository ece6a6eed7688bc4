package format

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestSegmentCompressionLevelsRoundTrip: a segment written at each
// compression level decodes to the records written (the reader does not
// know the level), and each level reaches the encoder (each stores
// another number of bytes than default).
func TestSegmentCompressionLevelsRoundTrip(t *testing.T) {
	var want []Record
	for i := range 3000 {
		want = append(want, Record{Partition: 1, Offset: int64(i), Timestamp: 1700000000000 + int64(i),
			Key: fmt.Appendf(nil, "customer-%d", i%97), Value: fmt.Appendf(nil, `{"id":%d,"name":"customer %d","city":"%s"}`, i, i%97, []string{"Lyon", "Oslo", "Porto"}[i%3]),
			Headers: []Header{{Key: "trace", Value: fmt.Appendf(nil, "%08x", i*7919)}}})
	}
	want = append(want, goldenRecordsFrom(3000)...) // every field rule too
	sizes := map[CompressionLevel]int{}
	for _, level := range append([]CompressionLevel{""}, CompressionLevels...) {
		var buf bytes.Buffer
		sw, err := NewSegmentWriterLevel(&buf, "customers", 1, level)
		if err != nil {
			t.Fatalf("level %q: %v", level, err)
		}
		for i := range want {
			if err := sw.Write(&want[i]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decodeAll(t, buf.Bytes()); !reflect.DeepEqual(got, want) {
			t.Fatalf("level %q: the records read back differ from those written", level)
		}
		sizes[level] = buf.Len()
	}
	// Which level stores fewer bytes depends on the data (here fastest
	// does); that they differ shows the level reaches the encoder.
	if sizes[CompressionFastest] == sizes[CompressionDefault] || sizes[CompressionBest] == sizes[CompressionDefault] || sizes[CompressionBetter] == sizes[CompressionDefault] {
		t.Errorf("stored bytes by level %v: a level stored as many bytes as default (the level does not reach the encoder)", sizes)
	}
	if sizes[""] != sizes[CompressionDefault] {
		t.Errorf("stored bytes by level %v: the zero level is not default", sizes)
	}
}

// goldenRecordsFrom is goldenRecords (every field rule) on partition 1,
// their offsets moved up by base.
func goldenRecordsFrom(base int64) []Record {
	recs := goldenRecords()
	for i := range recs {
		recs[i].Partition, recs[i].Offset = 1, recs[i].Offset+base
	}
	return recs
}

func TestParseCompressionLevel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want CompressionLevel
		err  string
	}{
		{"", CompressionDefault, ""},
		{"fastest", CompressionFastest, ""},
		{"default", CompressionDefault, ""},
		{"better", CompressionBetter, ""},
		{"best", CompressionBest, ""},
		{"fast", "", `compression level "fast" is not one of fastest, default, better or best`},
		{"3", "", `compression level "3" is not one of fastest, default, better or best`},
		{"Best", "", `compression level "Best" is not one of`},
	} {
		got, err := ParseCompressionLevel(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseCompressionLevel(%q) = %q, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseCompressionLevel(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := NewSegmentWriterLevel(&bytes.Buffer{}, "t", 0, "turbo"); err == nil || !strings.Contains(err.Error(), `"turbo"`) {
		t.Errorf("NewSegmentWriterLevel with level turbo: %v, want an error naming it", err)
	}
}

// TestSegmentWriterReusesEncoders: a closed segment writer's zstd encoder
// is reused by the next writer of its level (a new encoder per segment was
// 8% of the CPU of a backup of 2,000 small partitions, issue 13), and a
// reused encoder writes the same bytes as a new one, whatever level wrote
// with it before.
func TestSegmentWriterReusesEncoders(t *testing.T) {
	recs := goldenRecords()
	write := func(level CompressionLevel) []byte {
		var buf bytes.Buffer
		sw, err := NewSegmentWriterLevel(&buf, "orders", 3, level)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if err := sw.Write(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := map[CompressionLevel][]byte{}
	for _, l := range CompressionLevels {
		first[l] = write(l)
	}
	for range 3 {
		for _, l := range CompressionLevels {
			if got := write(l); !bytes.Equal(got, first[l]) {
				t.Fatalf("level %s: a reused encoder wrote other bytes than the first", l)
			}
		}
	}
	if got := decodeAll(t, first[CompressionBest]); !reflect.DeepEqual(got, recs) {
		t.Fatal("records read back differ")
	}
	// Bytes allocated per small segment: a new encoder allocates its
	// tables and window (about 1 MiB at the default level); a reused one
	// only the segment writer's buffer (64 KiB).
	write(CompressionDefault)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 20
	for range n {
		write(CompressionDefault)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 512<<10 {
		t.Errorf("%d bytes allocated per segment, want under 512 KiB (the encoder is not reused)", per)
	}
}
