package restorer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// kafkaRecordBytes is DefaultRecord.sizeInBytes (message format v2) of a
// record with no headers, a key of keyLen and a value of valueLen bytes at offsetDelta and tsDelta in its batch: the
// varint length of the body, then attributes, the timestamp delta
// (varlong), the offset delta (varint), the key and the value (varint
// length and bytes) and the header count. Computed with encoding/binary's
// zigzag varints, not franz-go's, so the test checks franz-go against
// Kafka's rule rather than against itself.
func kafkaRecordBytes(offsetDelta int, tsDelta int64, keyLen, valueLen int) int {
	vl := func(x int64) int { return len(binary.AppendVarint(nil, x)) }
	body := 1 + vl(tsDelta) + vl(int64(offsetDelta)) +
		vl(int64(keyLen)) + keyLen + vl(int64(valueLen)) + valueLen +
		vl(0)
	return vl(int64(body)) + body
}

// batchOfSize returns records that make one v2 record batch of exactly
// size bytes as the broker measures it against max.message.bytes
// (RecordBatch.sizeInBytes: the 61-byte batch header and the records):
// records of lead-byte values first (1 of a 1-byte value: a batch under
// 127 bytes that one large record takes past the limit; 0: of 3,000-byte
// values while two more fit), then one that takes what is left. Their
// timestamps go back and forth (the first is not the smallest, as in a
// compacted topic or the bench's data), as restored records' do. value
// makes an n-byte value.
func batchOfSize(t *testing.T, size int, base time.Time, lead int, value func(n int) []byte) []*kgo.Record {
	t.Helper()
	valueBytes := 3000
	if lead > 0 {
		valueBytes = 1
	}
	var recs []*kgo.Record
	ts := func(i int) time.Time { return base.Add(time.Duration((i%3)-1) * 1500 * time.Millisecond) }
	total := recordBatchOverhead
	for i := 0; ; i++ {
		key := []byte(fmt.Sprintf("key-%06d", i))
		tsDelta := ts(i).UnixMilli() - ts(0).UnixMilli()
		rest := size - total
		if lead > 0 && i < lead || lead == 0 && kafkaRecordBytes(i, tsDelta, len(key), 2*valueBytes) < rest {
			total += kafkaRecordBytes(i, tsDelta, len(key), valueBytes)
			recs = append(recs, &kgo.Record{Key: key, Value: value(valueBytes), Timestamp: ts(i)})
			continue
		}
		// The last record takes what is left: the largest value whose
		// record fits rest, which must be exactly rest.
		n := rest
		for n > 0 && kafkaRecordBytes(i, tsDelta, len(key), n) > rest {
			n--
		}
		if kafkaRecordBytes(i, tsDelta, len(key), n) != rest {
			t.Fatalf("no record of exactly %d bytes closes a batch of %d", rest, size)
		}
		return append(recs, &kgo.Record{Key: key, Value: value(n), Timestamp: ts(i)})
	}
}

// batchSizes records the batches a producer wrote: records and size as
// the broker measures it (61-byte header + the records as sent, compressed
// or not).
type batchSizes struct {
	mu      sync.Mutex
	batches [][2]int
}

func (b *batchSizes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches = append(b.batches, [2]int{m.NumRecords, recordBatchOverhead + m.CompressedBytes})
}

// take returns the batches written since the last take once they hold n
// records (franz-go may call the hook after Flush returns), waiting up to
// 10 seconds.
func (b *batchSizes) take(t *testing.T, n int) [][2]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got, sum := b.batches, 0
		for _, x := range got {
			sum += x[0]
		}
		if sum >= n || time.Now().After(deadline) {
			b.batches = nil
			b.mu.Unlock()
			if sum != n {
				t.Fatalf("the produced batches hold %d records, want %d: %v", sum, n, got)
			}
			return got
		}
		b.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBatchCapFitsMaxMessageBytes produces uncompressed records with the
