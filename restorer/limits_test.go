package restorer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// testTopic is one single-partition topic of a hand-made backup: its
// DYNAMIC_TOPIC_CONFIG configs and partition 0's records (offsets 0, 1, ...
// unless set).
type testTopic struct {
	name     string
	configs  map[string]string
	defaults map[string]string // configs the source topic had from its broker (DEFAULT_CONFIG)
	records  []format.Record
}

// writeBackup writes a complete backup of topics into a new repository
// under t.TempDir(), as the backup writes one: the segments first, the
// manifest last.
func writeBackup(t *testing.T, topics ...testTopic) storage.Backend {
	t.Helper()
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	now := time.Now().UTC()
	id := format.NewBackupID(now, rnd)
	m := &format.Manifest{Format: format.FormatName, FormatVersion: format.Version, State: format.StateComplete,
		BackupID: id, StartedAt: now, CutAt: now, FinishedAt: now}
	for _, tt := range topics {
		ft := format.Topic{Name: tt.name, Class: "external", Partitions: 1, ReplicationFactor: 1, Configs: map[string]format.TopicConfig{}}
		for k, v := range tt.defaults {
			ft.Configs[k] = format.TopicConfig{Value: &v, Source: "DEFAULT_CONFIG"}
		}
		for k, v := range tt.configs {
			ft.Configs[k] = format.TopicConfig{Value: &v, Source: "DYNAMIC_TOPIC_CONFIG"}
		}
		var buf bytes.Buffer
		hw := format.NewHashingWriter(&buf)
		sw, err := format.NewSegmentWriter(hw, tt.name, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tt.records {
			r := tt.records[i]
			if r.Offset == 0 && i > 0 {
				r.Offset = int64(i)
			}
			if err := sw.Write(&r); err != nil {
				t.Fatal(err)
			}
		}
		st, err := sw.Close()
		if err != nil {
			t.Fatal(err)
		}
		sum, size := hw.Sum()
		key := format.SegmentKey(id, tt.name, 0, st.FirstOffset)
		if err := store.Put(ctx, key, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
			t.Fatal(err)
		}
		ft.PartitionCuts = []format.Partition{{Partition: 0, HighWatermark: st.LastOffset + 1, EndOffset: st.LastOffset + 1, Records: st.Records,
			Segments: []format.Segment{{Key: key, BackupID: id, Size: size, SHA256: sum, RawSize: st.RawBytes, Records: st.Records,
				FirstOffset: st.FirstOffset, LastOffset: st.LastOffset, MinTimestamp: st.MinTimestamp, MaxTimestamp: st.MaxTimestamp,
				MaxRecordBytes: st.MaxRecordBytes, NullKeys: st.NullKeys}}}}
		m.Topics = append(m.Topics, ft)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, format.ManifestKey(id), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return store
}

func rec(ts int64, key, value string) format.Record {
	r := format.Record{Timestamp: ts, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

// consumeAll reads every record of partition 0 of topic from the target.
func consumeAll(t *testing.T, addrs []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := testkit.Client(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(64<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("topic %s: read %d records, want %d: %v", topic, len(got), want, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch %s: %v", topic, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

func refusal(t *testing.T, err error) *restorer.RefusedError {
	t.Helper()
	var re *restorer.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v; want a refusal", err)
	}
	return re
}

func wantReasons(t *testing.T, re *restorer.RefusedError, want ...string) {
	t.Helper()
	msg := re.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal does not say %q:\n%s", w, msg)
		}
	}
}

// TestLimitsRealKafka restores hand-made backups into one real Kafka 4.4
// broker and checks each broker-enforced limit both ways: what preflight
// refuses the broker would reject, and what it lets through the broker
// accepts, byte for byte.
func TestLimitsRealKafka(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t, testkit.KafkaProperty("log.retention.check.interval.ms", "1000"))
	addrs := k.Addrs()
	adm := testkit.Admin(t, addrs)
	ctx := context.Background()
	opts := func(store storage.Backend) restorer.Options {
		return restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(addrs...)}, Store: store, ReplicationFactor: 1}
	}
	now := time.Now().UnixMilli()
	const day = int64(86_400_000)

	// A 6.9 MB record into a topic with max.message.bytes=8388608: the
	// producer's batches follow the topic's limit (the restore's producer
	// was fixed at 1 MiB and failed with MESSAGE_TOO_LARGE).
	t.Run("a 6.9 MB record restores into a topic with max.message.bytes 8 MiB", func(t *testing.T) {
		big := make([]byte, 6_900_000)
		rand.Read(big)
		store := writeBackup(t, testTopic{name: "big", configs: map[string]string{"max.message.bytes": "8388608"},
			records: []format.Record{rec(now, "k0", "small"), {Timestamp: now, Key: []byte("k1"), Value: big}, rec(now, "k2", "small")}})
		rep, err := restorer.Run(ctx, opts(store))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Topics[0].MaxMessageBytes != 8388608 {
			t.Errorf("plan max_message_bytes = %d, want 8388608", rep.Topics[0].MaxMessageBytes)
		}
		got := consumeAll(t, addrs, "big", 3)
		if sha256.Sum256(got[1].Value) != sha256.Sum256(big) || string(got[2].Value) != "small" {
			t.Fatalf("restored records differ: %d-byte value at offset 1", len(got[1].Value))
		}
	})

	// The size preflight computes is the one the broker checks: a record
	// whose single-record batch is exactly max.message.bytes is accepted,
	// one byte more is rejected, and preflight agrees on both.
	t.Run("max.message.bytes boundary agrees with the broker", func(t *testing.T) {
		const limit = 100_000
		// batch = 61 + 3 (length varint) + 1+1+1 + (1+1 key "k") + (3 + n value) + 1 headers
		n := limit - (61 + 3 + 3 + 2 + 3 + 1)
		for _, tc := range []struct {
			name  string
			size  int
			fits  bool
			topic string
		}{{"exactly the limit", n, true, "edge-fit"}, {"one byte over", n + 1, false, "edge-over"}} {
			t.Run(tc.name, func(t *testing.T) {
				val := bytes.Repeat([]byte("x"), tc.size)
				// The broker's own verdict, produced without compression.
				resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": ptr(fmt.Sprint(limit))}, tc.topic+"-direct")
				if err == nil {
					err = resp.Err
				}
				if err != nil {
					t.Fatal(err)
				}
				pcl := testkit.Client(t, addrs, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(2*limit), kgo.RecordRetries(3))
				perr := pcl.ProduceSync(ctx, &kgo.Record{Topic: tc.topic + "-direct", Key: []byte("k"), Value: val}).FirstErr()
				if brokerFits := perr == nil; brokerFits != tc.fits || (!tc.fits && !errors.Is(perr, kerr.MessageTooLarge)) {
					t.Fatalf("broker: produce err = %v, want fits=%v", perr, tc.fits)
				}
				store := writeBackup(t, testTopic{name: tc.topic, configs: map[string]string{"max.message.bytes": fmt.Sprint(limit)},
					records: []format.Record{{Timestamp: now, Key: []byte("k"), Value: val}}})
				_, err = restorer.Run(ctx, opts(store))
				if tc.fits {
					if err != nil {
						t.Fatalf("restore: %v", err)
					}
					return
				}
				wantReasons(t, refusal(t, err), `topic "`+tc.topic+`" partition 0: 1 record(s) do not fit`, "topic max.message.bytes 100000", "offset 0", fmt.Sprintf("record batch of %d bytes", limit+1))
			})
		}
	})

	// message.timestamp.after.max.ms = Long.MAX: no limit (it overflowed
	// and refused everything); -1 timestamps are never range-checked (they
	// were flagged, and named instead of the rejected record); the record
	// the broker rejects is counted and named by its offset.
	t.Run("timestamps are checked as LogValidator checks them", func(t *testing.T) {
		cfg := map[string]string{"message.timestamp.after.max.ms": "9223372036854775807", "message.timestamp.before.max.ms": fmt.Sprint(day)}
		records := []format.Record{rec(-1, "a", "no timestamp"), rec(now-2*day, "b", "two days old"), rec(now, "c", "now"), rec(now+3650*day, "d", "in ten years"), rec(-1, "e", "no timestamp")}
		store := writeBackup(t, testTopic{name: "ts", configs: cfg, records: records})
		dry := opts(store)
		dry.DryRun = true
		_, err := restorer.Run(ctx, dry)
		re := refusal(t, err)
		wantReasons(t, re, `topic "ts" partition 0: 1 record(s) have a timestamp the target rejects: the first at offset 1`)
		if len(re.Reasons) != 1 {
			t.Errorf("want exactly one refusal, got %d:\n%s", len(re.Reasons), re)
		}

		// The broker agrees: it rejects the two-day-old record and
		// accepts the others.
		resp, err := adm.CreateTopic(ctx, 1, 1, ptrs(cfg), "ts-direct")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		pcl := testkit.Client(t, addrs, kgo.RecordRetries(3))
		for i, r := range records {
			perr := pcl.ProduceSync(ctx, &kgo.Record{Topic: "ts-direct", Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}).FirstErr()
			if rejected := errors.Is(perr, kerr.InvalidTimestamp); rejected != (i == 1) || (perr != nil && !rejected) {
				t.Errorf("broker on record %d (timestamp %d): %v", i, r.Timestamp, perr)
			}
		}

		// Without the rejected record the restore goes through, keeps
		// every timestamp, and the plan counts the two -1 timestamps.
		ok := writeBackup(t, testTopic{name: "ts-ok", configs: cfg, records: []format.Record{records[0], records[2], records[3], records[4]}})
		rep, err := restorer.Run(ctx, opts(ok))
		if err != nil {
			t.Fatal(err)
		}
		if n := rep.Topics[0].PartitionPlans[0].NoTimestamp; n != 2 {
			t.Errorf("plan no_timestamp = %d, want 2", n)
		}
		got := consumeAll(t, addrs, "ts-ok", 4)
		for i, w := range []int64{-1, now, now + 3650*day, -1} {
			if g := got[i].Timestamp.UnixMilli(); g != w {
				t.Errorf("restored record %d has timestamp %d, want %d", i, g, w)
			}
		}
	})

	// franz-go turns a record's time into milliseconds through
	// time.Time.UnixNano, so a timestamp outside 1677..2262 (which Kafka
	// accepts under Long.MAX limits) would be restored as another one.
	t.Run("a timestamp the producer cannot carry is refused", func(t *testing.T) {
		cfg := map[string]string{"message.timestamp.after.max.ms": "9223372036854775807"}
		far := int64(9_000_000_000_000_000) // year ~285000
		store := writeBackup(t, testTopic{name: "ts-far", configs: cfg, records: []format.Record{rec(now, "a", "now"), rec(far, "b", "far"), rec(far, "c", "far")}})
		_, err := restorer.Run(ctx, opts(store))
		var re *restorer.RefusedError
		if !errors.As(err, &re) {
			if err == nil {
				got := consumeAll(t, addrs, "ts-far", 3)
				t.Fatalf("restored without refusal: record 1 has timestamp %d, the backup %d", got[1].Timestamp.UnixMilli(), far)
			}
			t.Fatal(err)
		}
		wantReasons(t, re, `topic "ts-far" partition 0: 2 record(s) have a timestamp the restore's producer cannot send`, "offset 1", fmt.Sprint(far))
	})

	// A record further in the future than the broker default allows, on
	// a topic without its own limit: the broker's
	// log.message.timestamp.after.max.ms applies (1 hour since Kafka 4.0).
	t.Run("the broker's default timestamp limit applies to a topic without one", func(t *testing.T) {
		store := writeBackup(t, testTopic{name: "ts-default", records: []format.Record{rec(now, "a", "now"), rec(now+3*3600_000, "b", "in three hours")}})
		dry := opts(store)
		dry.DryRun = true
		_, err := restorer.Run(ctx, dry)
		wantReasons(t, refusal(t, err), `topic "ts-default" partition 0: 1 record(s)`, "offset 1", "now + 3600000 ms (broker log.message.timestamp.after.max.ms)")
	})

	// An existing empty LogAppendTime topic is filled as a created one
	// is: CreateTime while the records go in, LogAppendTime after, so
	// every record keeps its timestamp (the broker replaced them with
	// the restore time, and the warning said the backup had CreateTime).
	t.Run("an existing empty LogAppendTime topic keeps the records' timestamps", func(t *testing.T) {
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": ptr("LogAppendTime")}, "lat")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		ts := []int64{now - 3600_000, now - 1800_000}
		store := writeBackup(t, testTopic{name: "lat", configs: map[string]string{"message.timestamp.type": "LogAppendTime"},
			records: []format.Record{rec(ts[0], "a", "1"), rec(ts[1], "b", "2")}})
		rep, err := restorer.Run(ctx, opts(store))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range rep.Warnings {
			if strings.Contains(w, `"lat"`) && strings.Contains(w, "CreateTime") {
				t.Errorf("warning about the LogAppendTime topic mentions CreateTime: %s", w)
			}
		}
		got := consumeAll(t, addrs, "lat", 2)
		for i := range ts {
			if g := got[i].Timestamp.UnixMilli(); g != ts[i] {
				t.Errorf("record %d: timestamp %d, want the backed-up %d", i, g, ts[i])
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, "lat")
		if err != nil {
			t.Fatal(err)
		}
		c, err := rcs.On("lat", nil)
		if err == nil {
			var v string
			for _, cc := range c.Configs {
				if cc.Key == "message.timestamp.type" {
					v = cc.MaybeValue()
				}
			}
			if v != "LogAppendTime" {
				t.Errorf("topic lat ends with message.timestamp.type=%s, want LogAppendTime", v)
			}
		}
	})

	// 30-day-old records under retention.ms of 7 days: refused without a
	// choice (per topic count and oldest timestamp); --retention
	// accept-loss restores them and the broker deletes them (the fault:
	// exit 0, then deleted); --retention keep restores them with
	// retention.ms=-1, they stay, and the plan says how to set it back.
	t.Run("records past retention.ms need an explicit choice", func(t *testing.T) {
		old := now - 30*day
		mk := func(name string) storage.Backend {
			var records []format.Record
			for i := range 100 {
				records = append(records, rec(old+int64(i), fmt.Sprint("k", i), "v"))
			}
			return writeBackup(t, testTopic{name: name, configs: map[string]string{"retention.ms": fmt.Sprint(7 * day), "cleanup.policy": "compact,delete"}, records: records})
		}
		keep, loss := mk("old-keep"), mk("old-loss")
		_, err := restorer.Run(ctx, opts(keep))
		wantReasons(t, refusal(t, err), "old-keep: 100 record(s), the oldest "+fmt.Sprint(old), "retention.ms=604800000", "--retention keep", "--retention accept-loss")
		if topics, _ := adm.ListTopics(ctx, "old-keep"); topics.Has("old-keep") {
			t.Fatal("refused restore created the topic")
		}

		o := opts(keep)
		o.Retention = restorer.RetentionKeep
		rep, err := restorer.Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		rp := rep.Topics[0].Retention
		if rp == nil || rp.PastRetention != 100 || rp.OldestTimestamp != old || rp.Override != "retention.ms=-1" ||
			!strings.Contains(rp.SetBack, "--entity-name old-keep --add-config retention.ms=604800000") {
			t.Fatalf("retention plan = %+v", rp)
		}
		// An existing empty topic is altered before the records go in.
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr(fmt.Sprint(7 * day)), "cleanup.policy": ptr("compact,delete")}, "old-fill")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		o = opts(mk("old-fill"))
		o.Retention = restorer.RetentionKeep
		rep, err = restorer.Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if tp := rep.Topics[0]; tp.Action != "fill" || tp.PreConfigs["retention.ms"] != "-1" || tp.Retention == nil ||
			!strings.Contains(tp.Retention.SetBack, "--entity-name old-fill --add-config retention.ms=604800000") {
			t.Fatalf("fill plan: action %s, pre-configs %v, retention %+v", tp.Action, tp.PreConfigs, tp.Retention)
		}

		o = opts(loss)
		o.Retention = restorer.RetentionAcceptLoss
		rep, err = restorer.Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if rp := rep.Topics[0].Retention; rp == nil || rp.PastRetention != 100 || rp.Override != "" {
			t.Fatalf("retention plan = %+v", rp)
		}
		// The broker deletes the accepted loss (bounded wait) ...
		deadline := time.Now().Add(90 * time.Second)
		for {
			starts, err := adm.ListStartOffsets(ctx, "old-loss")
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := starts.Lookup("old-loss", 0); s.Offset == 100 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the broker did not delete the records past retention of old-loss (log start %v)", starts)
			}
			time.Sleep(500 * time.Millisecond)
		}
		// ... in the same retention passes that keep old-keep whole.
		time.Sleep(2 * time.Second) // two more passes of log.retention.check.interval.ms=1000
		for _, topic := range []string{"old-keep", "old-fill"} {
			starts, err := adm.ListStartOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := starts.Lookup(topic, 0); s.Offset != 0 {
				t.Fatalf("%s lost records to retention: log start %d", topic, s.Offset)
			}
			if got := consumeAll(t, addrs, topic, 100); len(got) != 100 {
				t.Fatalf("%s has %d records", topic, len(got))
			}
		}
	})
}

