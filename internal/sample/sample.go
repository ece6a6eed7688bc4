// Package sample seeds a cluster with the topics of a small Kafka Streams
// application ("order-processor") exercising everything a backup must keep:
// null and empty keys and values, tombstones, duplicate and null headers,
// transactional changelog writes with aborted transactions, a compacted
// source-topic changelog, a topic whose log start is above 0, an empty
// partition, repartition and foreign-key-join topics (never backed up), and a
// second application whose id starts with this one's. The embedded
// quickstart and the tests use it; ReadCommitted is the independent oracle
// the tests compare backups with.
package sample

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
)

// AppID is the sample application's application.id.
const AppID = "order-processor"

// Topic names of the sample application.
const (
	Orders      = "orders"                                                               // input, 3 partitions
	Customers   = "customers"                                                            // input reused as a store's changelog (compacted)
	Totals      = "customer-totals"                                                      // output; partition 1 stays empty
	Payments    = "payments"                                                             // input whose log start is above 0
	Changelog   = "order-processor-order-totals-store-changelog"                         // changelog written in transactions
	Repartition = "order-processor-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition" // never backed up
	FKTopic     = "order-processor-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
	Audit       = "audit-log" // message.timestamp.type=LogAppendTime: the broker sets timestamps
	OtherApp    = "order-processor-v1"
	OtherTopic  = "order-processor-v1-counts-changelog" // another app's changelog: not ours
)

// Include and Exclude are the sample config's topic filters.
var (
	Include = []string{Orders, Customers, Totals, Payments, Audit, "order-processor-*"}
	Exclude = []string{}
	// SourceChangelogs are the inputs the sample app reuses as changelogs.
	SourceChangelogs = []string{Customers}
	// BackedUp are the topics a backup of the sample must hold.
	BackedUp = []string{Totals, Customers, Changelog, Orders, Payments, Audit}
)

func ptr(s string) *string { return &s }