// restore's per-topic batch cap (batchLimits) into real Kafka 4.4 topics,
// on Produce v8 (batchLimits.v8, as on every Kafka 4 broker) and on the
// version franz-go negotiates (v13 here; a broker without v8): records
// that fill a batch to one byte past max.message.bytes, of 3,000 bytes or
// a 1-byte one and a large one, and records that fill one exactly to it,
// uncompressed and with snappy on random values (which it sends
// uncompressed).
// The cap was max.message.bytes + 4 on v13, as if franz-go counted the
// 4-byte length of a non-flexible produce request's records field; on a
// flexible request it counts the compact length, uvarint(size+1), so its
// batches were up to 2 bytes over and the broker refused them with
// MESSAGE_TOO_LARGE (make bench's restore of a compacted topic at the
// default 1048588). A cap of max.message.bytes + uvarint(limit+1) bytes
// still lets the 1-byte record and the large one through. Manual flushing
// makes the batches deterministic; the caps and the versions are the
// restore's.
func TestBatchCapFitsMaxMessageBytes(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	addrs := k.Addrs()
	adm := testkit.Admin(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rnd := rand.NewChaCha8([32]byte{13})
	values := map[string]func(n int) []byte{
		"none": func(n int) []byte { return bytes.Repeat([]byte("v"), n) },
		// Random bytes: snappy does not shrink them, and franz-go sends
		// the batch uncompressed.
		"snappy": func(n int) []byte { b := make([]byte, n); rnd.Read(b); return b },
	}
	for _, v8 := range []bool{true, false} {
		// 8000: uvarint(size+1) is 2 bytes; 16384 and Kafka's default
		// max.message.bytes 1048588: 3 bytes.
		for _, limit := range []int{8000, 16384, 1048588} {
			for _, codec := range []string{"none", "snappy"} {
				t.Run(fmt.Sprintf("v8=%v/%d/%s", v8, limit, codec), func(t *testing.T) {
					topic := fmt.Sprintf("batch-cap-%v-%d-%s", v8, limit, codec)
					resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": ptrTo(fmt.Sprint(limit))}, topic)
					if err == nil {
						err = resp.Err
					}
					if err != nil {
						t.Fatal(err)
					}
					caps := batchLimits{v8: v8}
					caps.set(topic, int64(limit))
					hook := &batchSizes{}
					opts := []kgo.Opt{kgo.ProducerBatchMaxBytesFn(caps.get),
						kgo.ProducerBatchCompression(kgoCodec(codec)),
						kgo.ProducerLinger(0),
						kgo.RecordPartitioner(kgo.ManualPartitioner()),
						kgo.RecordRetries(3),
						kgo.ManualFlushing(),
						kgo.WithHooks(hook)}
					if v := caps.producerVersions(); v != nil {
						opts = append(opts, v)
					}
					cl := testkit.Client(t, addrs, opts...)
					produce := func(recs []*kgo.Record) []error {
						var (
							mu   sync.Mutex
							errs []error
						)
						for _, r := range recs {
							r.Topic, r.Partition = topic, 0
							cl.Produce(ctx, r, func(r *kgo.Record, err error) {
								if err != nil {
									mu.Lock()
									errs = append(errs, fmt.Errorf("record %q: %w", r.Key, err))
									mu.Unlock()
								}
							})
						}
						if err := cl.Flush(ctx); err != nil {
							t.Fatal(err)
						}
						return errs
					}
					// The first produce response tells franz-go the produce
					// version, and from then on it sizes batches for it.
					if errs := produce([]*kgo.Record{{Value: []byte("first")}}); len(errs) > 0 {
						t.Fatal(errs)
					}
					hook.take(t, 1)
					base := time.Now()

					for _, lead := range []int{0, 1} {
						over := batchOfSize(t, limit+1, base, lead, values[codec])
						errs := produce(over)
						for _, err := range errs {
							if !errors.Is(err, kerr.MessageTooLarge) {
								t.Errorf("unexpected produce error: %v", err)
							}
						}
						if len(errs) > 0 {
							t.Errorf("%d of %d records filling a batch to max.message.bytes+1 = %d bytes were refused, the first: %v", len(errs), len(over), limit+1, errs[0])
						}
						for _, b := range hook.take(t, len(over)-len(errs)) {
							if b[1] > limit {
								t.Errorf("a batch of %d records and %d bytes was written to a topic with max.message.bytes %d", b[0], b[1], limit)
							}
						}
					}

					// On v8 the cap costs nothing: records filling a batch to
					// exactly max.message.bytes go in one batch. On a flexible
					// version a batch ends 1 or 2 bytes short of it.
					exact := batchOfSize(t, limit, base, 0, values[codec])
					if errs := produce(exact); len(errs) > 0 {
						t.Fatalf("%d of %d records filling a batch to max.message.bytes were refused, the first: %v", len(errs), len(exact), errs[0])
					}
					got := hook.take(t, len(exact))
					if v8 && (len(got) != 1 || got[0] != [2]int{len(exact), limit}) {
						t.Errorf("records of one %d-byte batch were written as %v ([records bytes] per batch), want one batch of %d records", limit, got, len(exact))
					}
					for _, b := range got {
						if b[1] > limit {
							t.Errorf("a batch of %d records and %d bytes was written to a topic with max.message.bytes %d", b[0], b[1], limit)
						}
					}
				})
			}
		}
	}
}
