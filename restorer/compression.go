package restorer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// This file holds the restore's producers: one franz-go client per
// compression codec in use, each producing several record batches per
// partition at once (produce.go), and the checks that nobody else writes
// to a partition being restored.

// Compression names the codec the restore's producer compresses record
// batches with (Options.Compression, config key restore.compression):
// "none", "gzip", "snappy", "lz4", "zstd", or CompressionSource.
// Compression is of batches, not records: the records (key, value,
// headers, timestamp, offset order) are restored byte for byte whatever
// the codec.
type Compression = string

// The compression settings.
const (
	// CompressionSource (the default) compresses each topic's batches
	// with the codec its source topic's compression.type names (the
	// manifest's topic configs: gzip, snappy, lz4, zstd or uncompressed),
	// so that a target topic created with the same compression.type
	// keeps the batches as produced; a source topic with
	// compression.type=producer (Kafka's default) or none recorded gets
	// DefaultCompression.
	CompressionSource Compression = "source"
	// DefaultCompression is the codec of a topic whose source codec is
	// not known under CompressionSource: snappy, franz-go's default and
	// what restores used before per-topic codecs. none was faster into
	// an in-process broker (snappy took 0.9-1.45x its time) but not
	// reliably into a real one (docs/OPERATIONS.md, "Restore
	// throughput"), and snappy sends less over the network. It was
	// also chosen over none to avoid the MESSAGE_TOO_LARGE make bench
	// met on a compacted topic: that was the batch cap, not the codec
	// (batches filled to 1 byte past max.message.bytes on flexible
	// produce requests; snappy sends incompressible batches
	// uncompressed, and they failed too), fixed for every codec in the
	// batch cap (batchLimits, maxProduceVersion;
	// TestBatchCapFitsMaxMessageBytes).
	DefaultCompression Compression = "snappy"
)

// DefaultMaxBufferedBytes is Options.MaxBufferedBytes' default: 32 MiB
// of record keys, values and headers buffered or in flight in each
// producer (kgo.MaxBufferedBytes). A plan with a topic whose
// max.message.bytes is larger raises it to that.
const DefaultMaxBufferedBytes = 32 << 20

// maxBufferedRecords bounds the records buffered or in flight in each
// producer (kgo.MaxBufferedRecords; franz-go's default is 10,000): high
// enough that MaxBufferedBytes bounds it for records of a few dozen
// bytes and up, low enough to keep the records' own structs (~200 bytes
// each) small.
const maxBufferedRecords = 200_000

// ParseCompression checks a restore.compression setting: "" is
// CompressionSource. The error names the values accepted.
func ParseCompression(s string) (Compression, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "":
		return CompressionSource, nil
	case CompressionSource, "none", "gzip", "snappy", "lz4", "zstd":
		return s, nil
	}
	return "", fmt.Errorf("unknown restore compression %q: use none, gzip, snappy, lz4, zstd or source", s)
}

// codecOf is the codec the restore produces topic t's batches with under
// setting (ParseCompression's values).
func codecOf(t *format.Topic, setting Compression) string {
	if setting != "" && setting != CompressionSource {
		return setting
	}
	if t != nil {
		if c, ok := t.Configs["compression.type"]; ok && c.Value != nil {
			switch v := strings.ToLower(*c.Value); v {
			case "gzip", "snappy", "lz4", "zstd":
				return v
			case "uncompressed":
				return "none"
			}
		}
	}
	return DefaultCompression
}

func kgoCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// producerFor is the client producing topic plan tp's records: one per
// codec (franz-go compresses by client, not by topic), made on first use
// with the restore's own client options. Safe for concurrent use.
func (r *restore) producerFor(tp *TopicPlan) (*kgo.Client, error) {
	codec := codecOf(topicOf(r.sel, tp.Topic), r.o.Compression)
	r.prodMu.Lock()
	defer r.prodMu.Unlock()
	if cl, ok := r.producers[codec]; ok {
		return cl, nil
	}
	buffered := r.o.MaxBufferedBytes
	if buffered <= 0 {
		buffered = DefaultMaxBufferedBytes
	}
	// franz-go fails a record larger than the whole buffer (as
	// MESSAGE_TOO_LARGE): the buffer holds at least one record of the
	// largest the plan's topics take.
	if r.plan != nil {
		for _, t := range r.plan.Topics {
			buffered = max(buffered, int(min(t.MaxMessageBytes, 1<<30)))
		}
	}
	opts := slices.Clone(r.clientOpts)
	if v := r.batches.producerVersions(); v != nil {
		opts = append(opts, v)
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.ProducerBatchCompression(kgoCodec(codec)),
		// No linger (franz-go's default is 10ms): a partition's last
		// batch is sent at once, not after 10ms, which 2,000 partitions
		// of a few records each, Options.Concurrency at a time, would
		// wait for one after the other; while requests are in flight
		// (five per broker) records gather into batches anyway.
		kgo.ProducerLinger(0),
		kgo.MaxBufferedBytes(buffered),
		kgo.MaxBufferedRecords(maxBufferedRecords))...)
	if err != nil {
		return nil, fmt.Errorf("target cluster producer (%s compression): %w", codec, err)
	}
	if r.producers == nil {
		r.producers = map[string]*kgo.Client{}
	}
	r.producers[codec] = cl
	r.log.Debug("producer", "compression", codec, "max_buffered_bytes", buffered)
	return cl, nil
}

// closeProducers closes every client producerFor made.
func (r *restore) closeProducers() {
	r.prodMu.Lock()
	defer r.prodMu.Unlock()
	for _, cl := range r.producers {
		cl.Close()
	}
	r.producers = nil
}

// errStopped tells eachRecord to stop reading: an earlier chunk of the
// partition failed, and its error is returned instead.
var errStopped = errors.New("the partition's produce failed")

// foreignWriter is the error of a record acknowledged at offset got where
// the partition's offset map says the restore's next record goes (want):
// another producer wrote in between (docs/DOMAIN.md#field-case-19 A4).
func foreignWriter(topic string, partition int32, got, want int64) error {
	return fmt.Errorf("topic %q partition %d: the restore's record landed at offset %d, but this restore wrote up to %d: another producer is writing to it; stop it, delete the topic and restore again",
		topic, partition, got, want)
}
