package backup

import "time"

// Observer receives a run's progress as it happens: for metrics, progress
// bars and logs. Every method must be safe for concurrent use and return
// quickly; Options.Observer nil observes nothing.
type Observer interface {
	// Planned is called once per partition before copying, with the
	// records' offset range to copy [from, end) (end - from is an upper
	// bound of the records: holes and markers take offsets).
	Planned(topic string, partition int32, from, end int64)
	// Copied is called as records are read: n records of rawBytes
	// (keys, values and headers) up to offset next-1.
	Copied(topic string, partition int32, n, rawBytes int64, next int64)
	// SegmentStored is called when a segment is durable.
	SegmentStored(topic string, partition int32, storedBytes, rawBytes int64)
	// Retried is called for a retried request (kind: "fetch", ...).
	Retried(kind string)
	// PhaseDone is called at the end of each phase ("cut", "copy",
	// "manifest") with its duration.
	PhaseDone(phase string, d time.Duration)
}

type nopObserver struct{}

func (nopObserver) Planned(string, int32, int64, int64)       {}
func (nopObserver) Copied(string, int32, int64, int64, int64) {}
func (nopObserver) SegmentStored(string, int32, int64, int64) {}
func (nopObserver) Retried(string)                            {}
func (nopObserver) PhaseDone(string, time.Duration)           {}
