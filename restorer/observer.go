package restorer

import "time"

// Observer receives a restore's progress as it happens, like Kafka
// Streams' StateRestoreListener: for metrics (records restored and
// remaining, the equivalents of Kafka Streams' restore metrics), progress
// bars and logs. Every method must be safe for concurrent use and return
// quickly; Options.Observer nil observes nothing.
type Observer interface {
	// RestoreStart is called once per partition before its records are
	// produced, with the number of records to produce.
	RestoreStart(topic string, partition int32, records int64)
	// Restored is called after each batch of n records is acknowledged.
	Restored(topic string, partition int32, n int64)
	// RestoreEnd is called when the partition is done.
	RestoreEnd(topic string, partition int32, total int64)
	// PhaseDone is called at the end of each phase ("preflight", "precheck", "topics",
	// "records", "offsets") with its duration.
	PhaseDone(phase string, d time.Duration)
}

// BytesObserver is an Observer that is also told the size of each batch:
// when Options.Observer implements it, RestoredBytes is called right after
// each Restored call, for the same batch, with its n records and their
// bytes (keys, values, header keys and values, as produced; not the
// stored, compressed segment bytes). Same concurrency rules as Observer.
type BytesObserver interface {
	Observer
	RestoredBytes(topic string, partition int32, records, bytes int64)
}

type nopObserver struct{}

func (nopObserver) RestoreStart(string, int32, int64) {}
func (nopObserver) Restored(string, int32, int64)     {}
func (nopObserver) RestoreEnd(string, int32, int64)   {}
func (nopObserver) PhaseDone(string, time.Duration)   {}
