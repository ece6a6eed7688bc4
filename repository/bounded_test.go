package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// largeManifest is a manifest as the backup writes it: topics of
// partitions partitions, each with segments segments and a group offset.
func largeManifest(t *testing.T, topics, partitions, segments int) (string, []byte) {
	t.Helper()
	now := time.Now().UTC()
	id := format.NewBackupID(now, [4]byte{1, 2, 3, 4})
	m := &format.Manifest{Format: format.FormatName, FormatVersion: format.Version, State: format.StateComplete, BackupID: id,
		StartedAt: now, CutAt: now, FinishedAt: now, Group: &format.Group{GroupID: "order-processor", ReadAt: now}}
	for ti := range topics {
		name := fmt.Sprintf("order-processor-KSTREAM-AGGREGATE-STATE-STORE-%010d-changelog", ti)
		policy, retention := "compact", "604800000"
		tp := format.Topic{Name: name, Class: "changelog", Partitions: partitions, ReplicationFactor: 3, Configs: map[string]format.TopicConfig{
			"cleanup.policy": {Value: &policy, Source: "DYNAMIC_TOPIC_CONFIG"}, "retention.ms": {Value: &retention, Source: "DYNAMIC_TOPIC_CONFIG"}}}
		for p := range partitions {
			n := int64(segments) * 1_000_000
			pc := format.Partition{Partition: int32(p), HighWatermark: n, EndOffset: n, Records: n}
			m.Group.Offsets = append(m.Group.Offsets, format.GroupOffset{Topic: name, Partition: int32(p), Offset: n / 2})
			for s := range segments {
				first := int64(s) * 1_000_000
				pc.Segments = append(pc.Segments, format.Segment{Key: format.SegmentKey(id, name, int32(p), first), BackupID: id, Size: 12_345_678,
					SHA256: strings.Repeat("ab", 32), RawSize: 64 << 20, Records: 1_000_000, FirstOffset: first, LastOffset: first + 999_999,
					MinTimestamp: now.UnixMilli(), MaxTimestamp: now.UnixMilli(), MaxRecordBytes: 1024})
			}
			tp.PartitionCuts = append(tp.PartitionCuts, pc)
		}
		m.Topics = append(m.Topics, tp)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return id, b
}

// allocated returns the bytes fn allocates (runtime.MemStats.TotalAlloc).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadsOfJSONObjectsAreBoundedBySize is a regression test (issue 14):
// a 1.2 MB manifest of 300,000 empty topics made LoadManifest allocate
// 240 MB (Go's decoder allocates a format.Topic and the slice's growth for
// each "{}"), and a manifest had no size limit. Every JSON object the
// repository layer reads (manifest, progress, restore report, restore
// journal, drill report) is now refused above MaxObjectBytes (lowered to
// 4 MiB here) or when it holds more than one object or array per 32
// bytes, naming the object, its size and the bound, and the allocation
// is measured: a refused object costs about its size; a manifest the
// backup writes is accepted and costs about 5 times its size; the densest
// accepted object at most 27 times its size and 3 MB (io.ReadAll's
// growth adds about 2 times the size to each).
func TestReadsOfJSONObjectsAreBoundedBySize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	saved := maxObjectBytes
	maxObjectBytes = 4 << 20
	t.Cleanup(func() { maxObjectBytes = saved })

	const id = "20261129T074512.345Z-9f3a01bc"
	head := `{"format": "kafkastreams-dr/backup", "format_version": 1, "state": "complete", "backup_id": "` + id + `", "topics": [`
	emptyTopics := head + strings.Repeat("{},", 300_000) + "{}]}"
	// One object per 33 bytes: just within the density bound.
	densest := head + strings.Repeat(`{"name":"t-000000000000000000000"},`, 100_000) + "{}]}"
	over := head + strings.Repeat(`{"name":"t-000000000000000000000000000000000000000000000000000000"},`, 5<<20/70) + "{}]}"
	realID, real := largeManifest(t, 1, 2000, 1) // the benchmarks' 2,000 partitions

	put := func(key string, b []byte) {
		t.Helper()
		if err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	manifest := format.ManifestKey(id)
	loadManifest := func() error { _, err := LoadManifest(ctx, store, manifest); return err }
	for _, tc := range []struct {
		name    string
		key     string
		object  []byte
		load    func() error
		refused []string // what the error names; nil: accepted
		kind    error    // the error's kind when refused
		bound   func(size int) uint64
	}{
		{"manifest of 300,000 empty topics", manifest, []byte(emptyTopics), loadManifest,
			[]string{manifest, fmt.Sprintf("JSON objects and arrays in %d bytes, one per 3.0 bytes", len(emptyTopics)), "one per 32 bytes"}, ErrDamaged, func(n int) uint64 { return 4*uint64(n) + 1<<20 }},
		{"manifest above the size bound", manifest, []byte(over), loadManifest,
			[]string{manifest, fmt.Sprintf("is %d bytes, above the 4194304 bytes (4 MiB)", len(over))}, ErrDamaged, func(int) uint64 { return 3*4<<20 + 1<<20 }},
		{"progress of 300,000 empty topics", format.ProgressKey(id), []byte(emptyTopics), func() error { _, err := LoadManifest(ctx, store, format.ProgressKey(id)); return err },
			[]string{format.ProgressKey(id), "one per 32 bytes"}, ErrDamaged, func(n int) uint64 { return 4*uint64(n) + 1<<20 }},
		{"restore report of 300,000 empty objects", format.RestoreReportKey(id), []byte(`{"partitions": [` + strings.Repeat("{},", 300_000) + "{}]}"),
			func() error { _, err := LoadReport(ctx, store, id); return err },
			[]string{format.RestoreReportKey(id), "one per 32 bytes"}, ErrUnreadableReport, func(n int) uint64 { return 4*uint64(n) + 1<<20 }},
		{"restore journal of 300,000 empty objects", format.RestoreJournalKey(id, "cluster"), []byte(`{"topics": {}, "x": [` + strings.Repeat("{},", 300_000) + "{}]}"),
			func() error { _, err := LoadJournal(ctx, store, id, "cluster"); return err },
			[]string{format.RestoreJournalKey(id, "cluster"), "one per 32 bytes"}, ErrObjectTooLarge, func(n int) uint64 { return 4*uint64(n) + 1<<20 }},
		{"drill report of 300,000 empty objects", format.DrillReportKey(id), []byte(`{"phases": [` + strings.Repeat("{},", 300_000) + "{}]}"),
			func() error { _, err := LoadDrillReport(ctx, store, id); return err },
			[]string{format.DrillReportKey(id), "one per 32 bytes"}, ErrUnreadableDrillReport, func(n int) uint64 { return 4*uint64(n) + 1<<20 }},
		{"densest manifest within the bounds", manifest, []byte(densest), loadManifest,
			nil, nil, func(n int) uint64 { return 27*uint64(n) + 3<<20 }},
		{"manifest of 2,000 partitions as the backup writes it", format.ManifestKey(realID), real, func() error { _, err := LoadManifest(ctx, store, format.ManifestKey(realID)); return err },
			nil, nil, func(n int) uint64 { return 8 * uint64(n) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			put(tc.key, tc.object)
			var err error
			got := allocated(func() { err = tc.load() })
			t.Logf("%d bytes: %d bytes allocated (%.1f x), %v", len(tc.object), got, float64(got)/float64(len(tc.object)), err)
			if b := tc.bound(len(tc.object)); got > b {
				t.Errorf("%d bytes allocated, want at most %d", got, b)
			}
			switch {
			case tc.refused == nil && tc.name == "densest manifest within the bounds":
				// Read and decoded: Validate refuses its nameless topics.
				if err == nil || errors.Is(err, ErrObjectTooLarge) {
					t.Errorf("err = %v, want it decoded (and refused by Validate)", err)
				}
			case tc.refused == nil:
				if err != nil {
					t.Errorf("a manifest the backup writes: %v", err)
				}
			default:
				if !errors.Is(err, ErrObjectTooLarge) || !errors.Is(err, tc.kind) {
					t.Errorf("err = %v, want ErrObjectTooLarge and %v", err, tc.kind)
				}
				for _, w := range tc.refused {
					if err != nil && !strings.Contains(err.Error(), w) {
						t.Errorf("the error does not name %q: %v", w, err)
					}
				}
			}
		})
	}
}

// TestContainers pins the count readBounded bounds: '{' and '[' outside
// strings, escapes included.
func TestContainers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{`{}`, 1},
		{`[{},[],{"a":[1,2]}]`, 5},
		{`{"a":"{[{["}`, 1},
		{`{"a":"\"{[","b":{}}`, 2},
		{`{"a":"\\","b":{}}`, 2},
		{``, 0},
	} {
		if got := containers([]byte(tc.in)); got != tc.want {
			t.Errorf("containers(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
