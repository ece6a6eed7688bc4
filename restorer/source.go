package restorer

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// can is decoded.
func cutEnd(ctx context.Context, store storage.Backend, topic string, p *format.Partition, toTime *time.Time) (int64, error) {
	if toTime == nil {
		return -1, nil
	}
	limit := toTime.UnixMilli()
	for _, s := range p.Segments {
		if s.MaxTimestamp <= limit {
			continue
		}
		var found int64 = -1
		err := readSegment(ctx, store, topic, p.Partition, s, func(r *format.Record) error {
			if r.Timestamp > limit {
				found = r.Offset
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return 0, err
		}
		if found >= 0 {
			return found, nil
		}
	}
	return -1, nil
}

var errStop = errors.New("stop")

// readSegment decodes one segment the manifest names for topic and
// partition, checking that its header names them (before fn sees a record),
// its size, SHA-256, record count and offsets. fn may return errStop to end
// early (the checks of the whole object are then skipped). Damage is a
// *DamageError; a storage read that fails is returned as it is.
func readSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, fn func(*format.Record) error) error {
	rc, err := store.Get(ctx, s.Key)
	if errors.Is(err, storage.ErrNotFound) {
		return &DamageError{Damaged: []Damage{{Key: s.Key, Topic: topic, Partition: partition, Problem: "missing: the manifest names it, the repository has no such object"}}}
	}
	if err != nil {
		return fmt.Errorf("read segment %s: %w", s.Key, err)
	}
	defer rc.Close()
	src := &storage.ReadTracker{R: rc}
	hr := format.NewHashingWriter(io.Discard)
	damaged := func(problem string) error {
		if storage.IsCorrupt(src.Err) {
			problem = src.Err.Error()
		} else if src.Err != nil {
			return fmt.Errorf("read segment %s: %w", s.Key, src.Err)
		}
		return &DamageError{Damaged: []Damage{{Key: s.Key, Topic: topic, Partition: partition, Problem: problem}}}
	}
	tee := io.TeeReader(src, hr)
	sr, err := format.NewSegmentReader(tee)
	if err != nil {
		return damaged(fmt.Sprintf("does not decode: %v", err))
	}
	defer sr.Close()
	if sr.Topic != topic || sr.Partition != partition {
		return damaged(fmt.Sprintf("its header says topic %q partition %d, the manifest has it for topic %q partition %d (a segment of another partition)", sr.Topic, sr.Partition, topic, partition))
	}
	var n int64
	first, last := int64(-1), int64(-1)
	for {
		var rec format.Record
		err := sr.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return damaged(fmt.Sprintf("does not decode after offset %d: %v", last, err))
		}
		n++
		if first < 0 {
			first = rec.Offset
		}
		last = rec.Offset
		if err := fn(&rec); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, tee); err != nil || src.Err != nil {
		if storage.IsCorrupt(src.Err) {
			return damaged("")
		}
		return fmt.Errorf("read segment %s: %w", s.Key, errors.Join(src.Err, err))
	}
	sum, size := hr.Sum()
	var problems []string
	if size != s.Size {
		problems = append(problems, fmt.Sprintf("size %d bytes, the manifest says %d", size, s.Size))
	}
	if sum != s.SHA256 {
		problems = append(problems, fmt.Sprintf("SHA-256 %s, the manifest says %s", sum, s.SHA256))
	}
	problems = append(problems, headerProblems(topic, partition, s, sr.Topic, sr.Partition, n, first, last)...)
	if len(problems) > 0 {
		return damaged(strings.Join(problems, "; "))
	}
	return nil
}

// eachRecord calls fn for every record of the partition below end (an
// original offset; -1 for no cut), in offset order.
func eachRecord(ctx context.Context, store storage.Backend, topic string, p *format.Partition, end int64, fn func(*format.Record) error) error {
	for _, s := range p.Segments {
		if end >= 0 && s.FirstOffset >= end {
			return nil
		}
		err := readSegment(ctx, store, topic, p.Partition, s, func(r *format.Record) error {
			if end >= 0 && r.Offset >= end {
				return errStop
			}
			return fn(r)
		})
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// countBelow counts the partition's records with an original offset below
// o and below end (-1: no cut), decoding at most the one segment that
// straddles the bound.
func countBelow(ctx context.Context, store storage.Backend, topic string, p *format.Partition, o, end int64) (int64, error) {
	bound := o
	if end >= 0 && end < bound {
		bound = end
	}
	var n int64
	for _, s := range p.Segments {
		switch {
		case s.LastOffset < bound:
			n += s.Records
		case s.FirstOffset >= bound:
			return n, nil
		default:
			err := readSegment(ctx, store, topic, p.Partition, s, func(r *format.Record) error {
				if r.Offset >= bound {
					return errStop
				}
				n++
				return nil
			})
			if err != nil && !errors.Is(err, errStop) {
				return 0, err
			}
			return n, nil
		}
	}
	return n, nil
}