func ptr(s string) *string { return &s }

func ptrs(m map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range m {
		out[k] = ptr(v)
	}
	return out
}

// TestNullKeysOnCompactedTopicRefusedWithCount: the refusal counts the
// null-key records, names the first and gives the way on (it gave no
// count and no option).
func TestNullKeysOnCompactedTopicRefusedWithCount(t *testing.T) {
	now := time.Now().UnixMilli()
	store := writeBackup(t, testTopic{name: "compacted", configs: map[string]string{"cleanup.policy": "compact"},
		records: []format.Record{rec(now, "a", "1"), rec(now, "", "2"), rec(now, "b", "3"), rec(now, "", "4"), rec(now, "", "5")}},
		testTopic{name: "plain", records: []format.Record{rec(now, "", "x")}})
	dst := testkit.StartKfake(t, 1)
	_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, DryRun: true})
	re := refusal(t, err)
	wantReasons(t, re, `topic "compacted" partition 0: 3 record(s) with a null key (the first at offset 1)`, "--topics")
	if len(re.Reasons) != 1 {
		t.Errorf("want one refusal (the plain topic takes null keys), got:\n%s", re)
	}
}

// TestTimestampNearTheLimitIsWarned: a record the broker accepts now but
// rejects if it validates an hour later (a long restore, a clock ahead) is
// restored with a warning that counts it; one well inside is not counted.
func TestTimestampNearTheLimitIsWarned(t *testing.T) {
	now := time.Now().UnixMilli()
	const day = int64(86_400_000)
	store := writeBackup(t, testTopic{name: "near", configs: map[string]string{"message.timestamp.before.max.ms": fmt.Sprint(day)},
		records: []format.Record{rec(now-day+1800_000, "a", "30 minutes inside the limit"), rec(now-day+3*3600_000, "b", "3 hours inside"), rec(now, "c", "now")}})
	dst := testkit.StartKfake(t, 1)
	rep, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, "within 1 hour of the target's limits") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `topic "near" partition 0: 1 record(s) (the first at offset 0)`) {
		t.Fatalf("warnings %q, want one naming 1 record at offset 0", rep.Warnings)
	}
}

