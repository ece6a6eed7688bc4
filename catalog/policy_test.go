package catalog_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// base is the time of the first backup of a crafted repository; backup i
// starts i days later.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func dayID(day int) string {
	return format.NewBackupID(base.Add(time.Duration(day)*24*time.Hour), [4]byte{0, 0, 0, byte(day)})
}

// craft writes a manifest (state complete or running) of backup day whose
// one partition holds one record per named segment, and the segments.
func craft(t *testing.T, store storage.Backend, day int, state string, segs ...string) {
	t.Helper()
	id := dayID(day)
	at := base.Add(time.Duration(day) * 24 * time.Hour)
	p := format.Partition{EndOffset: int64(len(segs)), Records: int64(len(segs))}
	for i, k := range segs {
		p.Segments = append(p.Segments, format.Segment{Key: k, BackupID: strings.Split(k, "/")[1], Size: 1, Records: 1,
			FirstOffset: int64(i), LastOffset: int64(i)})
		put(t, store, k, []byte("x"))
	}
	m := &format.Manifest{Format: format.FormatName, FormatVersion: 1, State: state, BackupID: id, StartedAt: at, CutAt: at,
		Topics: []format.Topic{{Name: "t", Class: "external", Partitions: 1, PartitionCuts: []format.Partition{p}}}}
	key := format.ProgressKey(id)
	if state == format.StateComplete {
		m.FinishedAt = at.Add(time.Minute)
		key = format.ManifestKey(id)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	put(t, store, key, b)
}

// tailSeg is the segment of backup day's in-flight tail of a repartition topic.
func tailSeg(day int) string { return format.SegmentKey(dayID(day), "app-x-repartition", 0, 5) }

// craftInFlight writes a complete manifest of backup day whose one topic
// partition holds segment topicSeg and whose in-flight tail
// (Manifest.InFlight) holds segment tail.
func craftInFlight(t *testing.T, store storage.Backend, day int, topicSeg, tail string) {
	t.Helper()
	id := dayID(day)
	at := base.Add(time.Duration(day) * 24 * time.Hour)
	one := func(k string, off int64) format.Partition {
		put(t, store, k, []byte("x"))
		return format.Partition{StartOffset: off, EndOffset: off + 1, Records: 1,
			Segments: []format.Segment{{Key: k, BackupID: id, Size: 1, Records: 1, FirstOffset: off, LastOffset: off}}}
	}
	m := &format.Manifest{Format: format.FormatName, FormatVersion: 1, State: format.StateComplete, BackupID: id, StartedAt: at, CutAt: at,
		FinishedAt: at.Add(time.Minute),
		Topics:     []format.Topic{{Name: "t", Class: "external", Partitions: 1, PartitionCuts: []format.Partition{one(topicSeg, 0)}}},
		InFlight:   []format.Topic{{Name: "app-x-repartition", Class: "repartition", Partitions: 1, PartitionCuts: []format.Partition{one(tail, 5)}}}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	put(t, store, format.ManifestKey(id), b)
}

func seg(day, n int) string { return format.SegmentKey(dayID(day), "t", 0, int64(n)) }

// TestPrunePolicy: which backups each policy keeps and which objects go,
// on crafted repositories (no cluster).
func TestPrunePolicy(t *testing.T) {
	// Days 0..4 complete, each naming the segments of all earlier days
	// (one chain); day 5 running; an orphan segment of day 1.
	chainRepo := func(t *testing.T, store storage.Backend) {
		var segs []string
		for d := range 5 {
			segs = append(segs, seg(d, d))
			craft(t, store, d, format.StateComplete, segs...)
		}
		craft(t, store, 5, format.StateRunning, append(slices.Clone(segs), seg(5, 5))...)
		put(t, store, seg(1, 99), []byte("orphan"))
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T, store storage.Backend)
		opts      catalog.PruneOptions
		err       error
		kept      []int    // days whose manifest (or progress) stays
		gone      []string // keys deleted
		stay      []string // keys kept
		forgotten int
	}{
		{name: "keep-last 2 keeps the chain's segments", setup: chainRepo, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 2}},
			kept: []int{5, 4, 3}, gone: []string{format.ManifestKey(dayID(0)), seg(1, 99)},
			stay: []string{seg(0, 0), seg(4, 4), seg(5, 5), format.ProgressKey(dayID(5))}, forgotten: 3},
		{name: "keep-within counts back from the newest backup, finished time", setup: chainRepo,
			opts: catalog.PruneOptions{Policy: catalog.Policy{Within: catalog.Duration{Hours: 36}}},
			kept: []int{5, 4, 3}, forgotten: 3},
		{name: "both rules: the union", setup: chainRepo,
			opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 3, Within: catalog.Duration{Hours: 1}}, Now: base.Add(365 * 24 * time.Hour)},
			kept: []int{5, 4, 3, 2}, forgotten: 2},
		{name: "keep-within counts from the newest backup, not now: a year without backups forgets nothing more", setup: chainRepo,
			opts: catalog.PruneOptions{Policy: catalog.Policy{Within: catalog.Duration{Hours: 1}}, Now: base.Add(365 * 24 * time.Hour)},
			kept: []int{5, 4}, forgotten: 4, stay: []string{seg(0, 0)}},
		{name: "segments only a forgotten backup names go", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craft(t, store, 1, format.StateComplete, seg(1, 0)) // a new chain: day 0's segment is not named
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 1}}, kept: []int{1}, gone: []string{seg(0, 0)}, stay: []string{seg(1, 0)}, forgotten: 1},
		{name: "abandoned progress and its own segments go; a newer id's segments stay", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craft(t, store, 1, format.StateRunning, seg(0, 0), seg(1, 1)) // abandoned: older than day 2
			craft(t, store, 2, format.StateComplete, seg(0, 0), seg(2, 1))
			put(t, store, seg(9, 0), []byte("a run newer than every manifest")) // no manifest yet
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 5}}, kept: []int{2, 0},
			gone: []string{format.ProgressKey(dayID(1)), seg(1, 1)}, stay: []string{seg(0, 0), seg(9, 0)}},
		{name: "a progress.json left next to its manifest goes", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craft(t, store, 0, format.StateRunning, seg(0, 0))
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 1}}, kept: []int{0}, gone: []string{format.ProgressKey(dayID(0))}, stay: []string{seg(0, 0)}},
		{name: "an unreadable kept manifest refuses the prune", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craft(t, store, 1, format.StateComplete, seg(1, 0))
			put(t, store, format.ManifestKey(dayID(1)), []byte(`{"format":"kafkastreams-dr/backup","format_ver`))
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 1}}, err: catalog.ErrUnreadableKept, stay: []string{seg(0, 0), format.ManifestKey(dayID(0))}},
		{name: "an unreadable forgotten manifest goes", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craft(t, store, 1, format.StateComplete, seg(1, 0))
			put(t, store, format.ManifestKey(dayID(0)), []byte(`not json`))
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 1}}, kept: []int{1}, gone: []string{format.ManifestKey(dayID(0)), seg(0, 0)}, forgotten: 1},
		{name: "a kept backup's in-flight tail segments stay", setup: func(t *testing.T, store storage.Backend) {
			craft(t, store, 0, format.StateComplete, seg(0, 0))
			craftInFlight(t, store, 1, seg(1, 0), tailSeg(1))
		}, opts: catalog.PruneOptions{Policy: catalog.Policy{Last: 1}}, kept: []int{1}, gone: []string{seg(0, 0)}, stay: []string{seg(1, 0), tailSeg(1)}, forgotten: 1},
		{name: "no policy", setup: chainRepo, opts: catalog.PruneOptions{}, err: catalog.ErrNoPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := backends[0].open(t)
			tt.setup(t, store)
			res, err := catalog.Prune(t.Context(), store, tt.opts)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.Forgotten != tt.forgotten {
				t.Errorf("forgotten %d, want %d", res.Forgotten, tt.forgotten)
			}
			have := keys(t, store)
			if tt.err == nil {
				list, err := catalog.List(t.Context(), store)
				if err != nil {
					t.Fatal(err)
				}
				var days []string
				for _, b := range list {
					days = append(days, b.BackupID)
				}
				var want []string
				for _, d := range tt.kept {
					want = append(want, dayID(d))
				}
				if !slices.Equal(days, want) {
					t.Errorf("backups left %v, want %v", days, want)
				}
			}
			for _, k := range tt.gone {
				if _, ok := have[k]; ok {
					t.Errorf("%s still exists", k)
				}
			}
			for _, k := range tt.stay {
				if _, ok := have[k]; !ok {
					t.Errorf("%s was deleted", k)
				}
			}
			if tt.err == nil {
				checkReferencesExist(t, store)
			}
		})
	}
}
