// Package catalog tells what a backup repository holds, from its manifests
// alone, and forgets old backups (Prune).
//
// List reads every backups/<id>/manifest.json and progress.json and nothing
// else: the numbers it reports (records, stored and raw bytes, the chain's
// segments) come from the manifests, so it is as fast on a repository of
// thousands of segments as on one of ten, on S3 as on a local directory.
// Describe turns one manifest into per-topic and per-partition figures.
// Prune deletes the manifests of backups a retention policy no longer
// keeps, then the segment objects no remaining manifest names (see
// docs/FORMAT.md, "Write order").
package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// State is what a backup id in the repository stands for.
type State string

const (
	// StateComplete: the backup has a manifest.json and can be restored.
	StateComplete State = "complete"
	// StateRunning: only a progress.json, newer than the latest complete
	// backup: a backup is running, or was interrupted and the next run
	// resumes it. It cannot be restored.
	StateRunning State = "running"
	// StateAbandoned: only a progress.json, older than the latest complete
	// backup: no run will resume it (docs/FORMAT.md, "Resume"); its
	// segments are garbage unless a manifest names them.
	StateAbandoned State = "abandoned"
	// StateUnreadable: the manifest (or progress manifest) does not decode
	// or validate; Summary.Error says why.
	StateUnreadable State = "unreadable"
)

