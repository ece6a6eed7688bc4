package restorer

import (
	"context"
	"errors"
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
// calling fn for every record. fn may return repository.ErrStopReading to
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
