// Package kgotime recovers a Kafka record's timestamp, a 64-bit count of
// milliseconds since the epoch, from the time.Time that franz-go's consumer
// hands out.
//
// franz-go (pkg/kgo, timeFromMillis) builds kgo.Record.Timestamp as
// time.Unix(0, ms*1e6): the product wraps in 64 bits for timestamps outside
// 1677-09-21..2262-04-11, which Kafka accepts (a topic whose
// message.timestamp.*.max.ms are Long.MAX_VALUE takes any CreateTime), so
// Timestamp.UnixMilli() returned year 1830 for a record of year 3000. The
// wrapped product still fixes ms modulo 2^58, because 1e6 is 2^6 times an
// odd number: Millis undoes it exactly for every |ms| < 2^57 (about 4.5
// million years either side of 1970), and InBatch for every timestamp of a
// v2 record batch whose header's first timestamp the caller has read from
// the wire (Long.MAX_VALUE included).
package kgotime

import (
	"math"
	"time"
)

// inv15625 is the inverse of 15625 (1e6 / 2^6) modulo 2^64.
var inv15625 = func() uint64 {
	const a = 15625
	x := uint64(a) // correct to 3 bits for odd a; each step doubles them
	for range 6 {
		x *= 2 - a*x
	}
	return x
}()

// Millis returns the milliseconds franz-go's consumer read from the wire
// for t (a kgo.Record.Timestamp), exactly for |ms| < 2^57; a timestamp
// farther out is returned modulo 2^58 (franz-go keeps no more of it). On a
// time.Time of the nanosecond range (1677..2262) it is t.UnixMilli().
func Millis(t time.Time) int64 {
	return sext58(mod58(t))
}

// InBatch returns the milliseconds of t, a kgo.Record.Timestamp of a
// record in a v2 record batch (DefaultRecordBatch) whose header's
// firstTimestamp is first: the record's timestamp is first plus its
// timestampDelta, and the delta is recovered modulo 2^58 from t. Exact for
// every 64-bit timestamp whose distance from first is below 2^57 ms (in a
// batch whose maxTimestamp is t's own, LogAppendTime, pass that as first).
func InBatch(t time.Time, first int64) int64 {
	delta := (mod58(t) - uint64(first)) & (1<<58 - 1)
	return first + sext58(delta)
}

// mod58 is the milliseconds of t modulo 2^58.
func mod58(t time.Time) uint64 {
	n := uint64(t.UnixNano()) // ms*1e6 modulo 2^64
	return ((n >> 6) * inv15625) & (1<<58 - 1)
}

// sext58 sign-extends a 58-bit value.
func sext58(m uint64) int64 {
	return int64(m<<6) >> 6
}

// The timestamps, in epoch milliseconds, franz-go's producer can send: it
// computes a record's milliseconds as time.Time.UnixNano()/1e6, which is
// only defined from 1677-09-21T00:12:43.146Z to 2262-04-11T23:47:16.854Z;
// outside it a record would be produced with another timestamp.
const (
	ProducerMin = math.MinInt64 / 1_000_000
	ProducerMax = math.MaxInt64 / 1_000_000
)

// ProducerCanSend reports whether franz-go's producer sends ts (epoch
// milliseconds) unchanged.
func ProducerCanSend(ts int64) bool {
	return ts >= ProducerMin && ts <= ProducerMax
}
