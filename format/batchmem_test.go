package format

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/pierrec/lz4/v4"
)

// manyBatches is a partition's records in batches of perBatch: keys of a
// few bytes, text values of 100 to 400 bytes (compressible, as the bench's
// are), one header each; and their keys', values' and headers' bytes.
func manyBatches(batches, perBatch int) ([][]Record, int64) {
	rng := rand.New(rand.NewPCG(13, 7))
	words := []string{"order", "customer", "amount", "EUR", "shipped", "pending", "sku"}
	var out [][]Record
	var logical int64
	off := int64(0)
	for range batches {
		recs := make([]Record, perBatch)
		for i := range recs {
			n := 100 + rng.IntN(300)
			v := make([]byte, 0, n+16)
			for len(v) < n {
				v = fmt.Appendf(v, "%s=%d,", words[rng.IntN(len(words))], rng.IntN(100000))
			}
			recs[i] = Record{Partition: 3, Offset: off, Timestamp: 1_700_000_000_000 + off, Key: fmt.Appendf(nil, "c-%d", rng.IntN(5000)), Value: v,
				Headers: []Header{{Key: "trace", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}}}
			logical += int64(len(recs[i].Key) + len(v) + len("trace") + 16)
			off++
		}
		out = append(out, recs)
	}
	return out, logical
}

// TestBatchSegmentAllocatesByTheRecords: reading a batch segment allocates
// about the records' own bytes, not a new batch buffer, decompression
// buffer and array of records per batch. The restore of batch segments
// peaked at 298-315 MiB RSS against 233-246 MiB for record segments of the
// same data (docs/PERFORMANCE.md): a heap profile at its peak showed the
// batches' growing bytes.Buffers, lz4.Reader's 4 MiB block buffers and
// whole batches of records decoded ahead of the producer. No timing: the
// bytes the Go runtime counts as allocated (runtime.MemStats.TotalAlloc).
func TestBatchSegmentAllocatesByTheRecords(t *testing.T) {
	batches, logical := manyBatches(60, 1000)
	n := int64(len(batches) * len(batches[0]))
	for _, tc := range []struct {
		name  string
		codec int
	}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"lz4", codecLz4}, {"zstd", codecZstd}} {
		t.Run(tc.name, func(t *testing.T) {
			raws := make([][]byte, len(batches))
			largest := 0
			for i, recs := range batches {
				raws[i] = testBatch(t, recs[0].Offset, recs, tc.codec, 0, 0)
				largest = max(largest, len(raws[i]))
			}
			seg, _ := writeBatchSegment(t, "orders", 3, raws, batches)
			read := func() {
				sr, err := NewSegmentReader(bytes.NewReader(seg))
				if err != nil {
					t.Fatal(err)
				}
				defer sr.Close()
				var rec Record
				for {
					if err := sr.Next(&rec); err == io.EOF {
						return
					} else if err != nil {
						t.Fatal(err)
					}
				}
			}
			// No GC while measuring: it would empty the pools of decoders
			// and buffers, made once per process, not per segment.
			runtime.GC()
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			read()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			read()
			runtime.ReadMemStats(&after)
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			// Each record: its bytes in one allocation (size classes round
			// up by at most 1/8), its header key and its []Header (64
			// bytes). Once per segment: its buffered reader, one batch and
			// one batch decompressed (each at most twice their size, as
			// they grow; reused from the last reader here) and 1 MiB for
			// the rest.
			bound := logical + logical/8 + 64*n + 64<<10 + 2*int64(largest) + 2*(logical/int64(len(batches))) + 1<<20
			t.Logf("%d records of %d bytes in %d batches (the largest %d bytes): %d bytes allocated, %.0f per record, bound %d", n, logical, len(batches), largest, allocated, float64(allocated)/float64(n), bound)
			if allocated > bound {
				t.Errorf("reading %d records of %d bytes allocated %d bytes (%.2fx their bytes), more than %d: buffers per batch, not per segment", n, logical, allocated, float64(allocated)/float64(logical), bound)
			}
		})
	}
}

