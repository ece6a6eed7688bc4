package restorer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func getObject(t *testing.T, store storage.Backend, key string) []byte {
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

func putObject(t *testing.T, store storage.Backend, key string, b []byte) {
	t.Helper()
	if err := store.Put(context.Background(), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

func putManifest(t *testing.T, store storage.Backend, m *format.Manifest) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, store, format.ManifestKey(m.BackupID), b)
}

// lastPartitionSegment returns the manifest's last topic with two
// partitions that have segments, and one segment of each.
func twoPartitionSegments(t *testing.T, m *format.Manifest) (topic int, a, b [2]int) {
	t.Helper()
	for ti := len(m.Topics) - 1; ti >= 0; ti-- {
		var found [][2]int
		for pi, p := range m.Topics[ti].PartitionCuts {
			for si, s := range p.Segments {
				if s.Records >= 2 {
					found = append(found, [2]int{pi, si})
					break
				}
			}
		}
		if len(found) >= 2 {
			return ti, found[0], found[len(found)-1]
		}
	}
	t.Fatal("the sample backup has no topic with two partitions of segments with 2 records")
	return
}

// TestRestoreChecksTheBackupBeforeTheFirstWrite is a regression test
// (issue 9): a flipped byte, a missing segment, a manifest whose record
// counts disagree, or a segment swapped with another partition's (its
// checksum swapped with it) was found only after thousands of records were
// written, leaving a half-restored target and a "run the same command
// again" hint that cannot succeed. The restore reads every segment first
// and refuses, naming every damaged key, with nothing written. Storage
// faults are refused under the default pre-check (digest: size, SHA-256
// and header); records that disagree with a manifest whose bytes match
// them under --precheck deep (TestDigestPrecheckLeavesRecordsToTheRestoresRead
// has the default's outcome).
func TestRestoreChecksTheBackupBeforeTheFirstWrite(t *testing.T) {
	tests := []struct {
		name     string
		precheck restorer.Precheck // "": the default (digest)
		damage   func(t *testing.T, store storage.Backend, m *format.Manifest) (keys []string)
		want     []string
	}{
		{"a flipped byte", "", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, _ := twoPartitionSegments(t, m)
			s := m.Topics[ti].PartitionCuts[a[0]].Segments[a[1]]
			b := getObject(t, store, s.Key)
			b[len(b)/2] ^= 0x40
			putObject(t, store, s.Key, b)
			return []string{s.Key}
		}, []string{"SHA-256"}},
		{"a flipped byte in the last segment of a changelog", "", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			for _, tp := range m.Topics {
				if tp.Class != "changelog" {
					continue
				}
				for _, p := range tp.PartitionCuts {
					if n := len(p.Segments); n > 0 {
						s := p.Segments[n-1]
						b := getObject(t, store, s.Key)
						b[len(b)/2] ^= 0x01
						putObject(t, store, s.Key, b)
						return []string{s.Key}
					}
				}
			}
			t.Fatal("no changelog segment in the sample backup")
			return nil
		}, []string{"SHA-256"}},
		{"a missing segment and a flipped byte", "", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, c := twoPartitionSegments(t, m)
			s := m.Topics[ti].PartitionCuts[a[0]].Segments[a[1]]
			if err := store.Delete(context.Background(), s.Key); err != nil {
				t.Fatal(err)
			}
			s2 := m.Topics[ti].PartitionCuts[c[0]].Segments[c[1]]
			b := getObject(t, store, s2.Key)
			b[len(b)-3] ^= 0x01
			putObject(t, store, s2.Key, b)
			return []string{s.Key, s2.Key}
		}, []string{"missing", "SHA-256"}},
		{"a truncated segment", "", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, _ := twoPartitionSegments(t, m)
			s := m.Topics[ti].PartitionCuts[a[0]].Segments[a[1]]
			b := getObject(t, store, s.Key)
			putObject(t, store, s.Key, b[:len(b)/2])
			return []string{s.Key}
		}, []string{"size", "SHA-256"}},
		{"record counts that disagree, --precheck deep", restorer.PrecheckDeep, func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, _ := twoPartitionSegments(t, m)
			p := &m.Topics[ti].PartitionCuts[a[0]]
			p.Segments[a[1]].Records--
			p.Records--
			putManifest(t, store, m)
			return []string{p.Segments[a[1]].Key}
		}, []string{"records, the manifest says"}},
		{"a segment swapped with another partition's, checksums too", "", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, c := twoPartitionSegments(t, m)
			sa := &m.Topics[ti].PartitionCuts[a[0]].Segments[a[1]]
			sc := &m.Topics[ti].PartitionCuts[c[0]].Segments[c[1]]
			ba, bc := getObject(t, store, sa.Key), getObject(t, store, sc.Key)
			putObject(t, store, sa.Key, bc)
			putObject(t, store, sc.Key, ba)
			sa.Size, sc.Size = sc.Size, sa.Size
			sa.SHA256, sc.SHA256 = sc.SHA256, sa.SHA256
			sa.RawSize, sc.RawSize = sc.RawSize, sa.RawSize
			putManifest(t, store, m)
			return []string{sa.Key, sc.Key}
		}, []string{"a segment of another partition"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, store, m := backedUpSample(t)
			keys := tc.damage(t, store, m)
			dst := testkit.StartKfake(t, 3)
			_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Precheck: tc.precheck})
			de, ok := errors.AsType[*restorer.DamageError](err)
			if !ok {
				t.Fatalf("err = %v; want a *restorer.DamageError", err)
			}
			if de.Written || !errors.Is(err, restorer.ErrNothingWritten) {
				t.Errorf("the damage error says something was written: %v", err)
			}
			if len(de.Damaged) != len(keys) {
				t.Errorf("%d damaged objects named, want %d: %v", len(de.Damaged), len(keys), err)
			}
			for _, k := range keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("the error does not name damaged segment %s: %v", k, err)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			if topics, _ := testkit.Admin(t, dst.Addrs()).ListTopics(context.Background()); len(topics) != 0 {
				t.Fatalf("the restore of a damaged backup created topics: %v", topics.Names())
			}
		})
	}
}

