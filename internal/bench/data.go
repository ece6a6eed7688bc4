package bench

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicSpec is one generated topic.
type TopicSpec struct {
	Name       string
	Partitions int32
	// Compact makes it cleanup.policy=compact (keys are customer ids:
	// few, updated again and again).
	Compact bool
	// Bytes is the logical size to produce (keys + values + headers);
	// Records, when above 0, is the record count per partition instead.
	Bytes   int64
	Records int64
}

// Dataset is what one case backs up: its topics and the application's
// consumer group (the application.id), whose offsets are committed on
// every partition of the non-compacted topics.
type Dataset struct {
	AppID  string
	Topics []TopicSpec
}

// Produced is what Generate wrote.
type Produced struct {
	Records int64
	Bytes   int64 // keys + values + header keys and values
	// Partitions is the partition count over all topics.
	Partitions int
}

// ProducerCompression is the codec the generator's producer uses, as many
// real applications set (compression.type=lz4); kcat -P uses it too.
const ProducerCompression = "lz4"

// Generate creates the dataset's topics (a topic that exists is used as it
// is: a second call adds records) and produces their records with a
// franz-go producer (lz4 batches, linger 5 ms, acks=all, idempotent),
// timestamps now (never older than the topics' retention.ms, 7 days by
// default), then commits the application's group offsets: on each
// partition of a non-compacted topic, at 90% of its end (an application
// lagging a little). Keys are ids with skew (Zipf over 100,000 order ids
// and 10,000 customer ids); values are JSON-like orders or customers of
// 100 B to 4 KiB, most of them 300 B to 1 KiB; three headers each.
func Generate(ctx context.Context, addrs []string, ds Dataset, seed uint64) (Produced, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addrs...),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedBytes(64 << 20),
		kgo.ProducerBatchMaxBytes(1 << 20),
	}
	// keyed partitions by key (Kafka's murmur2, as the Java client);
	// manual puts a Records topic's records on the partition set.
	keyed, err := kgo.NewClient(opts...)
	if err != nil {
		return Produced{}, err
	}
	defer keyed.Close()
	manual, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return Produced{}, err
	}
	defer manual.Close()
	adm := kadm.NewClient(keyed)
	if err := createTopics(ctx, adm, ds.Topics); err != nil {
		return Produced{}, err
	}

	var out Produced
	var mu sync.Mutex
	var firstErr error
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("produce to %s partition %d: %w", r.Topic, r.Partition, err)
			}
			mu.Unlock()
		}
	}
	var cl *kgo.Client
	produce := func(r *kgo.Record) {
		out.Bytes += recordBytes(r)
		out.Records++
		cl.Produce(ctx, r, promise)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, t := range ds.Topics {
		out.Partitions += int(t.Partitions)
		g := newGenerator(rng, t.Compact)
		cl = keyed
		if t.Records > 0 {
			cl = manual
			for p := range t.Partitions {
				for range t.Records {
					r := g.record(t.Name)
					r.Partition = p
					produce(r)
				}
			}
		} else {
			for end := out.Bytes + t.Bytes; out.Bytes < end && ctx.Err() == nil; {
				produce(g.record(t.Name))
			}
		}
		if err := cl.Flush(ctx); err != nil {
			return Produced{}, err
		}
		mu.Lock()
		err := firstErr
		mu.Unlock()
		if err != nil {
			return Produced{}, err
		}
		if t.Records > 0 {
			if err := checkPerPartition(ctx, adm, t); err != nil {
				return Produced{}, err
			}
		}
	}
	if err := commitGroup(ctx, adm, ds); err != nil {
		return Produced{}, err
	}
	return out, nil
}

// checkPerPartition checks that each partition of a Records topic ends at
// t.Records (a topic created by this run: its offsets start at 0).
func checkPerPartition(ctx context.Context, adm *kadm.Client, t TopicSpec) error {
	ends, err := adm.ListEndOffsets(ctx, t.Name)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list end offsets of %s: %w", t.Name, err)
	}
	var bad error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != t.Records && bad == nil {
			bad = fmt.Errorf("%s partition %d ends at %d, want %d records per partition", t.Name, o.Partition, o.Offset, t.Records)
		}
	})
	return bad
}

// commitGroup commits the application's group offsets at 90% of each
// non-compacted partition's end (at least 1 when it holds a record).
func commitGroup(ctx context.Context, adm *kadm.Client, ds Dataset) error {
	var names []string
	for _, t := range ds.Topics {
		if !t.Compact {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return fmt.Errorf("list end offsets of %v: %w", names, err)
	}
	offs := make(kadm.Offsets)
	if err := ends.Error(); err != nil {
		return fmt.Errorf("list end offsets of %v: %w", names, err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		at := o.Offset * 9 / 10
		if at == 0 && o.Offset > 0 {
			at = 1
		}
		offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: at, LeaderEpoch: -1})
	})
	resp, err := adm.CommitOffsets(ctx, ds.AppID, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit the offsets of group %s: %w", ds.AppID, err)
	}
	return nil
}