// Seed creates the sample topics on the cluster cl talks to and produces the
// sample data. It returns an error naming the step that failed. It is not
// idempotent: run it against an empty cluster.
func Seed(ctx context.Context, cl *kgo.Client) error {
	adm := kadm.NewClient(cl)
	type spec struct {
		name    string
		parts   int32
		configs map[string]*string
	}
	compact := map[string]*string{"cleanup.policy": ptr("compact"), "min.cleanable.dirty.ratio": ptr("0.01"), "segment.ms": ptr("100"), "delete.retention.ms": ptr("100")}
	specs := []spec{
		{Orders, 3, map[string]*string{"retention.ms": ptr("604800000")}},
		{Customers, 2, compact},
		{Totals, 2, map[string]*string{"max.message.bytes": ptr("2097152")}},
		{Payments, 1, nil},
		{Changelog, 2, map[string]*string{"cleanup.policy": ptr("compact"), "min.insync.replicas": ptr("1")}},
		{Repartition, 3, nil},
		{FKTopic, 1, nil},
		{OtherTopic, 1, map[string]*string{"cleanup.policy": ptr("compact")}},
		{Audit, 1, map[string]*string{"message.timestamp.type": ptr("LogAppendTime")}},
	}
	for _, s := range specs {
		resp, err := adm.CreateTopic(ctx, s.parts, -1, s.configs, s.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %q: %w", s.name, err)
		}
	}
	if err := waitLeaders(ctx, adm, len(specs)); err != nil {
		return err
	}

	p, err := kgo.NewClient(append(clientOpts(cl), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer p.Close()
	// Recent timestamps: time-based retention would delete older records.
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	add := func(topic string, part int32, key, val []byte, hs ...kgo.RecordHeader) {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Key: key, Value: val, Headers: hs,
			Timestamp: base.Add(time.Duration(len(recs)) * time.Second)})
	}
	for i := range 60 {
		part := int32(i % 3)
		key := []byte(fmt.Sprintf("order-%03d", i))
		val := []byte(fmt.Sprintf(`{"order":%d,"customer":"cust-%d","amount":%d}`, i, i%5, 10+i))
		switch i % 10 {
		case 3:
			key = nil // null key
		case 4:
			key = []byte{} // empty key
		case 5:
			val = []byte{} // empty value
		case 6:
			val = nil // null value on a non-compacted topic
		}
		var hs []kgo.RecordHeader
		if i%4 == 0 {
			hs = []kgo.RecordHeader{
				{Key: "x-tag", Value: []byte("tag1")}, {Key: "x-tag", Value: []byte("tag2")},
				{Key: "trace-id", Value: nil}, {Key: "empty", Value: []byte{}},
				{Key: "kafka_replyPartition", Value: []byte{0, 0, 0, 3}}, {Key: "bin", Value: []byte{0xff, 0xfe, 0}},
			}
		}
		add(Orders, part, key, val, hs...)
	}
	for round := range 3 {
		for c := range 6 {
			key := []byte(fmt.Sprintf("cust-%d", c))
			val := []byte(fmt.Sprintf(`{"name":"customer %d","v":%d}`, c, round))
			if round == 2 && c == 1 {
				val = nil // tombstone
			}
			if round == 2 && c == 2 {
				val = []byte{} // empty, not a delete
			}
			add(Customers, int32(c%2), key, val)
		}
	}
	for i := range 5 {
		add(Totals, 0, []byte(fmt.Sprintf("cust-%d", i)), []byte(fmt.Sprintf("%d", 100*i)))
	}
	for i := range 20 {
		add(Payments, 0, []byte(fmt.Sprintf("pay-%d", i)), []byte(fmt.Sprintf("%d", i)))
	}
	for i := range 9 {
		add(Repartition, int32(i%3), []byte(fmt.Sprintf("cust-%d", i%5)), []byte("1"))
	}
	add(FKTopic, 0, []byte("k"), []byte("subscription"))
	for i := range 3 {
		add(Audit, 0, []byte(fmt.Sprintf("event-%d", i)), []byte("login"))
	}
	add(OtherTopic, 0, []byte("k"), []byte("other app"))
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce sample records: %w", err)
	}
	// A second round of customers after the first segments rolled, so the
	// cleaner has something to compact.
	time.Sleep(200 * time.Millisecond)
	var more []*kgo.Record
	for c := range 6 {
		more = append(more, &kgo.Record{Topic: Customers, Partition: int32(c % 2), Key: []byte(fmt.Sprintf("cust-%d", c)),
			Value: []byte(fmt.Sprintf(`{"name":"customer %d","v":3}`, c)), Timestamp: base.Add(time.Hour)})
	}
	if err := p.ProduceSync(ctx, more...).FirstErr(); err != nil {
		return fmt.Errorf("produce sample customers: %w", err)
	}

	if err := produceTransactions(ctx, cl, base); err != nil {
		return err
	}

	// Log start above 0: delete the first 8 payments.
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{Payments: {0: {Topic: Payments, Partition: 0, At: 8, LeaderEpoch: -1}}})
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		return fmt.Errorf("delete records of %q: %w", Payments, err)
	}

	// Committed offsets of the application (and of the other application).
	offs := kadm.Offsets{}
	offs.AddOffset(Orders, 0, 12, -1)
	offs.AddOffset(Orders, 1, 20, -1)
	offs.AddOffset(Orders, 2, 5, -1)
	offs.AddOffset(Customers, 0, 9, -1)
	offs.AddOffset(Payments, 0, 15, -1)
	offs.AddOffset(Repartition, 0, 2, -1)
	if err := adm.CommitAllOffsets(ctx, AppID, offs); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", AppID, err)
	}
	other := kadm.Offsets{}
	other.AddOffset(OtherTopic, 0, 1, -1)
	if err := adm.CommitAllOffsets(ctx, OtherApp, other); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", OtherApp, err)
	}
	return nil
}

