package repository_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

const (
	readerTopic  = "orders"
	readerBackup = "20261201T120000.000Z-0a0b0c0d"
)

// putSegment encodes recs (of one partition, offsets increasing) as one
// segment under the backup's key and returns its manifest entry.
func putSegment(t *testing.T, store storage.Backend, topic string, partition int32, recs []format.Record) format.Segment {
	t.Helper()
	var buf bytes.Buffer
	hw := format.NewHashingWriter(&buf)
	sw, err := format.NewSegmentWriter(hw, topic, partition)
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
	sum, size := hw.Sum()
	s := format.Segment{Key: format.SegmentKey(readerBackup, topic, partition, st.FirstOffset), BackupID: readerBackup,
		Size: size, SHA256: sum, RawSize: st.RawBytes, Records: st.Records, FirstOffset: st.FirstOffset, LastOffset: st.LastOffset,
		MinTimestamp: st.MinTimestamp, MaxTimestamp: st.MaxTimestamp, MaxRecordBytes: st.MaxRecordBytes, NullKeys: st.NullKeys}
	if err := store.Put(context.Background(), s.Key, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	return s
}

// putPartition writes partition p of topic as segments of 4 records each,
// offsets 10, 12, 14, ... (every other offset: a compacted log), timestamp
// 1000 + offset, and returns its manifest entry.
func putPartition(t *testing.T, store storage.Backend, topic string, p int32, segments int) format.Partition {
	t.Helper()
	part := format.Partition{Partition: p, StartOffset: 10, LogStartOffset: 10}
	off := int64(10)
	for range segments {
		var recs []format.Record
		for range 4 {
			recs = append(recs, format.Record{Partition: p, Offset: off, Timestamp: 1000 + off, Key: []byte{byte(p), byte(off)}, Value: []byte("v")})
			off += 2
		}
		s := putSegment(t, store, topic, p, recs)
		part.Segments = append(part.Segments, s)
		part.Records += s.Records
	}
	part.EndOffset, part.HighWatermark = off, off
	return part
}

func offsetsOf(t *testing.T, store storage.Backend, p *format.Partition, end int64) []int64 {
	t.Helper()
	var got []int64
	if err := repository.ReadPartition(context.Background(), store, readerTopic, p, end, func(r *format.Record) error {
		got = append(got, r.Offset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReadPartitionYieldsTheManifestsRecords: the records of every segment,
// in offset order, cut at an end offset; CountBelow and FirstAfter agree
// with them.
func TestReadPartitionYieldsTheManifestsRecords(t *testing.T) {
	store, _ := storage.NewFilesystem(t.TempDir())
	p := putPartition(t, store, readerTopic, 0, 3)
	var all []int64
	for o := int64(10); o < 34; o += 2 {
		all = append(all, o)
	}
	ctx := context.Background()
	for _, row := range []struct {
		name string
		end  int64
		want []int64
	}{
		{"no end", -1, all},
		{"end inside the second segment", 21, all[:6]},
		{"end at a segment's first offset", 18, all[:4]},
		{"end on a hole", 11, all[:1]},
		{"end before the first record", 5, nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			if got := offsetsOf(t, store, &p, row.end); !slices.Equal(got, row.want) {
				t.Errorf("offsets %v, want %v", got, row.want)
			}
			for _, o := range []int64{5, 10, 11, 18, 21, 33, 100} {
				n, err := repository.CountBelow(ctx, store, readerTopic, &p, o, row.end)
				var want int64
				for _, w := range row.want {
					if w < o {
						want++
					}
				}
				if err != nil || n != want {
					t.Errorf("CountBelow(%d, end %d) = %d, %v; want %d", o, row.end, n, err, want)
				}
			}
		})
	}
	var seen []int64
	err := repository.ReadPartition(ctx, store, readerTopic, &p, -1, func(r *format.Record) error {
		seen = append(seen, r.Offset)
		if r.Offset == 20 {
			return repository.ErrStopReading
		}
		return nil
	})
	if err != nil || !slices.Equal(seen, all[:6]) {
		t.Errorf("ErrStopReading at 20: offsets %v, err %v; want %v and no error", seen, err, all[:6])
	}
	for _, row := range []struct{ millis, want int64 }{{0, 10}, {1010, 12}, {1019, 20}, {1032, -1}} {
		if got, err := repository.FirstAfter(ctx, store, readerTopic, &p, row.millis); err != nil || got != row.want {
			t.Errorf("FirstAfter(%d) = %d, %v; want %d", row.millis, got, err, row.want)
		}
	}
	for _, s := range p.Segments {
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, s, repository.CheckRecords)
		if err != nil || len(c.Problems(s)) != 0 || !c.Complete || c.Records != 4 || c.Bytes != s.Size {
			t.Errorf("CheckSegment(%s): %+v, %v; want an intact segment", s.Key, c, err)
		}
	}
}

// TestReadPartitionFindsDamage: each kind of damage to a segment is a
// *SegmentError naming it (never a storage failure), no record of a
// segment of another partition is handed out, and CheckSegment's problems
// name the same damage, on the filesystem backend.
func TestReadPartitionFindsDamage(t *testing.T) {
	for _, row := range []struct {
		name string
		// damage changes the stored segment 1 of partition 0 (dir is the
		// store's root) or its manifest entry, and returns its key.
		damage      func(t *testing.T, dir string, p0, p1 *format.Partition) string
		read, check string // in the SegmentError's problem and in Problems
		shallow     string // in the shallow check's Problems ("" none)
		// header is in the header check's Problems ("" none): it finds
		// every storage fault and a header of another partition, not
		// records that differ from the manifest in bytes that match it.
		header string
	}{
		{"flipped byte", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			s := p0.Segments[1]
			path := filepath.Join(dir, s.Key)
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 0x20
			os.WriteFile(path, b, 0o600)
			return s.Key
		}, "does not decode", "SHA-256", "SHA-256", "SHA-256"},
		{"truncated object", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			s := p0.Segments[1]
			path := filepath.Join(dir, s.Key)
			os.Truncate(path, s.Size/2)
			return s.Key
		}, "does not decode", "size", "size", "size"},
		// The header decodes, the object ends before the first record:
		// no "after offset -1" (a new user's report).
		{"cut before its first record", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			s := p0.Segments[1]
			path := filepath.Join(dir, s.Key)
			b, _ := os.ReadFile(path)
			zr, err := zstd.NewReader(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			raw, err := zr.DecodeAll(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			zw, _ := zstd.NewWriter(nil)
			header := 8 + 2 + len(readerTopic) + 4 // magic, topic length and name, partition
			os.WriteFile(path, zw.EncodeAll(raw[:header], nil), 0o600)
			zw.Close()
			return s.Key
		}, "does not decode before its first record", "size", "size", "size"},
		{"missing segment", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			os.Remove(filepath.Join(dir, p0.Segments[1].Key))
			return p0.Segments[1].Key
		}, "missing", "missing", "missing", "missing"},
		{"segment of another partition, checksums swapped too", func(t *testing.T, dir string, p0, p1 *format.Partition) string {
			a, c := &p0.Segments[1], &p1.Segments[1]
			ba, _ := os.ReadFile(filepath.Join(dir, a.Key))
			bc, _ := os.ReadFile(filepath.Join(dir, c.Key))
			os.WriteFile(filepath.Join(dir, a.Key), bc, 0o600)
			os.WriteFile(filepath.Join(dir, c.Key), ba, 0o600)
			a.Size, c.Size = c.Size, a.Size
			a.SHA256, c.SHA256 = c.SHA256, a.SHA256
			return a.Key
		}, "a segment of another partition", "a segment of another partition", "", "a segment of another partition"},
		{"segments of one partition swapped, checksums swapped too", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			a, c := &p0.Segments[1], &p0.Segments[2]
			ba, _ := os.ReadFile(filepath.Join(dir, a.Key))
			bc, _ := os.ReadFile(filepath.Join(dir, c.Key))
			os.WriteFile(filepath.Join(dir, a.Key), bc, 0o600)
			os.WriteFile(filepath.Join(dir, c.Key), ba, 0o600)
			a.Size, c.Size = c.Size, a.Size
			a.SHA256, c.SHA256 = c.SHA256, a.SHA256
			return a.Key
		}, "holds offsets 26..32, the manifest says 18..24", "holds offsets 26..32, the manifest says 18..24", "", ""},
		{"other record count in the manifest", func(t *testing.T, dir string, p0, _ *format.Partition) string {
			p0.Segments[1].Records = 5
			return p0.Segments[1].Key
		}, "decodes to 4 records, the manifest says 5", "decodes to 4 records, the manifest says 5", "", ""},
	} {
		t.Run(row.name, func(t *testing.T) {
			dir := t.TempDir()
			store, _ := storage.NewFilesystem(dir)
			ctx := context.Background()
			p0 := putPartition(t, store, readerTopic, 0, 3)
			p1 := putPartition(t, store, readerTopic, 1, 3)
			key := row.damage(t, dir, &p0, &p1)

			var got []format.Record
			err := repository.ReadPartition(ctx, store, readerTopic, &p0, -1, func(r *format.Record) error {
				got = append(got, *r)
				return nil
			})
			se, ok := errors.AsType[*repository.SegmentError](err)
			if !ok || se.Key != key || se.Topic != readerTopic || se.Partition != 0 || !strings.Contains(se.Problem, row.read) {
				t.Fatalf("ReadPartition: %v; want a *SegmentError for %s saying %q", err, key, row.read)
			}
			if !errors.Is(err, repository.ErrSegmentDamaged) || storage.IsTransient(err) || errors.Is(err, storage.ErrNotFound) {
				t.Errorf("ReadPartition: %v is not damage only", err)
			}
			for _, r := range got {
				if r.Partition != 0 || r.Key[0] != 0 {
					t.Errorf("a record of partition %d was handed out: %+v", r.Key[0], r)
				}
			}
			if len(got) < 4 {
				t.Errorf("%d records before the damaged segment, want the first segment's 4", len(got))
			}
			s := p0.Segments[1]
			c, err := repository.CheckSegment(ctx, store, readerTopic, 0, s, repository.CheckRecords)
			if err != nil || !strings.Contains(strings.Join(c.Problems(s), "; "), row.check) {
				t.Errorf("deep CheckSegment: %v, problems %q; want %q", err, c.Problems(s), row.check)
			}
			c, err = repository.CheckSegment(ctx, store, readerTopic, 0, s, repository.CheckBytes)
			problems := strings.Join(c.Problems(s), "; ")
			if err != nil || (row.shallow == "") != (problems == "") || !strings.Contains(problems, row.shallow) {
				t.Errorf("shallow CheckSegment: %v, problems %q; want %q", err, problems, row.shallow)
			}
			c, err = repository.CheckSegment(ctx, store, readerTopic, 0, s, repository.CheckHeader)
			problems = strings.Join(c.Problems(s), "; ")
			if err != nil || (row.header == "") != (problems == "") || !strings.Contains(problems, row.header) {
				t.Errorf("header CheckSegment: %v, problems %q; want %q", err, problems, row.header)
			}
			// An end before the damaged segment does not read it.
			if got := offsetsOf(t, store, &p0, s.FirstOffset); len(got) != 4 {
				t.Errorf("end %d: %d records, want 4 (the damaged segment is not read)", s.FirstOffset, len(got))
			}
		})
	}
}

// TestReadSegmentOnS3: on versitygw a byte flipped in the stored object is
// damage (the store's own checksum, storage.ErrCorrupt), and a store that
// keeps failing is a transient storage failure, never damage.
func TestReadSegmentOnS3(t *testing.T) {
	srv := testkit.StartS3(t)
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	srv.SetEnv(t)
	ctx := context.Background()
	store, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Prefix: "repo", Region: srv.Region, Endpoint: proxy.Endpoint,
		PathStyle: true, RequestTimeout: 500 * time.Millisecond, RetryTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := putPartition(t, store, readerTopic, 0, 2)
	if got := offsetsOf(t, store, &p, -1); len(got) != 8 {
		t.Fatalf("intact partition: %d records, want 8", len(got))
	}

	t.Run("store fails", func(t *testing.T) {
		proxy.Fault(testkit.Fault{Method: "GET", PathContains: "segments/", Action: testkit.FaultStatus500})
		defer proxy.Clear()
		err := repository.ReadPartition(ctx, store, readerTopic, &p, -1, func(*format.Record) error { return nil })
		if !storage.IsTransient(err) || errors.Is(err, repository.ErrSegmentDamaged) || !strings.Contains(err.Error(), p.Segments[0].Key) {
			t.Errorf("ReadPartition: %v; want a transient storage error naming %s", err, p.Segments[0].Key)
		}
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, p.Segments[0], repository.CheckRecords)
		if !storage.IsTransient(err) || c.Missing || c.Opened {
			t.Errorf("CheckSegment: %v %+v; want a transient storage error", err, c)
		}
	})
	t.Run("body cut short", func(t *testing.T) {
		proxy.Fault(testkit.Fault{Method: "GET", PathContains: "segments/", Ranged: true, Action: testkit.FaultTruncate})
		defer proxy.Clear()
		err := repository.ReadPartition(ctx, store, readerTopic, &p, -1, func(*format.Record) error { return nil })
		if !storage.IsTransient(err) || errors.Is(err, repository.ErrSegmentDamaged) {
			t.Errorf("ReadPartition: %v; want a transient storage error", err)
		}
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, p.Segments[0], repository.CheckRecords)
		if !storage.IsTransient(err) || len(c.Problems(p.Segments[0])) == 0 && c.Complete {
			t.Errorf("CheckSegment: %v %+v; want a transient storage error", err, c)
		}
	})
	t.Run("byte flipped in the store", func(t *testing.T) {
		s := p.Segments[1]
		path := filepath.Join(srv.Dir, srv.Bucket, "repo", filepath.FromSlash(s.Key))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		err = repository.ReadPartition(ctx, store, readerTopic, &p, -1, func(*format.Record) error { return nil })
		se, ok := errors.AsType[*repository.SegmentError](err)
		if !ok || se.Key != s.Key || storage.IsTransient(err) {
			t.Errorf("ReadPartition: %v; want a *SegmentError for %s", err, s.Key)
		}
		c, err := repository.CheckSegment(ctx, store, readerTopic, 0, s, repository.CheckRecords)
		if err != nil || len(c.Problems(s)) == 0 {
			t.Errorf("CheckSegment: %v, problems %q; want damage", err, c.Problems(s))
		}
	})
}