// TestRetentionBytesIsWarned: a partition larger than the target topic's
// retention.bytes loses its oldest segments after the restore; the plan
// warns with the size.
func TestRetentionBytesIsWarned(t *testing.T) {
	now := time.Now().UnixMilli()
	var records []format.Record
	for i := range 100 {
		records = append(records, rec(now, fmt.Sprint("k", i), strings.Repeat("v", 100)))
	}
	store := writeBackup(t, testTopic{name: "capped", configs: map[string]string{"retention.bytes": "4096"}, records: records},
		testTopic{name: "uncapped", records: records})
	dst := testkit.StartKfake(t, 1)
	rep, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, "retention.bytes") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `topic "capped" partition 0: about `) || !strings.Contains(warned[0], "more than retention.bytes 4096 (topic retention.bytes)") {
		t.Fatalf("warnings %q, want one about topic capped", rep.Warnings)
	}
}

// TestPastRetentionCountsRecordByRecord: in a segment that mixes old, new
// and -1 timestamps, exactly the old records count (a record without
// timestamp is judged by its log segment's file time, not as old), and
// --retention accept-loss plans them with a warning.
func TestPastRetentionCountsRecordByRecord(t *testing.T) {
	now := time.Now().UnixMilli()
	const day = int64(86_400_000)
	store := writeBackup(t, testTopic{name: "mixed", configs: map[string]string{"retention.ms": fmt.Sprint(day)},
		records: []format.Record{rec(now-3*day, "a", "old"), rec(-1, "b", "none"), rec(now, "c", "new"), rec(now-2*day, "d", "old")}})
	dst := testkit.StartKfake(t, 1)
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, DryRun: true}
	_, err := restorer.Run(context.Background(), o)
	wantReasons(t, refusal(t, err), "mixed: 2 record(s), the oldest "+fmt.Sprint(now-3*day), "retention.ms=86400000")
	o.Retention = restorer.RetentionAcceptLoss
	rep, err := restorer.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	pp := rep.Topics[0].PartitionPlans[0]
	if pp.PastRetention != 2 || pp.NoTimestamp != 1 || rep.Topics[0].Retention == nil || rep.Topics[0].Retention.Choice != restorer.RetentionAcceptLoss {
		t.Fatalf("partition plan %+v, retention %+v", pp, rep.Topics[0].Retention)
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, `topic "mixed": 2 restored record(s) are past retention.ms=86400000`) || !strings.Contains(w, "--retention accept-loss") {
		t.Errorf("warnings:\n%s", w)
	}
}

