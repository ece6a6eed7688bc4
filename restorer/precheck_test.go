package restorer_test

import (
	"bytes"
	"context"
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
// and refuses, naming every damaged key, with nothing written.
func TestRestoreChecksTheBackupBeforeTheFirstWrite(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, store storage.Backend, m *format.Manifest) (keys []string)
		want   []string
	}{
		{"a flipped byte", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, _ := twoPartitionSegments(t, m)
			s := m.Topics[ti].PartitionCuts[a[0]].Segments[a[1]]
			b := getObject(t, store, s.Key)
			b[len(b)/2] ^= 0x40
			putObject(t, store, s.Key, b)
			return []string{s.Key}
		}, []string{"SHA-256"}},
		{"a flipped byte in the last segment of a changelog", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
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
		{"a missing segment and a flipped byte", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
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
		{"record counts that disagree", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
			ti, a, _ := twoPartitionSegments(t, m)
			p := &m.Topics[ti].PartitionCuts[a[0]]
			p.Segments[a[1]].Records--
			p.Records--
			putManifest(t, store, m)
			return []string{p.Segments[a[1]].Key}
		}, []string{"records, the manifest says"}},
		{"a segment swapped with another partition's, checksums too", func(t *testing.T, store storage.Backend, m *format.Manifest) []string {
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
			_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
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
