package restorer

import (
	"math"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
)

// TestTimestampRejectedAsLogValidator: the preflight's timestamp rule is
// LogValidator.recordHasInvalidTimestamp with Java's wrapping long
// arithmetic, at the extremes and at the exact boundaries.
func TestTimestampRejectedAsLogValidator(t *testing.T) {
	const now = int64(1_764_000_000_000) // 2025-11-24
	const day = int64(86_400_000)
	tests := []struct {
		name          string
		ts            int64
		before, after int64
		want          bool
	}{
		{"no timestamp (-1) is never checked", -1, 0, 0, false},
		{"no timestamp (-1) with limits of 0", -1, day, day, false},
		{"Long.MAX limits accept a timestamp far in the future", math.MaxInt64, math.MaxInt64, math.MaxInt64, false},
		{"Long.MAX limits accept timestamp 0", 0, math.MaxInt64, math.MaxInt64, false},
		{"Long.MAX after accepts now + 100 years", now + 100*365*day, day, math.MaxInt64, false},
		{"Long.MAX before accepts the epoch", 0, math.MaxInt64, 0, false},
		{"timestamp 0 is checked (it is not -1)", 0, day, day, true},
		{"timestamp -2 is checked", -2, day, day, true},
		{"exactly now - before is accepted", now - day, day, 0, false},
		{"one ms before now - before is rejected", now - day - 1, day, 0, true},
		{"exactly now + after is accepted", now + day, 0, day, false},
		{"one ms after now + after is rejected", now + day + 1, 0, day, true},
		{"now with limits 0 is accepted", now, 0, 0, false},
		{"Long.MIN timestamp: the difference wraps negative and the after check rejects it, as in Java", math.MinInt64, day, day, true},
		{"a difference of exactly Long.MIN passes both checks (-1 * Long.MIN wraps), as in Java", math.MinInt64 + now, day, day, false},
		{"Long.MAX timestamp is in the future", math.MaxInt64, math.MaxInt64, day, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timestampRejected(now, tt.ts, tt.before, tt.after); got != tt.want {
				t.Fatalf("timestampRejected(now=%d, ts=%d, before=%d, after=%d) = %v, want %v", now, tt.ts, tt.before, tt.after, got, tt.want)
			}
		})
	}
}

// TestSingleRecordBatchBytes: the batch size Kafka measures, from the
// wire layout of DefaultRecordBatch and DefaultRecord.
func TestSingleRecordBatchBytes(t *testing.T) {
	tests := []struct {
		name string
		rec  format.Record
		want int64
	}{
		// 61 header + length varint 1 + attributes 1 + ts delta 1 + offset delta 1
		// + key -1 (1) + value -1 (1) + 0 headers (1) = 61 + 1 + 6.
		{"null key and value", format.Record{}, 68},
		{"empty key and value", format.Record{Key: []byte{}, Value: []byte{}}, 68},
		{"3-byte key, 5-byte value", format.Record{Key: []byte("abc"), Value: []byte("hello")}, 76},
		// one header "h"="v": +1 key len +1 +1 value len +1
		{"one header", format.Record{Key: []byte("abc"), Value: []byte("hello"), Headers: []format.Header{{Key: "h", Value: []byte("v")}}}, 80},
		// value of 200 bytes: value length varint 2 bytes, record length 208 -> varint 2 bytes
		{"200-byte value", format.Record{Value: make([]byte, 200)}, 61 + 2 + 1 + 1 + 1 + 1 + 2 + 200 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := singleRecordBatchBytes(&tt.rec); got != tt.want {
				t.Fatalf("singleRecordBatchBytes = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestIllegalTopicName(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		name, topic string
		bad         bool
	}{
		{"ordinary", "orders", false},
		{"every legal character", "a-Z_0.9", false},
		{"249 characters", string(long[:249]), false},
		{"250 characters", string(long), true},
		{"dot", ".", true},
		{"dot dot", "..", true},
		{"space", "my topic", true},
		{"empty", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := illegalTopicName(tt.topic); (got != "") != tt.bad {
				t.Fatalf("illegalTopicName(%q) = %q, want bad=%v", tt.topic, got, tt.bad)
			}
		})
	}
}

// TestProducerTimestampRange: the range producerCanSend accepts is exactly
// the one whose milliseconds survive franz-go's time.Time.UnixNano()/1e6.
func TestProducerTimestampRange(t *testing.T) {
	survives := func(ms int64) bool { return time.UnixMilli(ms).UnixNano()/1e6 == ms }
	for _, ms := range []int64{kgotime.ProducerMin, kgotime.ProducerMax, -1, 0, 1_764_000_000_000} {
		if !producerCanSend(ms) || !survives(ms) {
			t.Errorf("timestamp %d: producerCanSend %v, survives UnixNano %v; want both", ms, producerCanSend(ms), survives(ms))
		}
	}
	for _, ms := range []int64{kgotime.ProducerMin - 1, kgotime.ProducerMax + 1, math.MaxInt64, math.MinInt64} {
		if producerCanSend(ms) || survives(ms) {
			t.Errorf("timestamp %d: producerCanSend %v, survives UnixNano %v; want neither", ms, producerCanSend(ms), survives(ms))
		}
	}
}