// TestBatchSegmentRecordsOwnTheirBytes: the records of a batch segment
// read with reused batch buffers are byte-exact after every later batch
// was read (none aliases a buffer the next batch overwrites), and each
// record's key, value and header values lie outside the reader's buffers.
func TestBatchSegmentRecordsOwnTheirBytes(t *testing.T) {
	batches, _ := manyBatches(12, 50)
	for _, tc := range []struct {
		name  string
		codec int
	}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"snappy xerial", codecSnappyXerial}, {"lz4", codecLz4}, {"zstd", codecZstd}} {
		t.Run(tc.name, func(t *testing.T) {
			var raws [][]byte
			var want []Record
			for _, recs := range batches {
				raws = append(raws, testBatch(t, recs[0].Offset, recs, tc.codec, 0, 0))
				want = append(want, recs...)
			}
			seg, _ := writeBatchSegment(t, "orders", 3, raws, batches)
			sr, err := NewSegmentReader(bytes.NewReader(seg))
			if err != nil {
				t.Fatal(err)
			}
			defer sr.Close()
			inside := func(b []byte, buf []byte) bool {
				if len(b) == 0 || cap(buf) == 0 {
					return false
				}
				p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
				return p >= lo && p < lo+uintptr(cap(buf))
			}
			var got []Record
			for {
				var rec Record
				if err := sr.Next(&rec); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				for _, b := range [][]byte{rec.Key, rec.Value, rec.Headers[0].Value} {
					if inside(b, sr.raw) || inside(b, sr.data) {
						t.Fatalf("record of offset %d aliases the reader's batch buffers", rec.Offset)
					}
				}
				got = append(got, rec)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("records differ from those written (%d read, %d written)", len(got), len(want))
			}
		})
	}
}

// TestLz4FramesOfEveryShape: unlz4 decodes what pierrec/lz4's writer
// writes, as its own reader does, in every frame option Kafka's producers
// use or may: block sizes of 64 KiB to 4 MiB, dependent blocks, block and
// content checksums, content size, stored (incompressible) blocks, data
// larger than a block and several frames in a row; and reuses the
// destination's capacity.
func TestLz4FramesOfEveryShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	text := make([]byte, 0, 3<<20)
	for len(text) < 3<<20 {
		text = fmt.Appendf(text, "key-%d=value-%d;", rng.IntN(1000), rng.IntN(50))
	}
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	frame := func(t *testing.T, data []byte, opts ...lz4.Option) []byte {
		var buf bytes.Buffer
		zw := lz4.NewWriter(&buf)
		if err := zw.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		opts []lz4.Option
	}{
		{"default (4 MiB blocks, content checksum)", text[:200<<10], nil},
		{"64 KiB blocks, several", text, []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"64 KiB blocks flagged dependent", text, []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true)}},
		{"256 KiB blocks, block checksums, no content checksum", text, []lz4.Option{lz4.BlockSizeOption(lz4.Block256Kb), lz4.BlockChecksumOption(true), lz4.ChecksumOption(false)}},
		{"1 MiB blocks, content size", text, []lz4.Option{lz4.BlockSizeOption(lz4.Block1Mb), lz4.SizeOption(uint64(len(text)))}},
		{"incompressible: stored blocks", random, []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := frame(t, tc.data, tc.opts...)
			if strings.HasSuffix(tc.name, "flagged dependent") {
				// pierrec/lz4 writes independent blocks only (as Kafka's
				// KafkaLZ4BlockOutputStream does); flagged dependent, each
				// is decoded with the frame's output before it as its
				// dictionary, which an independent block never refers to.
				src[4] &^= lz4FlagIndep
			}
			got, err := unlz4(nil, src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("decoded %d bytes, want %d", len(got), len(tc.data))
			}
			again, err := unlz4(got, append(src, src...)) // two frames in a row, into the last buffer
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, append(bytes.Clone(tc.data), tc.data...)) {
				t.Fatalf("two frames decoded to %d bytes, want %d", len(again), 2*len(tc.data))
			}
		})
	}
	t.Run("damaged block", func(t *testing.T) {
		src := frame(t, text[:100<<10], lz4.BlockSizeOption(lz4.Block64Kb))
		src[20] ^= 0xff
		if out, err := unlz4(nil, src); err == nil && bytes.Equal(out, text[:100<<10]) {
			t.Fatal("a damaged block decoded to the original")
		}
	})
}

