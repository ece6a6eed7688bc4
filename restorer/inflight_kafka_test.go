package restorer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestInFlightTailRestoredOnKafka: from a real Kafka 4.4 source whose
// repartition topic holds committed and aborted transactions, a changelog
// restore into another real Kafka 4.4 broker creates the topic as Kafka
// Streams does (the source's 2 partitions; RepartitionTopicConfig's
// cleanup.policy=delete, retention.ms=-1, segment.bytes=52428800,
// message.timestamp.type=CreateTime: the broker accepts and reports them),
// holds exactly the committed records of each tail, and the group's offset
// on each partition (one committed on the source at 3, one never
// committed) is the first restored record (restorecheck.InFlight, computed
// from the source).
func TestInFlightTailRestoredOnKafka(t *testing.T) {
	t.Parallel()
	const (
		app   = "inflight-app"
		input = "inflight-input"
		rep   = app + "-KSTREAM-REPARTITION-0000000001-repartition"
	)
	src := testkit.StartKafka(t)
	srcAdm := testkit.Admin(t, src.Addrs())
	ctx := t.Context()
	for topic, parts := range map[string]int32{input: 1, rep: 2} {
		if resp, err := srcAdm.CreateTopic(ctx, parts, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	txn := func(commit bool, p int32, from, n int) {
		t.Helper()
		cl := testkit.Client(t, src.Addrs(), kgo.TransactionalID("up"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Topic: rep, Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
				Headers: []kgo.RecordHeader{{Key: "h", Value: nil}}}
			if err := cl.ProduceSync(tctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(tctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(true, 0, 0, 5)  // 0-4, marker 5
	txn(false, 0, 5, 2) // 6-7 aborted, marker 8
	txn(true, 0, 7, 3)  // 9-11, marker 12
	txn(true, 1, 0, 4)  // 0-3, marker 4
	if err := testkit.Client(t, src.Addrs()).ProduceSync(ctx, &kgo.Record{Topic: input, Value: []byte("in")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.AddOffset(input, 0, 1, -1)
	offs.AddOffset(rep, 0, 3, -1)
	if err := srcAdm.CommitAllOffsets(ctx, app, offs); err != nil {
		t.Fatal(err)
	}
	srcCommitted := restorecheck.GroupOffsets(t, srcAdm, app)

	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: app, Include: []string{input}})
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)

	dst := testkit.StartKafka(t)
	dstAdm := testkit.Admin(t, dst.Addrs())
	report, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: app})
	if err != nil {
		t.Fatal(err)
	}
	if report.InFlight == nil || !report.InFlight.Restored || report.InFlight.Records != 5+4 {
		t.Errorf("report in flight %+v: want 9 records restored (5 after offset 3 on partition 0, 4 on partition 1)", report.InFlight)
	}
	restorecheck.InFlight(t, src.Addrs(), dst.Addrs(), srcAdm, dstAdm, app, srcCommitted, m)
	cfgs := restorecheck.TopicConfigs(t, dstAdm, rep)[rep]
	for k, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800", "message.timestamp.type": "CreateTime"} {
		if c := cfgs[k]; c.Value == nil || *c.Value != want || c.Source != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("restored %s: %s = %+v, want %s set on the topic (as Kafka Streams creates a repartition topic)", rep, k, c, want)
		}
	}
	for _, op := range report.Group.Offsets {
		if op.Topic == rep && op.Action != format.OffsetCommit {
			t.Errorf("offset %+v on the restored tail: not committed", op)
		}
	}
}