// TestCreatedTopicOnLogAppendTimeBroker: a created topic inherits the
// target broker's log.message.timestamp.type; when that is LogAppendTime
// the broker would replace every restored timestamp. The topic is created
// CreateTime: it stays so when the source topic was CreateTime, and turns
// LogAppendTime after the records when the source's was.
func TestCreatedTopicOnLogAppendTimeBroker(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t, testkit.KafkaProperty("log.message.timestamp.type", "LogAppendTime"))
	addrs := k.Addrs()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	ts := []int64{now - 3600_000, now - 1800_000}
	records := []format.Record{rec(ts[0], "a", "1"), rec(ts[1], "b", "2")}
	store := writeBackup(t,
		testTopic{name: "was-create", defaults: map[string]string{"message.timestamp.type": "CreateTime"}, records: records},
		testTopic{name: "was-append", defaults: map[string]string{"message.timestamp.type": "LogAppendTime"}, records: records})
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(addrs...)}, Store: store, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	adm := testkit.Admin(t, addrs)
	for topic, wantType := range map[string]string{"was-create": "CreateTime", "was-append": "LogAppendTime"} {
		got := consumeAll(t, addrs, topic, 2)
		for i := range ts {
			if g := got[i].Timestamp.UnixMilli(); g != ts[i] {
				t.Errorf("%s record %d: timestamp %d, want the backed-up %d", topic, i, g, ts[i])
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rc.Configs {
			if c.Key == "message.timestamp.type" && c.MaybeValue() != wantType {
				t.Errorf("%s ends with message.timestamp.type=%s, want %s", topic, c.MaybeValue(), wantType)
			}
		}
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, `topic "was-create" is created with message.timestamp.type=CreateTime`) {
		t.Errorf("no warning that was-create keeps CreateTime against the broker's LogAppendTime:\n%s", w)
	}
}
