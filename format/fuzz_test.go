package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The fuzz targets of the format's decoders (issue 14). Each has a seed
// corpus committed under testdata/fuzz/<FuzzName>/ (written from the
// golden objects of testdata/) besides the seeds it adds itself; `make
// fuzz` runs each for FUZZTIME, CI for 5 s. Every target checks that no
// input panics, that an accepted input re-encodes to what it decoded
// from, and that decoding allocates in proportion to the input, never by
// what a length field claims.

// allocBound is what decoding n input bytes may allocate: the zstd
// decoder's and the reader's buffers (a few MiB, once) plus a multiple of
// the input (a JSON object expands into Go values, a record into a Record).
func allocBound(n int) uint64 { return 16<<20 + 64*uint64(n) }

// allocated returns the bytes fn allocated (the whole process's, which in
// a fuzz worker or a test is fn's alone but for the runtime's own).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func readGolden(f *testing.F, name string) []byte {
	f.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// zstdFrame compresses raw into one frame, as a SegmentWriter stores it.
func zstdFrame(t testing.TB, raw []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderCRC(true), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// FuzzRecordSegment feeds a whole record segment to the reader: the input
// is its uncompressed stream (header, records, trailer: what a flipped or
// forged byte changes inside a frame whose checksum still holds), stored
// as one zstd frame. A segment that decodes must re-encode, by a
// SegmentWriter of the same topic and partition, to the very same stream
// (the encoding has one form per record: null and empty apart, headers in
// order); one that does not must fail with ErrCorrupt. The input is also
// read as a stored object itself (either kind, compressed or not).
func FuzzRecordSegment(f *testing.F) {
	f.Add(readGolden(f, "segment-v1.raw.golden"))
	b, _ := encode(f, "t", 0, nil)
	f.Add(decompress(f, b))
	b, _ = encode(f, "t", 0, []Record{{Offset: 0, Key: []byte{}, Value: nil, Headers: []Header{{Key: "", Value: nil}}}})
	f.Add(decompress(f, b))
	f.Fuzz(func(t *testing.T, raw []byte) {
		seg := zstdFrame(t, raw)
		var recs []Record
		var topic string
		var partition int32
		var err error
		grown := allocated(func() {
			topic, partition, _, err = ReadSegment(bytes.NewReader(seg), func(r *Record) error { recs = append(recs, *r); return nil })
		})
		if grown > allocBound(len(raw)) {
			t.Fatalf("a %d-byte segment stream allocated %d bytes reading it (%v)", len(raw), grown, err)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("a damaged segment failed without ErrCorrupt: %v", err)
			}
		} else {
			again, _ := encode(t, topic, partition, recs)
			if got := decompress(t, again); !bytes.Equal(got, raw) {
				t.Fatalf("%d records of %s/%d decoded from a stream that re-encodes differently:\n got %q\nwant %q", len(recs), topic, partition, got, raw)
			}
		}
		grown = allocated(func() { ReadSegment(bytes.NewReader(raw), nil) }) //nolint:errcheck // only panics and allocations matter
		if grown > allocBound(len(raw)) {
			t.Fatalf("a %d-byte object allocated %d bytes reading it", len(raw), grown)
		}
	})
}

