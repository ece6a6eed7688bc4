package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// corruptRepo is a copy of the quickstart's repository (a directory of
// the test's own) to damage, its latest backup's manifest and the keys of
// two segments of different partitions.
type corruptRepo struct {
	dir      string
	m        *format.Manifest
	manifest string          // the manifest's key
	a, b     *format.Segment // two segments of different partitions of one topic
	topic    string
	part     int32 // a's partition
}

func copyRepo(t *testing.T, base string) *corruptRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil || m == nil {
		t.Fatalf("latest backup of the copy: %v", err)
	}
	r := &corruptRepo{dir: dir, m: m, manifest: format.ManifestKey(m.BackupID)}
	for ti := range m.Topics {
		tp := &m.Topics[ti]
		var segs []*format.Segment
		var parts []int32
		for pi := range tp.PartitionCuts {
			if p := &tp.PartitionCuts[pi]; len(p.Segments) > 0 {
				segs, parts = append(segs, &p.Segments[0]), append(parts, p.Partition)
			}
		}
		if len(segs) >= 2 {
			r.a, r.b, r.topic, r.part = segs[0], segs[1], tp.Name, parts[0]
			return r
		}
	}
	t.Fatal("the quickstart's backup has no topic with two partitions holding segments")
	return nil
}

func (r *corruptRepo) path(key string) string { return filepath.Join(r.dir, filepath.FromSlash(key)) }