// TestBatchSegmentSkipContentsDoesNotCopy: a check's reader
// (SkipContents) of a batch segment decodes every record, offsets and
// timestamps as without it, but copies no key, value or header: it
// allocates a small part of the records' bytes (it copied them all, as a
// restore's read does, so a deep pre-check of batch segments allocated the
// backup's bytes once more).
func TestBatchSegmentSkipContentsDoesNotCopy(t *testing.T) {
	batches, logical := manyBatches(30, 1000)
	var raws [][]byte
	var want []Record
	for _, recs := range batches {
		raws = append(raws, testBatch(t, recs[0].Offset, recs, codecLz4, 0, 0))
		for _, r := range recs {
			r.Key, r.Value, r.Headers = nil, nil, nil
			want = append(want, r)
		}
	}
	seg, _ := writeBatchSegment(t, "orders", 3, raws, batches)
	read := func(keep bool) []Record {
		sr, err := NewSegmentReader(bytes.NewReader(seg))
		if err != nil {
			t.Fatal(err)
		}
		defer sr.Close()
		sr.SkipContents()
		var rec Record
		var got []Record
		for {
			if err := sr.Next(&rec); err == io.EOF {
				return got
			} else if err != nil {
				t.Fatal(err)
			}
			if keep {
				got = append(got, rec)
			}
		}
	}
	if got := read(true); !reflect.DeepEqual(got, want) {
		t.Fatalf("SkipContents read %d records unlike those written without their contents (%d)", len(got), len(want))
	}
	largest := 0
	for _, b := range raws {
		largest = max(largest, len(b))
	}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	read(false)
	runtime.ReadMemStats(&after)
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	// At most a new batch buffer and decompression buffer (twice the
	// largest batch, decompressed, each), the buffered reader, 1 MiB
	// for the rest: nothing per record.
	bound := 4*(int64(largest)+logical/int64(len(raws))) + 64<<10 + 1<<20
	t.Logf("%d bytes of records in batches of up to %d bytes: %d bytes allocated, bound %d", logical, largest, allocated, bound)
	if allocated > bound {
		t.Errorf("a SkipContents read of %d bytes of records allocated %d bytes, more than %d: it copies the records", logical, allocated, bound)
	}
}

// FuzzLz4Frame: no input panics unlz4 (a batch's CRC-32C keeps
// FuzzBatchSegment's mutations away from it), and what it decodes from a
// frame pierrec/lz4 reads it decodes alike.
func FuzzLz4Frame(f *testing.F) {
	for _, opts := range [][]lz4.Option{nil, {lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true)}, {lz4.SizeOption(300)}} {
		var buf bytes.Buffer
		zw := lz4.NewWriter(&buf)
		if err := zw.Apply(opts...); err != nil {
			f.Fatal(err)
		}
		zw.Write(bytes.Repeat([]byte("key=value;"), 30))
		zw.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := unlz4(nil, src)
		if err != nil {
			return
		}
		want, rerr := io.ReadAll(lz4.NewReader(bytes.NewReader(src)))
		if rerr == nil && !bytes.Equal(got, want) {
			t.Fatalf("unlz4 decoded %d bytes, lz4.Reader %d", len(got), len(want))
		}
	})
}