// FuzzManifest decodes and validates a manifest as LoadManifest does
// (ReadManifest). An accepted manifest must encode (Marshal) to JSON that
// reads back valid, encodes to the same bytes and decodes to the same
// value again: what a backup writes is what every reader reads.
func FuzzManifest(f *testing.F) {
	f.Add(readGolden(f, "manifest-v1.golden.json"))
	compact, err := goldenManifest().MarshalCompact()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(compact)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m *Manifest
		var err error
		if grown := allocated(func() { m, err = ReadManifest(bytes.NewReader(data)) }); grown > allocBound(len(data)) {
			t.Fatalf("a %d-byte manifest allocated %d bytes reading it (%v)", len(data), grown, err)
		}
		if err != nil {
			return
		}
		b1, err := m.Marshal()
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		m2, err := ReadManifest(bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("an accepted manifest re-encodes to one refused: %v\n%s", err, b1)
		}
		b2, err := m2.Marshal()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("manifest encodes differently the second time (%v):\n%s\n%s", err, b1, b2)
		}
		// What an encoding decodes to is a fixed point (a first decode may
		// hold an empty map or list that omitempty leaves out).
		m3, err := ReadManifest(bytes.NewReader(b2))
		if err != nil || !reflect.DeepEqual(m3, m2) {
			t.Fatalf("manifest changed through an encoding (%v):\n got %+v\nwant %+v", err, m3, m2)
		}
	})
}

// jsonRoundTrip is the property of the JSON reports: an object that
// decodes into v (a fresh value from fresh) encodes to JSON that decodes
// to the same value and encodes to the same bytes again.
func jsonRoundTrip(t *testing.T, data []byte, fresh func() any) {
	v := fresh()
	var err error
	if grown := allocated(func() { err = json.Unmarshal(data, v) }); grown > allocBound(len(data)) {
		t.Fatalf("a %d-byte object allocated %d bytes decoding it (%v)", len(data), grown, err)
	}
	if err != nil {
		if JSONError(err) == nil {
			t.Fatal("JSONError lost the error")
		}
		return
	}
	b1, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("a decoded %T does not encode: %v", v, err)
	}
	v2 := fresh()
	if err := json.Unmarshal(b1, v2); err != nil {
		t.Fatalf("a %T re-encodes to JSON that does not decode: %v\n%s", v, err, b1)
	}
	b2, err := json.Marshal(v2)
	if err != nil || !bytes.Equal(b1, b2) {
		t.Fatalf("a %T encodes differently the second time (%v):\n%s\n%s", v, err, b1, b2)
	}
	// The decoded value of an encoding is a fixed point (the first decode
	// may hold an empty map that omitempty leaves out: {"filled": {}}).
	v3 := fresh()
	if err := json.Unmarshal(b2, v3); err != nil || !reflect.DeepEqual(v2, v3) {
		t.Fatalf("a %T changed through an encoding (%v):\n got %+v\nwant %+v", v, err, v3, v2)
	}
}

// FuzzRestoreReport: restores/<id>/report.json as repository.LoadReport
// decodes it.
func FuzzRestoreReport(f *testing.F) {
	f.Add(readGolden(f, "restore-report-v1.golden.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		jsonRoundTrip(t, data, func() any { return &RestoreReport{} })
	})
}

// FuzzRestoreJournal: restores/journals/<backup>/<cluster>.json as
// repository.LoadJournal decodes it.
func FuzzRestoreJournal(f *testing.F) {
	f.Add(readGolden(f, "restore-journal-v1.golden.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		jsonRoundTrip(t, data, func() any { return &RestoreJournal{} })
	})
}

// FuzzDrillReport: drills/<id>/report.json as repository.LoadDrillReport
// decodes it.
func FuzzDrillReport(f *testing.F) {
	rto := 12.5
	at := time.Date(2026, 11, 29, 7, 45, 12, 345000000, time.UTC)
	b, err := json.Marshal(&DrillReport{DrillID: "20261129T074512.345Z-9f3a01bc", ApplicationID: "order-processor",
		BackupID: "20261129T064512.345Z-0badf00d", RestoreID: "20261129T074612.345Z-0badf00d", Strategy: StrategyRebuild,
		StartedAt: at, LostAt: at, FinishedAt: at.Add(time.Minute), OK: true, RTODataRestored: &rto, RTOAppRunning: &rto,
		RecordsRestored: 10, ChangelogRecords: 4, InputRecords: 6, GroupType: "streams"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		jsonRoundTrip(t, data, func() any { return &DrillReport{} })
	})
}
