package backup

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tailFilter keeps, of an in-flight tail read with read_uncommitted up to
// the high watermark at the cut, exactly the records committed at the cut
// (docs/DOMAIN.md#in-flight): non-transactional records, and the records
// of each transaction whose COMMIT marker is below the high watermark. A
// transaction still open at the cut has its marker at or above it, so its
// records are left out, whether it commits later or not; an aborted one's
// ABORT marker drops its records, as read_committed does. This reaches the
// committed records above the last stable offset that another producer's
// open transaction holds back (several producers writing one repartition
// partition), which a read_committed tail to the LSO misses.
//
// Records come out in offset order: a record waits behind the first
// undecided one before it, so memory grows with the records after the
// first record of the oldest transaction open in the range (at most the
// high watermark minus the last stable offset at the cut, plus what
// transactions decided in the range hold). Not safe for concurrent use.
type tailFilter struct {
	queue []tailRecord // in offset order; the head is undecided
}

type tailRecord struct {
	rec   *kgo.Record
	times fetchTimes // the batch headers of the fetch it came in (batchTimestamps)
	state tailState
}

type tailState int8

const (
	tailPending tailState = iota // a transaction's record, its marker not seen yet
	tailKeep
	tailDrop
)

// add takes the next record of the partition (control records included:
// kgo.ProcessFetchPartitionOpts.KeepControlRecords) with the batch headers
// of its fetch, and returns the records now decided to keep, in offset
// order.
func (f *tailFilter) add(rec *kgo.Record, times fetchTimes) []tailRecord {
	switch {
	case rec.Attrs.IsControl():
		// Control record key: version int16, type int16 (0 ABORT,
		// 1 COMMIT), ControlRecordType in Kafka.
		state := tailDrop
		if len(rec.Key) >= 4 && binary.BigEndian.Uint16(rec.Key[2:4]) == 1 {
			state = tailKeep
		}
		for i := range f.queue {
			if q := &f.queue[i]; q.state == tailPending && q.rec.ProducerID == rec.ProducerID {
				q.state = state
			}
		}
	case rec.Attrs.IsTransactional():
		f.queue = append(f.queue, tailRecord{rec: rec, times: times, state: tailPending})
	default:
		f.queue = append(f.queue, tailRecord{rec: rec, times: times, state: tailKeep})
	}
	return f.pop(false)
}

// finish ends the tail: the records still undecided belong to
// transactions open at the cut and are dropped; it returns the kept
// records behind them.
func (f *tailFilter) finish() []tailRecord { return f.pop(true) }

func (f *tailFilter) pop(all bool) []tailRecord {
	var out []tailRecord
	n := 0
	for ; n < len(f.queue); n++ {
		q := f.queue[n]
		if q.state == tailPending && !all {
			break
		}
		if q.state == tailKeep {
			out = append(out, q)
		}
	}
	f.queue = f.queue[n:]
	return out
}