// recordBytes is the logical size of a record: key, value, header keys
// and values (the MB of MB/s).
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

func createTopics(ctx context.Context, adm *kadm.Client, topics []TopicSpec) error {
	for _, t := range topics {
		cfg := map[string]*string{}
		if t.Compact {
			compact := "compact"
			cfg["cleanup.policy"] = &compact
		}
		resp, err := adm.CreateTopic(ctx, t.Partitions, 1, cfg, t.Name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create topic %s (%d partitions): %w", t.Name, t.Partitions, err)
		}
	}
	return nil
}

// generator makes one topic's records.
type generator struct {
	rng      *rand.Rand
	compact  bool
	orders   *rand.Zipf
	customer *rand.Zipf
	seq      int64
}

func newGenerator(rng *rand.Rand, compact bool) *generator {
	return &generator{
		rng:      rng,
		compact:  compact,
		orders:   rand.NewZipf(rng, 1.1, 4, 99_999),
		customer: rand.NewZipf(rng, 1.2, 8, 9_999),
	}
}

var (
	words    = []string{"express", "standard", "gift", "fragile", "priority", "return", "warehouse", "north", "south", "east", "west", "pending", "paid", "shipped", "delivered", "cancelled", "blue", "large", "small", "premium", "discount", "bundle", "voucher", "weekend"}
	statuses = []string{"CREATED", "PAID", "PACKED", "SHIPPED", "DELIVERED", "RETURNED"}
	cities   = []string{"Berlin", "Lisbon", "Oslo", "Madrid", "Warsaw", "Dublin", "Vienna", "Prague", "Milan", "Lyon"}
)

// valueSize draws a value size in bytes from 100 B to 4 KiB: a log-normal
// around 600 B (most values 300 B to 1 KiB, a tail to 4 KiB).
func (g *generator) valueSize() int {
	s := int(600 * math.Exp(g.rng.NormFloat64()*0.6))
	return min(max(s, 100), 4096)
}

func (g *generator) record(topic string) *kgo.Record {
	g.seq++
	var key, value []byte
	if g.compact {
		key = []byte("c-" + strconv.FormatUint(g.customer.Uint64(), 10))
		value = g.customerValue(string(key))
	} else {
		key = []byte("o-" + strconv.FormatUint(g.orders.Uint64(), 10))
		value = g.orderValue(string(key))
	}
	var trace [8]byte
	for i := range trace {
		trace[i] = byte(g.rng.Uint32())
	}
	return &kgo.Record{
		Topic: topic,
		Key:   key,
		Value: value,
		Headers: []kgo.RecordHeader{
			{Key: "trace-id", Value: []byte(hex.EncodeToString(trace[:]))},
			{Key: "source", Value: []byte("checkout-service")},
			{Key: "schema-version", Value: []byte("3")},
		},
	}
}

// orderValue is a JSON order of about valueSize bytes: its items repeat
// until the size is reached. No tab or newline (kcat -P reads lines).
func (g *generator) orderValue(id string) []byte {
	want := g.valueSize()
	b := make([]byte, 0, want+160)
	b = append(b, `{"order_id":"`...)
	b = append(b, id...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, g.seq, 10)
	b = append(b, `,"customer":"c-`...)
	b = strconv.AppendUint(b, g.customer.Uint64(), 10)
	b = append(b, `","status":"`...)
	b = append(b, statuses[g.rng.IntN(len(statuses))]...)
	b = append(b, `","created_at":`...)
	b = strconv.AppendInt(b, time.Now().UnixMilli()-int64(g.rng.IntN(3_600_000)), 10)
	b = append(b, `,"items":[`...)
	for i := 0; len(b) < want-40; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"sku":"SKU-`...)
		b = strconv.AppendInt(b, int64(g.rng.IntN(50_000)), 10)
		b = append(b, `","qty":`...)
		b = strconv.AppendInt(b, int64(1+g.rng.IntN(5)), 10)
		b = append(b, `,"price":`...)
		b = strconv.AppendFloat(b, float64(g.rng.IntN(100_000))/100, 'f', 2, 64)
		b = append(b, `,"tag":"`...)
		b = append(b, words[g.rng.IntN(len(words))]...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"currency":"EUR"}`...)
	return b
}

// customerValue is a JSON customer record of about valueSize bytes.
func (g *generator) customerValue(id string) []byte {
	want := g.valueSize()
	b := make([]byte, 0, want+160)
	b = append(b, `{"customer_id":"`...)
	b = append(b, id...)
	b = append(b, `","city":"`...)
	b = append(b, cities[g.rng.IntN(len(cities))]...)
	b = append(b, `","updated_at":`...)
	b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
	b = append(b, `,"notes":"`...)
	for len(b) < want-2 {
		b = append(b, words[g.rng.IntN(len(words))]...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(g.rng.IntN(1000)), 10)
		b = append(b, ' ')
	}
	b = append(b, `"}`...)
	return b
}