// Summary is one backup as the list shows it. Every figure comes from the
// backup's manifest. Byte and record figures cover the whole chain the
// backup needs (its own segments and those of earlier backups it names);
// the Own* figures cover only the segments this run wrote.
type Summary struct {
	BackupID        string    `json:"backup_id"`
	State           State     `json:"state"`
	ManifestKey     string    `json:"manifest_key"` // manifest.json, or progress.json for running and abandoned runs
	ParentBackupID  string    `json:"parent_backup_id,omitempty"`
	ApplicationID   string    `json:"application_id,omitempty"`
	SourceClusterID string    `json:"source_cluster_id,omitempty"`
	KafkaClusterID  string    `json:"kafka_cluster_id,omitempty"`
	ToolVersion     string    `json:"tool_version,omitempty"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	CutAt           time.Time `json:"cut_at,omitzero"`
	FinishedAt      time.Time `json:"finished_at,omitzero"`
	// Topics, Partitions, Records, Segments, StoredBytes and RawBytes count
	// the in-flight tails too (the manifest's in_flight: the application's
	// repartition records in flight at the cut), as the backup's summary and
	// verify do; InFlightTopics and InFlightRecords are the tails' share.
	Topics          int   `json:"topics"`
	Partitions      int   `json:"partitions"`
	Records         int64 `json:"records"`  // records the chain holds: the sum of the partitions' records
	Segments        int   `json:"segments"` // segment objects the manifest names
	InFlightTopics  int   `json:"in_flight_topics"`
	InFlightRecords int64 `json:"in_flight_records"`
	StoredBytes     int64 `json:"stored_bytes"` // their stored (compressed) bytes
	RawBytes        int64 `json:"raw_bytes"`    // their uncompressed bytes
	// CompressionRatio is RawBytes / StoredBytes; 0 when nothing is stored.
	CompressionRatio float64 `json:"compression_ratio"`
	OwnSegments      int     `json:"own_segments"` // segments this run wrote
	OwnRecords       int64   `json:"own_records"`
	OwnBytes         int64   `json:"own_bytes"` // stored bytes of the segments this run wrote
	Gaps             int     `json:"gaps"`      // offset ranges the broker deleted before any backup read them
	// Partial is set when the run left partitions unread below the cut
	// (partition_cuts[].unread, docs/FORMAT.md): the backup is complete
	// and restorable, without those offsets; the next backup reads them.
	// UnreadPartitions counts such partitions, UnreadOffsets their offsets.
	Partial          bool  `json:"partial,omitempty"`
	UnreadPartitions int   `json:"unread_partitions,omitempty"`
	UnreadOffsets    int64 `json:"unread_offsets,omitempty"`
	Warnings         int   `json:"warnings"`
	// LeftoverProgress: a progress.json remains next to manifest.json (the
	// run died between the two writes); it is garbage, Prune deletes it.
	LeftoverProgress bool   `json:"leftover_progress,omitempty"`
	Error            string `json:"error,omitempty"` // why the manifest is unreadable
	// KeyIDs are the ids of the encryption keys a restore of the backup
	// needs (format.Manifest.KeyIDs); empty when it is plaintext. A key
	// may be dropped from storage.encryption once no kept backup lists it
	// (docs/OPERATIONS.md, "Encryption").
	KeyIDs []string `json:"key_ids,omitempty"`
	// Shards is N for a sharded run that is running (backup --shard I/N;
	// format.ShardRun), 0 otherwise; ShardsDone counts its shards whose
	// progress is done. A running sharded run's figures sum every shard's
	// progress (format.MergeShards): the cut alone holds none of its
	// partitions' segments.
	Shards     int `json:"shards,omitempty"`
	ShardsDone int `json:"shards_done,omitempty"`
}

// Time is when the backup is considered taken for retention: its
// finished_at, else its cut_at, else its started_at, else the time in its id.
func (s *Summary) Time() time.Time {
	for _, t := range []time.Time{s.FinishedAt, s.CutAt, s.StartedAt} {
		if !t.IsZero() {
			return t
		}
	}
	t, _ := format.BackupIDTime(s.BackupID)
	return t
}

// entry is one backup id found under backups/ with its manifest.
type entry struct {
	Summary
	repository.Backup
	m *format.Manifest // nil when unreadable
}

// loadConcurrency is how many manifests are read at once.
const loadConcurrency = 16

// List returns every backup in the repository, newest (greatest id) first:
// complete backups, and runs that left only a progress.json (running or
// interrupted, or abandoned). It lists backups/ and reads each manifest; it
// never lists or reads segments. A manifest that cannot be decoded is
// returned with StateUnreadable and its Error rather than failing the list;
// a storage error fails it.
func List(ctx context.Context, store storage.Backend) ([]Summary, error) {
	_, es, err := scan(ctx, store)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(es))
	for i, e := range es {
		out[i] = e.Summary
	}
	return out, nil
}

// scan lists backups/ (repository.ReadIndex) and loads every manifest,
// newest first.
func scan(ctx context.Context, store storage.Backend) (*repository.Index, []*entry, error) {
	x, err := repository.ReadIndex(ctx, store)
	if err != nil {
		return nil, nil, err
	}
	es := make([]*entry, len(x.Backups))
	for i, b := range x.Backups {
		es[i] = &entry{Summary: Summary{BackupID: b.ID}, Backup: b}
	}

	var (
		wg       sync.WaitGroup
		sem      = make(chan struct{}, loadConcurrency)
		mu       sync.Mutex
		firstErr error
	)
	for _, e := range es {
		e.ManifestKey = format.ManifestKey(e.BackupID)
		e.State = StateComplete
		if !e.HasManifest {
			e.ManifestKey = format.ProgressKey(e.BackupID)
			e.State = StateRunning
			if x.Abandoned(e.Backup) {
				e.State = StateAbandoned
			}
		}
		e.LeftoverProgress = e.HasManifest && e.HasProgress
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, err := repository.LoadManifest(ctx, store, e.ManifestKey)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				// Deleted since the listing (a run finished or was pruned).
				err = fmt.Errorf("%s disappeared while the repository was read (is a backup or prune running?)", e.ManifestKey)
				fallthrough
			case err != nil && ctx.Err() == nil && errors.Is(err, repository.ErrDamaged):
				e.State, e.Error = StateUnreadable, err.Error()
				return
			case err != nil:
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			e.m = m
			if m.ShardRun != nil && e.State == StateRunning {
				if err := shardedSummary(ctx, store, m, e); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				return
			}
			e.Summary = summarize(m, e.Summary)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	return x, es, nil
}

// shardedSummary fills e's summary for a sharded run that is running: cut
// (its progress.json) merged with each shard's progress
// (format.ShardProgressKey; a shard without one, or whose progress does
// not decode, counts as pending with nothing copied). Only a store that
// fails is an error.
func shardedSummary(ctx context.Context, store storage.Backend, cut *format.Manifest, e *entry) error {
	parts := make([]*format.Manifest, cut.ShardRun.Shards)
	done := 0
	for i := range parts {
		sm, err := repository.LoadManifest(ctx, store, format.ShardProgressKey(cut.BackupID, i))
		switch {
		case err == nil:
			parts[i] = sm
			if sm.ShardRun != nil && sm.ShardRun.Done {
				done++
			}
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, repository.ErrDamaged) && !storage.IsTransient(err):
		default:
			return err
		}
	}
	e.Summary = summarize(format.MergeShards(cut, parts), e.Summary)
	e.Shards, e.ShardsDone = cut.ShardRun.Shards, done
	return nil
}

// summarize fills s (whose id, state and keys are set) from m.
func summarize(m *format.Manifest, s Summary) Summary {
	s.ParentBackupID = m.ParentBackupID
	s.ApplicationID = m.ApplicationID
	s.SourceClusterID = m.SourceClusterID
	s.KafkaClusterID = m.KafkaClusterID
	s.ToolVersion = m.ToolVersion
	s.StartedAt, s.CutAt, s.FinishedAt = m.StartedAt, m.CutAt, m.FinishedAt
	s.Topics = len(m.Topics) + len(m.InFlight)
	s.InFlightTopics, s.InFlightRecords = len(m.InFlight), m.InFlightRecords()
	s.Warnings = len(m.Warnings)
	s.KeyIDs = m.KeyIDs()
	for _, t := range slices.Concat(m.Topics, m.InFlight) {
		s.Partitions += len(t.PartitionCuts)
		for _, p := range t.PartitionCuts {
			s.Records += p.Records
			s.Gaps += len(p.Gaps)
			if p.Unread != nil {
				s.UnreadPartitions++
				s.UnreadOffsets += p.Unread.To - p.Unread.From
			}
			for _, seg := range p.Segments {
				s.Segments++
				s.StoredBytes += seg.Size
				s.RawBytes += seg.RawSize
				if seg.BackupID == m.BackupID {
					s.OwnSegments++
					s.OwnRecords += seg.Records
					s.OwnBytes += seg.Size
				}
			}
		}
	}
	s.CompressionRatio = ratio(s.RawBytes, s.StoredBytes)
	s.Partial = s.UnreadPartitions > 0
	return s
}

func ratio(raw, stored int64) float64 {
	if stored <= 0 {
		return 0
	}
	return float64(raw) / float64(stored)
}

// Detail is one backup described per topic and partition (Describe).
type Detail struct {
	Summary   Summary           `json:"summary"`
	Selection *format.Selection `json:"selection,omitempty"`
	// Cut is how the backup's cut was taken and whether it was proven
	// consistent with the application's transactions (the manifest's
	// cut, docs/FORMAT.md); nil for a manifest written before it was
	// recorded, whose cut is treated as not proven.
	Cut    *format.Cut   `json:"cut,omitempty"`
	Topics []TopicDetail `json:"topics"`
	// InFlight are the records in flight the backup's tails hold (the
	// manifest's in_flight, docs/DOMAIN.md#in-flight); nil when the backup
	// has none (no repartition topic, or written before in-flight capture).
	InFlight *InFlightDetail `json:"in_flight,omitempty"`
	Group    *format.Group   `json:"group,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// InFlightDetail is the records in flight a backup holds: in total and per
// repartition (or foreign-key subscription) topic, by the manifest's order.
type InFlightDetail struct {
	Records int64              `json:"records"`
	Topics  []InFlightTopicRow `json:"topics"`
}

// InFlightTopicRow is one in-flight tail's topic: its partitions and the
// records its tails hold (the sum of partition_cuts[].records).
type InFlightTopicRow struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records"`
}

// TopicDetail is one backed-up topic of a Detail.
type TopicDetail struct {
	Name            string `json:"name"`
	TopicID         string `json:"topic_id,omitempty"`
	Class           string `json:"class"`
	SourceChangelog bool   `json:"source_changelog,omitempty"`
	// SchemaRegistry marks the Schema Registry's storage topic (the
	// manifest's topics[].schema_registry): a restore restores it first.
	SchemaRegistry    bool `json:"schema_registry,omitempty"`
	Partitions        int  `json:"partitions"`
	ReplicationFactor int  `json:"replication_factor"`
	// Configs are the topic configs the backup recorded (value null for
	// sensitive entries).
	Configs     map[string]format.TopicConfig `json:"configs"`
	Records     int64                         `json:"records"`
	Segments    int                           `json:"segments"`
	StoredBytes int64                         `json:"stored_bytes"`
	RawBytes    int64                         `json:"raw_bytes"`
	Cuts        []PartitionDetail             `json:"partition_cuts"`
}

// PartitionDetail is one partition's cut: offsets, counts and gaps, with
// its segments summed rather than listed.
type PartitionDetail struct {
	Partition      int32        `json:"partition"`
	LogStartOffset int64        `json:"log_start_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	StartOffset    int64        `json:"start_offset"`
	EndOffset      int64        `json:"end_offset"`
	Records        int64        `json:"records"`
	Segments       int          `json:"segments"`
	OwnSegments    int          `json:"own_segments"` // written by this backup; the others come from its ancestors
	StoredBytes    int64        `json:"stored_bytes"`
	RawBytes       int64        `json:"raw_bytes"`
	MinTimestamp   int64        `json:"min_timestamp,omitempty"` // milliseconds since the epoch; absent without records
	MaxTimestamp   int64        `json:"max_timestamp,omitempty"`
	Gaps           []format.Gap `json:"gaps,omitempty"`
	// Unread is the range [end_offset, unread.to) this backup could not
	// read (partition_cuts[].unread): not in this backup, nor a gap.
	Unread *format.Gap `json:"unread,omitempty"`
}

// Describe sums a manifest per topic and partition. It reads nothing.
func Describe(m *format.Manifest) *Detail {
	st := StateComplete
	key := format.ManifestKey(m.BackupID)
	if m.State == format.StateRunning {
		st, key = StateRunning, format.ProgressKey(m.BackupID)
	}
	d := &Detail{
		Summary:   summarize(m, Summary{BackupID: m.BackupID, State: st, ManifestKey: key}),
		Selection: m.Selection,
		Cut:       m.Cut,
		Group:     m.Group,
		Warnings:  m.Warnings,
	}
	if m.InFlight != nil {
		d.InFlight = &InFlightDetail{Topics: []InFlightTopicRow{}}
		for _, t := range m.InFlight {
			row := InFlightTopicRow{Name: t.Name, Partitions: t.Partitions}
			for _, p := range t.PartitionCuts {
				row.Records += p.Records
			}
			d.InFlight.Records += row.Records
			d.InFlight.Topics = append(d.InFlight.Topics, row)
		}
	}
	for _, t := range m.Topics {
		td := TopicDetail{Name: t.Name, TopicID: t.TopicID, Class: t.Class, SourceChangelog: t.SourceChangelog, SchemaRegistry: t.SchemaRegistry,
			Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: t.Configs}
		for _, p := range t.PartitionCuts {
			pd := PartitionDetail{Partition: p.Partition, LogStartOffset: p.LogStartOffset, HighWatermark: p.HighWatermark,
				StartOffset: p.StartOffset, EndOffset: p.EndOffset, Records: p.Records, Gaps: p.Gaps, Unread: p.Unread}
			for i, s := range p.Segments {
				pd.Segments++
				if s.BackupID == m.BackupID {
					pd.OwnSegments++
				}
				pd.StoredBytes += s.Size
				pd.RawBytes += s.RawSize
				if i == 0 || s.MinTimestamp < pd.MinTimestamp {
					pd.MinTimestamp = s.MinTimestamp
				}
				if i == 0 || s.MaxTimestamp > pd.MaxTimestamp {
					pd.MaxTimestamp = s.MaxTimestamp
				}
			}
			td.Records += pd.Records
			td.Segments += pd.Segments
			td.StoredBytes += pd.StoredBytes
			td.RawBytes += pd.RawBytes
			td.Cuts = append(td.Cuts, pd)
		}
		d.Topics = append(d.Topics, td)
	}
	return d
}
