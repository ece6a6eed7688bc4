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

// loadBackup loads the manifest of the complete backup id, "" or
// "latest" for the latest one (repository.Manifest: an unreadable newest
// manifest is an error naming it, never a silent fall-back to an older
// backup).
func loadBackup(ctx context.Context, store storage.Backend, id string) (*format.Manifest, error) {
	return repository.Manifest(ctx, store, id)
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