func (r *corruptRepo) read(t *testing.T, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(r.path(key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *corruptRepo) write(t *testing.T, key string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(r.path(key)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path(key), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewriteManifest stores r.m again after edit changed it.
func (r *corruptRepo) rewriteManifest(t *testing.T, key string, edit func(m *format.Manifest)) {
	t.Helper()
	edit(r.m)
	b, err := r.m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, key, b)
}

// lengthAtExtreme is a record segment of topic and partition whose first
// record's key length says 1 GiB (the largest a reader accepts) and whose
// bytes end 16 bytes later: a 60-odd-byte object, one zstd frame whose
// checksum holds.
func lengthAtExtreme(t *testing.T, topic string, partition int32, offset int64) []byte {
	t.Helper()
	var raw bytes.Buffer
	be := func(v any) { _ = binary.Write(&raw, binary.BigEndian, v) }
	raw.WriteString("KDRSEG\x00\x01")
	be(int16(len(topic)))
	raw.WriteString(topic)
	be(partition)
	raw.WriteByte(1) // a record
	be(partition)
	be(offset)
	be(int64(1700000000000))
	raw.WriteByte(0)
	be(int32(1 << 30)) // the key's length
	raw.Write(make([]byte, 16))
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderCRC(true), zstd.WithWindowSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(raw.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestCorruptionIsRefusedBeforeTheFirstWrite is issue 14's corruption
// matrix: each kind of damage (a byte flipped, truncated, swapped with
// another object, a length field at its extreme) done to a segment and to
// a manifest of the quickstart's backup. verify --deep exits 2 naming the
// damaged object; restore exits 2 before its first write (the target
// cluster, a kfake, has no topic after it). A length field at its extreme
// is also read in-process with the allocation measured: bounded by the
// object, not by the field.
func TestCorruptionIsRefusedBeforeTheFirstWrite(t *testing.T) {
	base := embeddedRepository(t)
	for _, tc := range []struct {
		name string
		// damage damages r and returns the key verify and restore must name.
		damage func(t *testing.T, r *corruptRepo) string
		// deep: the damage passes every size and checksum (a writer's
		// fault or a forgery), only decoding the records finds it:
		// restore is given --precheck deep.
		deep bool
	}{
		{"segment: a byte flipped", func(t *testing.T, r *corruptRepo) string {
			b := r.read(t, r.a.Key)
			b[len(b)/2] ^= 0xff
			r.write(t, r.a.Key, b)
			return r.a.Key
		}, false},
		{"segment: truncated", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.a.Key, r.read(t, r.a.Key)[:r.a.Size/2])
			return r.a.Key
		}, false},
		{"segment: truncated to nothing", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.a.Key, nil)
			return r.a.Key
		}, false},
		{"segment: swapped with another partition's", func(t *testing.T, r *corruptRepo) string {
			a, b := r.read(t, r.a.Key), r.read(t, r.b.Key)
			r.write(t, r.a.Key, b)
			r.write(t, r.b.Key, a)
			return r.a.Key
		}, false},
		{"segment: swapped, its checksum and size swapped with it in the manifest", func(t *testing.T, r *corruptRepo) string {
			a, b := r.read(t, r.a.Key), r.read(t, r.b.Key)
			r.write(t, r.a.Key, b)
			r.write(t, r.b.Key, a)
			r.rewriteManifest(t, r.manifest, func(*format.Manifest) {
				r.a.Size, r.b.Size = r.b.Size, r.a.Size
				r.a.SHA256, r.b.SHA256 = r.b.SHA256, r.a.SHA256
			})
			return r.a.Key
		}, false},
		{"segment: a key length of 1 GiB (stored bytes damaged)", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.a.Key, lengthAtExtreme(t, r.topic, r.part, r.a.FirstOffset))
			return r.a.Key
		}, false},
		{"segment: a key length of 1 GiB, size and checksum in the manifest", func(t *testing.T, r *corruptRepo) string {
			b := lengthAtExtreme(t, r.topic, r.part, r.a.FirstOffset)
			r.write(t, r.a.Key, b)
			sum := sha256.Sum256(b)
			r.rewriteManifest(t, r.manifest, func(*format.Manifest) { r.a.Size, r.a.SHA256 = int64(len(b)), hex.EncodeToString(sum[:]) })
			return r.a.Key
		}, true},
		{"manifest: a byte flipped", func(t *testing.T, r *corruptRepo) string {
			b := r.read(t, r.manifest)
			i := len(b)/2 + bytes.IndexByte(b[len(b)/2:], ':')
			b[i] ^= 0x40 // ':' becomes 'z': no longer JSON
			r.write(t, r.manifest, b)
			return r.manifest
		}, false},
		{"manifest: truncated", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.manifest, r.read(t, r.manifest)[:len(r.read(t, r.manifest))/2])
			return r.manifest
		}, false},
		{"manifest: truncated to nothing", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.manifest, nil)
			return r.manifest
		}, false},
		{"manifest: swapped with another backup's", func(t *testing.T, r *corruptRepo) string {
			// A newer backup B, of the same segments: its manifest and
			// the latest's trade places, each under the other's key.
			a := r.read(t, r.manifest)
			older := r.m.BackupID
			newer := format.NextBackupID(time.Now(), older, [4]byte{0xb, 0xad, 0xf0, 0x0d})
			r.rewriteManifest(t, format.ManifestKey(older), func(m *format.Manifest) { m.BackupID = newer })
			r.write(t, format.ManifestKey(newer), a)
			return format.ManifestKey(newer)
		}, false},
		{"manifest: a partition's record count at int64's maximum", func(t *testing.T, r *corruptRepo) string {
			r.rewriteManifest(t, r.manifest, func(m *format.Manifest) { m.Topics[0].PartitionCuts[0].Records = math.MaxInt64 })
			return r.manifest
		}, false},
		{"manifest: a segment's size at int64's maximum", func(t *testing.T, r *corruptRepo) string {
			r.rewriteManifest(t, r.manifest, func(*format.Manifest) { r.a.Size = math.MaxInt64 })
			return r.a.Key
		}, false},
		{"manifest: arrays nested 100,000 deep", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.manifest, []byte(`{"format": "kafkastreams-dr/backup", "topics": `+strings.Repeat("[", 100000)))
			return r.manifest
		}, false},
		{"manifest: 300,000 empty topics (1.2 MB decoding into 240 MB)", func(t *testing.T, r *corruptRepo) string {
			r.write(t, r.manifest, []byte(`{"format": "kafkastreams-dr/backup", "topics": [`+strings.Repeat("{},", 300000)+"{}]}"))
			return r.manifest
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := copyRepo(t, base)
			key := tc.damage(t, r)
			target := testkit.StartKfake(t, 3)
			cfg := restoreConfig(t, target.Addrs(), r.dir)

			code, stdout, stderr := runBounded(t, "--log-level", "error", "verify", "-c", cfg, "--deep")
			t.Logf("verify --deep: exit %d\n%s\n%s", code, stdout, stderr)
			if code != damageExitCode {
				t.Errorf("verify --deep: exit %d, want %d (damage)", code, damageExitCode)
			}
			if !strings.Contains(stdout+stderr, key) {
				t.Errorf("verify --deep does not name %s", key)
			}

			args := []string{"--log-level", "error", "restore", "-c", cfg, "--yes"}
			if tc.deep {
				args = append(args, "--precheck", "deep")
			}
			code, stdout, stderr = runBounded(t, args...)
			t.Logf("restore: exit %d\n%s\n%s", code, stdout, stderr)
			if code != damageExitCode {
				t.Errorf("restore: exit %d, want %d (refused before the first write)", code, damageExitCode)
			}
			if !strings.Contains(stderr, key) {
				t.Errorf("restore does not name %s", key)
			}
			topics, err := testkit.Admin(t, target.Addrs()).ListTopics(t.Context())
			if err != nil || len(topics) != 0 {
				t.Fatalf("after the refused restore the target has topics %v (%v)", topics.Names(), err)
			}
		})
	}
}

