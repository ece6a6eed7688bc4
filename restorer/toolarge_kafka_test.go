package restorer_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestRestoreFullBatchesFitMaxMessageBytes restores a compacted topic
// with max.message.bytes 16384 into a real Kafka 4.4 broker: 4,000
// records of 4,081 bytes each (as Kafka measures a record in a batch,
// DefaultRecord.sizeInBytes) with timestamps going back and forth, so that
// every batch the producer fills with 4 records is 61 + 4 x 4081 = 16385
// bytes, one byte past the limit. The restore's batch cap let franz-go
// build them on flexible produce requests (restorer/limits.go
// maxProduceVersion), and the broker refused them with MESSAGE_TOO_LARGE,
// as it refused make bench's restore of a compacted topic: with
// --compression none, and with snappy when the values do not compress
// (franz-go then sends the batch uncompressed).
func TestRestoreFullBatchesFitMaxMessageBytes(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	const n = 4000
	for _, c := range []struct {
		compression restorer.Compression
		value       func(i int) []byte
	}{
		{"none", func(int) []byte { return bytes.Repeat([]byte("v"), 4063) }},
		{"snappy", func(i int) []byte {
			b := make([]byte, 4063)
			r := rand.NewChaCha8([32]byte{byte(i), byte(i >> 8)})
			r.Read(b)
			return b
		}},
	} {
		t.Run(c.compression, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			topic := "full-batches-" + c.compression
			base := time.Now().Add(-time.Hour).UnixMilli()
			records := make([]format.Record, n)
			for i := range records {
				// Key "key-00000" (9 bytes) and a 4,063-byte value: 1
				// attributes + 1 timestamp delta (-1, 0 or 1) + 1 offset
				// delta (< 64) + 1+9 key + 2+4063 value + 1 headers = 4079
				// bytes of body, and 2 of varint length.
				records[i] = format.Record{Offset: int64(i), Timestamp: base - int64(i%2), Key: fmt.Appendf(nil, "key-%05d", i), Value: c.value(i)}
			}
			store := writeBackup(t, testTopic{name: topic, configs: map[string]string{"max.message.bytes": "16384", "cleanup.policy": "compact"}, records: records})
			rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: c.compression,
				// Less buffer than records: most batches are filled after
				// the first produce response, once franz-go sizes them
				// for the produce version (before, it sizes them as
				// message sets v1, 25 bytes more a record, and 3 records
				// fill one), as make bench's gigabytes were.
				MaxBufferedBytes: 64 << 10})
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if rep.Topics[0].MaxMessageBytes != 16384 {
				t.Errorf("plan max_message_bytes = %d, want 16384", rep.Topics[0].MaxMessageBytes)
			}
			got := consumeAll(t, k.Addrs(), topic, n)
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("key-%05d", i) || r.Timestamp.UnixMilli() != base-int64(i%2) || !bytes.Equal(r.Value, records[i].Value) {
					t.Fatalf("record %d restored as offset %d key %q timestamp %d, %d-byte value (or another value)", i, r.Offset, r.Key, r.Timestamp.UnixMilli(), len(r.Value))
				}
			}
		})
	}
}

// TestRestoreIntoATopicBelowFranzGosSmallestCap restores into a real
// Kafka 4.4 topic with max.message.bytes 300: every record fits alone (a
// 178-byte batch), but franz-go caps batches at 512 bytes at the least
// (ProducerBatchMaxBytes), so two or more records went into one batch the
// broker refused with MESSAGE_TOO_LARGE. Such a topic's records are
// produced one at a time, each after the one before is acknowledged.
func TestRestoreIntoATopicBelowFranzGosSmallestCap(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	records := make([]format.Record, 300)
	for i := range records {
		records[i] = format.Record{Offset: int64(i), Timestamp: time.Now().UnixMilli() - int64(i%2), Key: fmt.Appendf(nil, "key-%05d", i), Value: bytes.Repeat([]byte("v"), 100)}
	}
	store := writeBackup(t, testTopic{name: "tiny-limit", configs: map[string]string{"max.message.bytes": "300"}, records: records})
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: "none"})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, `topic "tiny-limit": topic max.message.bytes 300 is below`) && strings.Contains(w, "one at a time")
	}) {
		t.Errorf("no warning that the records go one at a time: %q", rep.Warnings)
	}
	got := consumeAll(t, k.Addrs(), "tiny-limit", len(records))
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("key-%05d", i) {
			t.Fatalf("record %d restored as offset %d key %q", i, r.Offset, r.Key)
		}
	}
}