// rewriteWithoutLastRecord rewrites segment s (a record segment of topic
// and partition) without its last record and sets its manifest entry's
// size and SHA-256 to the new bytes, leaving its record count and offsets
// as they were: a writer's fault (the stored bytes are what the manifest
// says, the records are not), not storage damage.
func rewriteWithoutLastRecord(t *testing.T, store storage.Backend, topic string, partition int32, s *format.Segment) {
	t.Helper()
	var recs []format.Record
	if _, _, _, err := format.ReadSegment(bytes.NewReader(getObject(t, store, s.Key)), func(r *format.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	sw, err := format.NewSegmentWriter(&buf, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs[:len(recs)-1] {
		if err := sw.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	putObject(t, store, s.Key, buf.Bytes())
	sum := sha256.Sum256(buf.Bytes())
	s.SHA256, s.Size = hex.EncodeToString(sum[:]), int64(buf.Len())
}

// writersFault rewrites one segment of the sample backup with one record
// fewer than its manifest entry says, its size and SHA-256 updated in the
// manifest, and returns its key.
func writersFault(t *testing.T, store storage.Backend, m *format.Manifest) string {
	t.Helper()
	ti, a, _ := twoPartitionSegments(t, m)
	p := &m.Topics[ti].PartitionCuts[a[0]]
	s := &p.Segments[a[1]]
	rewriteWithoutLastRecord(t, store, m.Topics[ti].Name, p.Partition, s)
	putManifest(t, store, m)
	return s.Key
}

// TestDigestPrecheckLeavesRecordsToTheRestoresRead: the default pre-check
// (digest) reads every object and checks its size, SHA-256 and header, not
// its records (issue 13: no decode done twice). A segment whose bytes are
// what the manifest says but whose records are not (a writer's fault) is
// then found by the restore's own read at its trailer: a *DamageError
// naming it, with Written true (exit 1, as for an object changed after the
// pre-check). --precheck deep refuses it before the first write.
func TestDigestPrecheckLeavesRecordsToTheRestoresRead(t *testing.T) {
	_, store, m := backedUpSample(t)
	key := writersFault(t, store, m)
	dst := testkit.StartKfake(t, 3)
	_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
	de, ok := errors.AsType[*restorer.DamageError](err)
	if !ok {
		t.Fatalf("err = %v; want a *restorer.DamageError", err)
	}
	if !de.Written || errors.Is(err, restorer.ErrNothingWritten) {
		t.Errorf("the default pre-check refused a writer's fault before the first write (it decoded the records): %v", err)
	}
	if len(de.Damaged) != 1 || de.Damaged[0].Key != key || !strings.Contains(de.Damaged[0].Problem, "records, the manifest says") {
		t.Errorf("damage %+v, want %s with its record count", de.Damaged, key)
	}
	if de.BackupID != m.BackupID {
		t.Errorf("the damage error names backup %q, want %q", de.BackupID, m.BackupID)
	}

	t.Run("--precheck deep refuses it before the first write", func(t *testing.T) {
		dst := testkit.StartKfake(t, 3)
		_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Precheck: restorer.PrecheckDeep})
		de, ok := errors.AsType[*restorer.DamageError](err)
		if !ok || de.Written || !errors.Is(err, restorer.ErrNothingWritten) {
			t.Fatalf("err = %v; want a *restorer.DamageError before the first write", err)
		}
		if len(de.Damaged) != 1 || de.Damaged[0].Key != key || !strings.Contains(de.Damaged[0].Problem, "records, the manifest says") {
			t.Errorf("damage %+v, want %s with its record count", de.Damaged, key)
		}
		if topics, _ := testkit.Admin(t, dst.Addrs()).ListTopics(context.Background()); len(topics) != 0 {
			t.Errorf("the deep pre-check let the restore create topics: %v", topics.Names())
		}
	})
}

// TestUnknownPrecheckIsRefused: a pre-check other than digest or deep is
// refused before anything is read or written, naming the values accepted.
func TestUnknownPrecheckIsRefused(t *testing.T) {
	store, _ := storage.NewFilesystem(t.TempDir())
	_, err := restorer.Run(context.Background(), restorer.Options{Store: store, Precheck: "shallow"})
	if _, ok := errors.AsType[*restorer.RefusedError](err); !ok || !strings.Contains(err.Error(), `"shallow"`) || !strings.Contains(err.Error(), "digest or deep") {
		t.Fatalf("err = %v (%T); want a *restorer.RefusedError naming the values", err, err)
	}
	for in, want := range map[string]restorer.Precheck{"": restorer.PrecheckDigest, "digest": restorer.PrecheckDigest, "DEEP": restorer.PrecheckDeep} {
		if got, err := restorer.ParsePrecheck(in); err != nil || got != want {
			t.Errorf("ParsePrecheck(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := restorer.ParsePrecheck("full"); err == nil || !strings.Contains(err.Error(), "digest") || !strings.Contains(err.Error(), "deep") {
		t.Errorf("ParsePrecheck(full): %v; want an error naming digest and deep", err)
	}
}