// TestCorruptLengthFieldsReadInBoundedMemory measures, in-process, what
// the repository's readers allocate on the length fields at their
// extremes of the corruption matrix: a 1 GiB key length in a segment of
// a few dozen bytes (CheckSegment decoding the records, as verify --deep
// and restore --precheck deep do; ReadSegment, as the restore does), a
// segment size of int64's maximum in the manifest, and a manifest nested
// 100,000 deep or holding 300,000 empty topics (LoadManifest reads the
// whole object, no more; what it allocates grows with the object, not
// with a count it claims).
func TestCorruptLengthFieldsReadInBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	seg := lengthAtExtreme(t, "orders", 0, 0)
	sum := sha256.Sum256(seg)
	const key = "segments/20261129T074512.345Z-9f3a01bc/orders/0/00000000000000000000.kseg"
	writeRepoObject(t, dir, key, string(seg))
	s := format.Segment{Key: key, Size: int64(len(seg)), SHA256: hex.EncodeToString(sum[:]), Records: 1, FirstOffset: 0, LastOffset: 0}
	measure := func(name string, bound uint64, fn func() error) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := fn()
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes allocated (%v)", name, got, err)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if got > bound {
			t.Errorf("%s: %d bytes allocated, want at most %d", name, got, bound)
		}
	}
	// One zstd window (1 MiB) and the readers' buffers.
	const segBound = 8 << 20
	measure("CheckSegment of a 1 GiB key length", segBound, func() error {
		c, err := repository.CheckSegment(ctx, store, "orders", 0, s, repository.CheckRecords)
		if err != nil {
			return err
		}
		if p := c.Problems(s); len(p) > 0 {
			return errorString(strings.Join(p, "; "))
		}
		return nil
	})
	measure("ReadSegment of a 1 GiB key length", segBound, func() error {
		return repository.ReadSegment(ctx, store, "orders", 0, s, 1, func(*format.Record) error { return nil })
	})
	huge := s
	huge.Size = math.MaxInt64
	measure("CheckSegment of a size of int64's maximum", segBound, func() error {
		c, err := repository.CheckSegment(ctx, store, "orders", 0, huge, repository.CheckBytes)
		if err != nil {
			return err
		}
		if p := c.Problems(huge); len(p) > 0 {
			return errorString(strings.Join(p, "; "))
		}
		return nil
	})

	const mkey = "backups/20261129T074512.345Z-9f3a01bc/manifest.json"
	head := `{"format": "kafkastreams-dr/backup", "format_version": 1, "state": "complete", "backup_id": "20261129T074512.345Z-9f3a01bc", "topics": `
	nested := head + strings.Repeat("[", 100000)
	writeRepoObject(t, dir, mkey, nested)
	measure("LoadManifest nested 100,000 deep", 16<<20, func() error {
		_, err := repository.LoadManifest(ctx, store, mkey)
		return err
	})
	// 300,000 topics without a name: a 1 MiB object. Go's decoder held
	// each as a format.Topic (240 MB); it is refused before it is decoded
	// (repository.readBounded): what is allocated is the object read.
	wide := head + "[" + strings.Repeat("{},", 300000) + "{}]}"
	writeRepoObject(t, dir, mkey, wide)
	measure("LoadManifest of 300,000 empty topics", 1<<20+4*uint64(len(wide)), func() error {
		_, err := repository.LoadManifest(ctx, store, mkey)
		return err
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }
