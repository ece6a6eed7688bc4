package restorer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// loadBackup resolves "" and "latest" to the latest backup, the newest
// complete one (repository.Latest: an unreadable newest manifest is an
// error naming it, never a silent fall-back to an older backup), and loads
// that manifest; an explicit id loads that backup's manifest.
func loadBackup(ctx context.Context, store storage.Backend, id string) (*format.Manifest, error) {
	if id == "" || id == "latest" {
		m, err := repository.Latest(ctx, store)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%w: %s holds no complete backup", ErrNoBackup, store.Location())
		}
		if m.State != format.StateComplete {
			return nil, fmt.Errorf("%w: backup %s is not complete", ErrNoBackup, m.BackupID)
		}
		return m, nil
	} else if !format.ValidBackupID(id) {
		return nil, fmt.Errorf("%w: %q is not a backup id (like 20261129T074512.345Z-9f3a01bc)", ErrNoBackup, id)
	}
	m, err := repository.LoadManifest(ctx, store, format.ManifestKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		if err := incomplete(ctx, store, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s has no backup %s (no %s)", ErrNoBackup, store.Location(), id, format.ManifestKey(id))
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	if m.State != format.StateComplete {
		return nil, fmt.Errorf("%w: backup %s is not complete", ErrNoBackup, id)
	}
	return m, nil
}

// incompleteError is loadBackup's error for a backup id with a
// progress.json and no manifest.json. It wraps ErrNoBackup (nothing to
// restore) without its "no such backup" wording: the backup exists.
type incompleteError struct{ msg string }

func (e *incompleteError) Error() string { return e.msg }
func (e *incompleteError) Unwrap() error { return ErrNoBackup }

// incomplete returns an *incompleteError when backup id has only a
// progress.json: running, or interrupted and resumed by the next backup
// (docs/FORMAT.md, "Resume"), or abandoned when a newer backup completed
// since (catalog.StateRunning, StateAbandoned). It names the latest
// complete backup. It returns nil when id has no progress.json either, or
// when the repository cannot tell (the caller's "no such backup" stands).
func incomplete(ctx context.Context, store storage.Backend, id string) error {
	if _, err := store.Stat(ctx, format.ProgressKey(id)); err != nil {
		return nil
	}
	ids, err := repository.CompleteIDs(ctx, store)
	if err != nil {
		return nil
	}
	msg := fmt.Sprintf("backup %s is not complete: it is running or interrupted (only %s; the next backup resumes it) and cannot be restored", id, format.ProgressKey(id))
	if len(ids) > 0 && ids[0] > id {
		msg = fmt.Sprintf("backup %s is not complete: it was interrupted and abandoned (only %s; a newer backup completed since, no backup resumes it) and cannot be restored", id, format.ProgressKey(id))
	}
	if len(ids) == 0 {
		return &incompleteError{msg + "; the repository holds no complete backup yet"}
	}
	return &incompleteError{fmt.Sprintf("%s; the latest complete backup is %s (--backup-id %s, or latest)", msg, ids[0], ids[0])}
}

// cutEnd returns the original offset before which a --to-time cut ends the
// partition: the offset of its first record with a timestamp after toTime,
// or -1 when no record is after it (or there is no cut). Segment timestamp
// ranges skip segments that cannot hold such a record; the first one that
// can is decoded (repository.FirstAfter).
func cutEnd(ctx context.Context, store storage.Backend, topic string, p *format.Partition, toTime *time.Time) (int64, error) {
	if toTime == nil {
		return -1, nil
	}
	end, err := repository.FirstAfter(ctx, store, topic, p, toTime.UnixMilli())
	return end, asDamage(err)
}

// readSegment decodes one segment the manifest names for topic and
// partition with repository.ReadSegment's checks (its header before fn
// sees a record; its size, SHA-256, record count and offsets at the end),
// calling fn for every record. fn may return repository.StopReading to
// end early (the checks of the whole object are then skipped). Damage is
// a *DamageError; a storage read that fails is returned as it is.
func readSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, fn func(*format.Record) error) error {
	return asDamage(repository.ReadSegment(ctx, store, topic, partition, s, -1, fn))
}

// eachRecord calls fn for every record of the partition below end (an
// original offset; -1 for no cut), in offset order
// (repository.ReadPartition). Damage is a *DamageError.
func eachRecord(ctx context.Context, store storage.Backend, topic string, p *format.Partition, end int64, fn func(*format.Record) error) error {
	return asDamage(repository.ReadPartition(ctx, store, topic, p, end, fn))
}

// countBelow counts the partition's records with an original offset below
// o and below end (-1: no cut), decoding at most the one segment that
// straddles the bound (repository.CountBelow). Damage is a *DamageError.
func countBelow(ctx context.Context, store storage.Backend, topic string, p *format.Partition, o, end int64) (int64, error) {
	n, err := repository.CountBelow(ctx, store, topic, p, o, end)
	return n, asDamage(err)
}

// asDamage turns the repository reader's *repository.SegmentError into the
// restore's *DamageError for that one segment; other errors (a storage
// failure, the caller's own) are returned as they are.
func asDamage(err error) error {
	se, ok := errors.AsType[*repository.SegmentError](err)
	if !ok {
		return err
	}
	return &DamageError{Damaged: []Damage{{Key: se.Key, Topic: se.Topic, Partition: se.Partition, Problem: se.Problem}}}
}

func latestReport(ctx context.Context, store storage.Backend, applicationID, targetClusterID string) (*Report, error) {
	var ids []string
	err := store.List(ctx, "restores/", func(oi storage.ObjectInfo) error {
		rest := strings.TrimPrefix(oi.Key, "restores/")
		if id, file, ok := strings.Cut(rest, "/"); ok && file == "report.json" && format.ValidBackupID(id) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list restore reports in %s: %w", store.Location(), err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	for _, id := range ids {
		key := "restores/" + id + "/report.json"
		rc, err := store.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
		var rep Report
		err = json.NewDecoder(rc).Decode(&rep)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", key, err)
		}
		if (applicationID == "" || rep.ApplicationID == applicationID) && (targetClusterID == "" || rep.TargetClusterID == targetClusterID) {
			return &rep, nil
		}
	}
	return nil, nil
}