// produceTransactions writes the changelog like an exactly_once_v2 Streams
// app: committed and aborted transactions interleaved, so the log holds
// aborted records and commit/abort markers.
func produceTransactions(ctx context.Context, cl *kgo.Client, base time.Time) error {
	tp, err := kgo.NewClient(append(clientOpts(cl), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("sample-"+AppID), kgo.TransactionTimeout(10*time.Second))...)
	if err != nil {
		return err
	}
	defer tp.Close()
	for txn := range 4 {
		if err := tp.BeginTransaction(); err != nil {
			return fmt.Errorf("begin transaction: %w", err)
		}
		var recs []*kgo.Record
		for part := range int32(2) {
			for k := range 3 {
				recs = append(recs, &kgo.Record{Topic: Changelog, Partition: part,
					Key:       []byte(fmt.Sprintf("cust-%d", k)),
					Value:     []byte(fmt.Sprintf("total-txn%d", txn)),
					Timestamp: base.Add(time.Duration(txn) * time.Minute)})
			}
		}
		if err := tp.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce in transaction: %w", err)
		}
		commit := kgo.TransactionEndTry(txn != 1) // transaction 1 is aborted
		if err := tp.EndTransaction(ctx, commit); err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
	}
	return nil
}

func clientOpts(cl *kgo.Client) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...)}
	// A cluster with SASL or TLS is seeded with cl's.
	if ms, ok := cl.OptValue(kgo.SASL).([]sasl.Mechanism); ok && len(ms) > 0 {
		opts = append(opts, kgo.SASL(ms...))
	}
	if c, ok := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); ok && c != nil {
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	return opts
}

func waitLeaders(ctx context.Context, adm *kadm.Client, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx)
		if err == nil {
			ok := 0
			for _, td := range md.Topics {
				all := td.Err == nil
				for _, pd := range td.Partitions {
					if pd.Leader < 0 || pd.Err != nil {
						all = false
					}
				}
				if all && !td.IsInternal {
					ok++
				}
			}
			if ok >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics have no leaders after 30s: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ReadCommitted reads every committed record of topic below the given end
// offsets (per partition) with franz-go's own consumer (read_committed), an
// implementation independent of the backup's fetch loop: it is the oracle the
// tests compare backups with. The data must be at rest. A partition is read
// once its record at end-1 came, a transaction marker included (markers
// are not returned); one whose last offsets hold no record (compacted
// away) once no record has come for 5 s (ReadQuiet). It stopped at the first poll that returned nothing
// for half a second, which a loaded machine (the race detector, 2 cores)
// made the first poll: "the source has 0" records.
func ReadCommitted(ctx context.Context, seeds []string, topic string, ends map[int32]int64) ([]format.Record, error) {
	parts := map[int32]kgo.Offset{}
	for p, e := range ends {
		if e > 0 {
			parts[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	// KeepControlRecords: a transaction marker at end-1 ends the partition
	// too (it is not returned).
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []format.Record
	deadline := time.Now().Add(60 * time.Second)
	moved := time.Now()
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fs.EachError(func(t string, p int32, e error) {
			if !errors.Is(e, context.DeadlineExceeded) && err == nil {
				err = fmt.Errorf("read %q partition %d: %w", t, p, e)
			}
		})
		if err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			moved = time.Now()
			if r.Offset < ends[r.Partition] && !r.Attrs.IsControl() {
				out = append(out, FromKgo(r))
			}
			if _, left := parts[r.Partition]; left && r.Offset >= ends[r.Partition]-1 {
				delete(parts, r.Partition)
			}
		})
		if len(parts) == 0 || time.Since(moved) > ReadQuiet {
			return out, nil
		}
	}
	return nil, fmt.Errorf("read %q: still receiving records after 60s", topic)
}

// ReadQuiet is how long ReadCommitted waits for a record before it takes a
// partition not read to its end offset as holding no more committed
// records.
const ReadQuiet = 5 * time.Second

// FromKgo converts a franz-go record.
func FromKgo(r *kgo.Record) format.Record {
	fr := format.Record{Partition: r.Partition, Offset: r.Offset, Timestamp: kgotime.Millis(r.Timestamp),
		TimestampType: format.TimestampType(max(r.Attrs.TimestampType(), 0)), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		fr.Headers = append(fr.Headers, format.Header{Key: h.Key, Value: h.Value})
	}
	return fr
}
