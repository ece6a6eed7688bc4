package backup_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Names of the in-flight test application: one input, one repartition topic.
const (
	inflightApp   = "inflight-app"
	inflightInput = "inflight-input"
	inflightTopic = inflightApp + "-KSTREAM-REPARTITION-0000000001-repartition"
)

// txnProduce writes recs in one transaction of producer txID and commits
// it, or aborts it when commit is false.
func txnProduce(t *testing.T, addrs []string, txID string, commit bool, recs ...*kgo.Record) {
	t.Helper()
	cl := testkit.Client(t, addrs, kgo.TransactionalID(txID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// waitHighWatermark waits (up to a minute) until partition of topic has
// high watermark want: the offset after the transaction marker the
// producer's last EndTxn has the coordinator write.
func waitHighWatermark(t *testing.T, adm *kadm.Client, topic string, partition int32, want int64) {
	t.Helper()
	var got int64 = -1
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ends, err := adm.ListEndOffsets(t.Context(), topic)
		if err != nil {
			continue
		}
		if o, ok := ends.Lookup(topic, partition); ok && o.Err == nil {
			if got = o.Offset; got >= want {
				break
			}
		}
	}
	if got != want {
		t.Fatalf("%s[%d]: high watermark %d, want %d (the transaction marker written)", topic, partition, got, want)
	}
}

func repRecords(p int32, from, n int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < from+n; i++ {
		out = append(out, &kgo.Record{Topic: inflightTopic, Partition: p, Key: []byte(fmt.Sprintf("k%d-%d", p, i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}})
	}
	return out
}

// TestBackupCapturesInFlightTailsOnKafka: on a real Kafka 4.4 broker, with
// transactional writes into a repartition topic (committed and aborted
// transactions, and one still open at the cut), the backup holds each
// partition's tail exactly (docs/DOMAIN.md#in-flight): partition 0 from
// the group's committed offset, partition 1 (never committed) from the log
// start, partition 2 from the log start because the group committed below
// it; every tail ends at the high watermark without the records of the
// transaction open at the cut, and holds record for record what kcat
// (read_committed) reads in that range. The old code only counted them
// from the high watermark.
func TestBackupCapturesInFlightTailsOnKafka(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	addrs := k.Addrs()
	adm := testkit.Admin(t, addrs)
	ctx := t.Context()
	for topic, parts := range map[string]int32{inflightInput: 1, inflightTopic: 3} {
		if resp, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	txnProduce(t, addrs, "up-0", true, &kgo.Record{Topic: inflightInput, Partition: 0, Value: []byte("in")})
	// Partition 0: 5 committed (0-4, marker 5), 2 aborted (6-7, marker
	// 8), 3 committed (9-11, marker 12).
	txnProduce(t, addrs, "up-1", true, repRecords(0, 0, 5)...)
	txnProduce(t, addrs, "up-1", false, repRecords(0, 5, 2)...)
	txnProduce(t, addrs, "up-1", true, repRecords(0, 7, 3)...)
	// Partition 1: 4 committed (0-3, marker 4), then a transaction still
	// open at the cut (5-6): above the last stable offset.
	txnProduce(t, addrs, "up-2", true, repRecords(1, 0, 4)...)
	open := testkit.Client(t, addrs, kgo.TransactionalID("up-open"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, repRecords(1, 100, 2)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer open.EndTransaction(context.WithoutCancel(ctx), kgo.TryAbort) //nolint:errcheck // cleanup
	// Partition 2: 6 committed (0-5, marker 6), the first 3 deleted.
	txnProduce(t, addrs, "up-3", true, repRecords(2, 0, 6)...)
	if dr, err := adm.DeleteRecords(ctx, kadm.Offsets{inflightTopic: {2: {Topic: inflightTopic, Partition: 2, At: 3, LeaderEpoch: -1}}}); err != nil || dr.Error() != nil {
		t.Fatalf("delete records: %v %v", err, dr.Error())
	}
	offs := kadm.Offsets{}
	offs.AddOffset(inflightInput, 0, 1, -1)
	offs.AddOffset(inflightTopic, 0, 3, -1)
	offs.AddOffset(inflightTopic, 2, 1, -1) // below the log start 3
	if err := adm.CommitAllOffsets(ctx, inflightApp, offs); err != nil {
		t.Fatal(err)
	}

	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(addrs...)}, Store: store,
		ApplicationID: inflightApp, Include: []string{inflightInput, inflightApp + "-*"}})
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	if backupcheck.Topic(m, inflightTopic) != nil {
		t.Errorf("repartition topic %q is in topics: its tail is captured, never the topic as data", inflightTopic)
	}
	tail := backupcheck.InFlight(m, inflightTopic)
	if tail == nil {
		t.Fatalf("manifest in_flight %+v holds no tail of %q", m.InFlight, inflightTopic)
	}
	if tail.Class != "repartition" || tail.Partitions != 3 || tail.ReplicationFactor != 1 {
		t.Errorf("in-flight topic: class %q partitions %d replication factor %d; want repartition, 3, 1", tail.Class, tail.Partitions, tail.ReplicationFactor)
	}
	if v := tail.Configs["cleanup.policy"].Value; v == nil || *v != "delete" {
		t.Errorf("in-flight topic configs %+v: cleanup.policy not recorded", tail.Configs)
	}
	type want struct{ start, end, records int64 }
	wants := []want{
		{3, 13, 2 + 3}, // from the committed offset 3: records 3, 4 and 9-11 (6-7 aborted)
		{0, 7, 4},      // never committed: from the log start to the high watermark, without the transaction open at the cut
		{3, 7, 3},      // committed 1, below the log start 3
	}
	var total int64
	for i, w := range wants {
		p := tail.PartitionCuts[i]
		if p.StartOffset != w.start || p.EndOffset != w.end || p.Records != w.records {
			t.Errorf("tail of partition %d: [%d, %d) with %d records; want [%d, %d) with %d", i, p.StartOffset, p.EndOffset, p.Records, w.start, w.end, w.records)
		}
		total += w.records
		// kcat, an independent client, reads the same range read_committed.
		var exp []format.Record
		for _, km := range testkit.KcatConsume(t, k.Bootstrap(), inflightTopic, "-p", strconv.Itoa(i), "-X", "isolation.level=read_committed") {
			if km.Offset >= p.StartOffset && km.Offset < p.EndOffset {
				exp = append(exp, format.Record{Offset: km.Offset, Timestamp: km.Ts, Key: []byte(*km.Key), Value: []byte(*km.Payload),
					Headers: []format.Header{{Key: *km.Headers[0], Value: []byte(*km.Headers[1])}}})
			}
		}
		got := backupcheck.Records(t, store, m, inflightTopic, int32(i))
		if len(got) != len(exp) {
			t.Fatalf("tail of partition %d: backup holds %d records, kcat reads %d in [%d, %d)", i, len(got), len(exp), p.StartOffset, p.EndOffset)
		}
		for j := range got {
			g, e := got[j], exp[j]
			if g.Offset != e.Offset || g.Timestamp != e.Timestamp || string(g.Key) != string(e.Key) || string(g.Value) != string(e.Value) ||
				len(g.Headers) != 1 || g.Headers[0].Key != e.Headers[0].Key || string(g.Headers[0].Value) != string(e.Headers[0].Value) {
				t.Errorf("tail of partition %d record %d: backup %+v, kcat %+v", i, j, g, e)
			}
		}
	}
	if res.InFlightRecords != total || m.InFlightRecords() != total || res.InFlightTopics != 1 {
		t.Errorf("result in flight: %d records in %d topics, manifest %d; want %d in 1", res.InFlightRecords, res.InFlightTopics, m.InFlightRecords(), total)
	}
	for _, o := range m.Group.Offsets {
		if o.Topic == inflightTopic && o.EndOffset != tail.PartitionCuts[o.Partition].EndOffset {
			t.Errorf("group offset %+v: end_offset is not the tail's end %d", o, tail.PartitionCuts[o.Partition].EndOffset)
		}
	}
}

// TestUncapturedInFlightTailIsWarned: a tail the broker keeps answering
// with no records (until retry_timeout) is not captured: the backup warns
// that a changelog restore cannot bring those records back (tails are not
// chained, so no later backup reads them; the HW-based count said nothing
// of this), ends the tail where reading stopped and reports it unread.
func TestUncapturedInFlightTailIsWarned(t *testing.T) {
	const app = "tails-app"
	const rep = app + "-KSTREAM-REPARTITION-0000000001-repartition"
	kf := testkit.StartKfake(t, 1)
	adm := testkit.Admin(t, kf.Addrs())
	for _, topic := range []string{"tails-input", rep} {
		if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	cl := manualClient(t, kf.Addrs())
	produce(t, cl, "tails-input", 0, 0, 3)
	produce(t, cl, rep, 0, 0, 10)
	ds, err := adm.ListTopics(t.Context(), rep)
	if err != nil || ds[rep].Err != nil {
		t.Fatal(err, ds[rep].Err)
	}
	repID := ds[rep].ID
	kf.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		for _, rt := range req.Topics {
			if rt.Topic == rep || rt.TopicID == repID {
				return emptyFetch(req, 10), nil, true
			}
		}
		return nil, nil, false
	})
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
		ApplicationID: app, Include: []string{"tails-input"}, RetryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, fmt.Sprintf("in-flight tail of topic %q partition 0: offsets 0..9 could not be captured", rep)) &&
			strings.Contains(w, "a changelog restore of this backup cannot bring those records back")
	}
	if !warned {
		t.Errorf("warnings %q do not say the tail could not be captured", res.Warnings)
	}
	if len(res.Unread) != 1 || res.Unread[0].Topic != rep || res.InFlightRecords != 0 {
		t.Errorf("unread %+v, %d records in flight; want the tail unread and none held", res.Unread, res.InFlightRecords)
	}
	tail := backupcheck.InFlight(backupcheck.Latest(t, store, res.BackupID), rep)
	if tail == nil || tail.PartitionCuts[0].Unread == nil || tail.PartitionCuts[0].EndOffset != 0 {
		t.Errorf("in-flight tail %+v: want it ended at 0 with the range unread", tail)
	}
}

// TestInFlightTailHoldsCommitsAboveTheLSO: two transactional producers and
// an idempotent one write one repartition partition on a real Kafka 4.4
// broker. Producer A's transaction is open at the cut (its first record at
// offset 0 holds the last stable offset at 0); producer B committed two
// records after it, producer C aborted one, and one record is not
// transactional. The tail holds exactly what was committed at the cut (B's
// two and the plain one: a read_committed tail to the LSO held none); A's
// record, committed after the backup, is not in it: the upstream task
// whose transaction it was never committed its input offsets before the
// cut, so it writes it again after a restore.
func TestInFlightTailHoldsCommitsAboveTheLSO(t *testing.T) {
	t.Parallel()
	const app = "lso-app"
	const rep = app + "-KSTREAM-REPARTITION-0000000001-repartition"
	k := testkit.StartKafka(t)
	addrs := k.Addrs()
	adm := testkit.Admin(t, addrs)
	ctx := t.Context()
	for _, topic := range []string{"lso-input", rep} {
		if resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	rec := func(v string) *kgo.Record {
		return &kgo.Record{Topic: rep, Partition: 0, Key: []byte(v), Value: []byte(v)}
	}
	a := testkit.Client(t, addrs, kgo.TransactionalID("producer-a"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := a.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := a.ProduceSync(ctx, rec("a0")).FirstErr(); err != nil { // offset 0, open at the cut
		t.Fatal(err)
	}
	// EndTxn is answered once the coordinator logged PrepareCommit or
	// PrepareAbort; the markers are written after it
	// (TransactionCoordinator#endTransaction: "we can respond to the
	// client immediately and continue to write the txn markers"), so each
	// marker is waited for before the next produce takes its offset.
	txnProduce(t, addrs, "producer-b", true, rec("b0"), rec("b1")) // 1, 2, marker 3
	waitHighWatermark(t, adm, rep, 0, 4)
	txnProduce(t, addrs, "producer-c", false, rec("c0")) // 4 aborted, marker 5
	waitHighWatermark(t, adm, rep, 0, 6)
	plain := testkit.Client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, rec("n0")).FirstErr(); err != nil { // 6
		t.Fatal(err)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "lso-input", Value: []byte("in")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(addrs...)}, Store: store,
		ApplicationID: app, Include: []string{"lso-input"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.EndTransaction(ctx, kgo.TryCommit); err != nil { // after the cut
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	tail := backupcheck.InFlight(m, rep)
	if tail == nil {
		t.Fatalf("no in-flight tail of %q", rep)
	}
	p := tail.PartitionCuts[0]
	if p.StartOffset != 0 || p.EndOffset != 7 || p.HighWatermark != 7 || p.Records != 3 {
		t.Errorf("tail [%d, %d) (high watermark %d) with %d records; want [0, 7) with 3", p.StartOffset, p.EndOffset, p.HighWatermark, p.Records)
	}
	var got []string
	for _, r := range backupcheck.Records(t, store, m, rep, 0) {
		got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Offset))
	}
	// kcat (read_committed) now reads A's record too: it committed after the cut.
	var want []string
	for _, km := range testkit.KcatConsume(t, k.Bootstrap(), rep, "-X", "isolation.level=read_committed") {
		if *km.Payload != "a0" && km.Offset < p.EndOffset {
			want = append(want, fmt.Sprintf("%s@%d", *km.Payload, km.Offset))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || strings.Join(want, " ") != "b0@1 b1@2 n0@6" {
		t.Errorf("tail holds %v; kcat reads %v without the transaction open at the cut; want b0@1 b1@2 n0@6", got, want)
	}
}
