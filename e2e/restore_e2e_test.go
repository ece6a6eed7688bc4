package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Input topics the restore tests add to the sample application.
const (
	// eventsTopic is written in transactions, one of them aborted, so its
	// log holds aborted records and commit/abort markers (field case 14,
	// transactions: docs/DOMAIN.md#field-case-14).
	eventsTopic = "order-events"
	// clicksTopic has out-of-order timestamps (field case 20, a
	// point-in-time cut) and a log start above 0 with a group offset below
	// it (field case 16, a committed offset outside the restored range).
	clicksTopic = "clicks"
)

// clickSeconds are the timestamps of clicks, in seconds after the seed's
// base time, per partition in offset order. clicksCut is the point in time
// (seconds after base) the PITR tests restore to: partition 0 is cut at
// offset 2 although offset 3 is older than the cut (a prefix, not a filter),
// partition 1 is kept whole, partition 2 is cut at offset 0.
var clickSeconds = map[int32][]int{0: {10, 20, 40, 15, 50}, 1: {5, 25, 28}, 2: {35, 1}}

const clicksCut = 30

// restoreSource is a seeded source cluster and one backup of it in S3,
// shared by the subtests. Everything but the backup is read from the source
// cluster, never from the manifest or the restorer.
type restoreSource struct {
	c         cluster
	store     storage.Backend
	res       *backup.Result
	m         *format.Manifest
	topics    []string                                  // backed-up topics, sorted
	parts     map[string]int                            // partition count of each backed-up topic on the source
	configs   map[string]map[string]restorecheck.Config // DescribeConfigs of each backed-up topic on the source
	logAppend map[string]bool                           // topics with message.timestamp.type=LogAppendTime on the source
	recs      restorecheck.Records                      // committed records of each backed-up topic
	committed restorecheck.Offsets                      // the application.id group's offsets on the source
	pitr      time.Time                                 // the clicks cut
	// The in-flight tails (docs/DOMAIN.md#in-flight): the repartition
	// and FK-subscription topics of the application, which a changelog
	// restore creates, fills with the records the downstream task had not
	// consumed at the cut, and commits the group's offsets on.
	inFlight map[string]int       // partition count of each in-flight topic on the source
	tails    restorecheck.Records // committed records of each in-flight partition on the source from tailFrom to the cut
	tailFrom restorecheck.Offsets // where each tail starts on the source: the group's offset, else the log start
}

// prepareSource seeds c with the sample application (franz-go and kcat),
// the extra inputs, compacts, commits group offsets into the awkward places
// (a compaction hole, aborted records, a transaction marker, the log end,
// below the log start), backs it up to S3 and reads what the source holds.
func prepareSource(t *testing.T, c cluster, compact func()) *restoreSource {
	t.Helper()
	ctx := context.Background()
	seedWithKcat(t, c)
	pitr := seedExtras(t, c)
	compact()
	adm := admin(t, c)
	commitAwkwardOffsets(t, c, adm)

	s := &restoreSource{c: c, pitr: pitr, logAppend: map[string]bool{}, parts: map[string]int{}}
	s.committed = restorecheck.GroupOffsets(t, adm, sample.AppID)
	t.Logf("group %q offsets on the source: %v", sample.AppID, s.committed)
	s.store = s3Store(t, "restore-e2e")
	o := options(c, s.store)
	o.Include = append(slices.Clone(sample.Include), eventsTopic, clicksTopic)
	res, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	s.res = res
	s.m = backupcheck.Latest(t, s.store, res.BackupID)

	s.topics = append(slices.Clone(sample.BackedUp), eventsTopic, clicksTopic)
	sort.Strings(s.topics)
	var names []string
	for _, tp := range s.m.Topics {
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, s.topics) {
		t.Fatalf("backed-up topics %v, want %v", names, s.topics)
	}
	all := restorecheck.Topics(t, adm)
	for _, name := range s.topics {
		s.parts[name] = all[name]
	}
	s.configs = restorecheck.TopicConfigs(t, adm, s.topics...)
	for name, cs := range s.configs {
		if v := cs["message.timestamp.type"].Value; v != nil && *v == "LogAppendTime" {
			s.logAppend[name] = true
		}
	}
	t.Logf("topics with message.timestamp.type=LogAppendTime on the source: %v", slices.Sorted(maps.Keys(s.logAppend)))
	ends := restorecheck.EndOffsets(t, adm, s.topics...)
	s.recs = restorecheck.ReadAll(t, c.Addrs(), ends)
	// The restore tests compare the target with the source: the backup
	// must hold exactly what the source holds now.
	for _, tp := range s.m.Topics {
		for _, p := range tp.PartitionCuts {
			if p.EndOffset != ends[tp.Name][p.Partition] || p.Records != int64(len(s.recs[tp.Name][p.Partition])) {
				t.Fatalf("topic %q partition %d: backup end %d with %d records, the source now ends at %d with %d committed records (did the source change after the backup?)",
					tp.Name, p.Partition, p.EndOffset, p.Records, ends[tp.Name][p.Partition], len(s.recs[tp.Name][p.Partition]))
			}
		}
	}
	readTails(t, s, adm)
	return s
}

// readTails reads from the source the in-flight tails a changelog restore
// brings back: every partition of the application's repartition and
// FK-subscription topics, from the group's committed offset (else the log
// start) to the cut, which is the source's log end (nothing writes after
// the backup).
func readTails(t *testing.T, s *restoreSource, adm *kadm.Client) {
	t.Helper()
	var names []string
	for _, tp := range s.m.InFlight {
		names = append(names, tp.Name)
	}
	if want := []string{sample.Repartition, sample.FKTopic}; !slices.Equal(names, want) {
		t.Fatalf("in-flight topics of the backup %v, want the application's repartition and FK-subscription topics %v", names, want)
	}
	all := restorecheck.Topics(t, adm)
	s.inFlight = map[string]int{}
	for _, name := range names {
		s.inFlight[name] = all[name]
	}
	ends := restorecheck.EndOffsets(t, adm, names...)
	starts := restorecheck.StartOffsets(t, adm, names...)
	recs := restorecheck.ReadAll(t, s.c.Addrs(), ends)
	s.tails, s.tailFrom = restorecheck.Records{}, restorecheck.Offsets{}
	n := 0
	for _, tp := range s.m.InFlight {
		s.tails[tp.Name] = map[int32][]format.Record{}
		for _, p := range tp.PartitionCuts {
			if p.EndOffset != ends[tp.Name][p.Partition] {
				t.Fatalf("in-flight topic %q partition %d: the cut is at %d, the source now ends at %d (did the source change after the backup?)", tp.Name, p.Partition, p.EndOffset, ends[tp.Name][p.Partition])
			}
			from := starts[tp.Name][p.Partition]
			if c, ok := s.committed[tp.Name][p.Partition]; ok {
				from = max(from, c)
			}
			s.tailFrom.Set(tp.Name, p.Partition, from)
			var tail []format.Record
			for _, r := range recs[tp.Name][p.Partition] {
				if r.Offset >= from {
					tail = append(tail, r)
				}
			}
			s.tails[tp.Name][p.Partition] = tail
			n += len(tail)
		}
	}
	if n == 0 {
		t.Fatalf("no record in flight on the source (tails from %v): the restore of the tails would test nothing", s.tailFrom)
	}
	t.Logf("in flight on the source: %d records, tails from %v", n, s.tailFrom)
}

// restoredTopics are the topics a changelog restore of s leaves on the
// target, with the source's partition counts: the backed-up topics and the
// in-flight ones.
func (s *restoreSource) restoredTopics() map[string]int {
	out := maps.Clone(s.parts)
	maps.Copy(out, s.inFlight)
	return out
}

// sourceRecords are the source records the restore brings back into topic
// partition p (the whole backed-up partition, or the in-flight tail) and
// the offset the group resumes from on the source (its committed offset,
// or the tail's start where it never committed one).
func (s *restoreSource) sourceRecords(topic string, p int32) ([]format.Record, int64) {
	if _, ok := s.inFlight[topic]; ok {
		return s.tails[topic][p], s.tailFrom[topic][p]
	}
	return s.recs[topic][p], s.committed[topic][p]
}

// seedExtras adds eventsTopic and clicksTopic, and records to customers
// that compaction turns into an interior hole; it returns the PITR cut.
func seedExtras(t *testing.T, c cluster) time.Time {
	t.Helper()
	ctx := context.Background()
	adm := admin(t, c)
	for name, parts := range map[string]int32{eventsTopic: 4, clicksTopic: 3} {
		resp, err := adm.CreateTopic(ctx, parts, -1, nil, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %q: %v", name, err)
		}
	}
	waitForLeaders(t, adm, eventsTopic, clicksTopic)

	// Three transactions over every partition; the second is aborted.
	tp := testkit.Client(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("restore-e2e-events"), kgo.TransactionTimeout(10*time.Second))
	for txn, commit := range []bool{true, false, true} {
		if err := tp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for p := range int32(4) {
			for k := range 2 {
				v := fmt.Sprintf("txn%d-p%d-%d", txn, p, k)
				if !commit {
					v = "ABORTED-" + v
				}
				recs = append(recs, &kgo.Record{Topic: eventsTopic, Partition: p, Key: []byte(fmt.Sprintf("evt-%d-%d", p, k)), Value: []byte(v)})
			}
		}
		if err := tp.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tp.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	// In each customers partition, a record compaction removes between two
	// records it keeps: an interior compaction hole. One batch each, as a
	// log cleaner does not clean the active (last) segment.
	pc := testkit.Client(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, batch := range [][][2]string{{{"hole-keep-a", "kept"}, {"hole-gone", "overwritten"}, {"hole-keep-b", "kept"}}, {{"hole-gone", "latest"}}, {{"hole-tail", "kept"}}} {
		var recs []*kgo.Record
		for p := range int32(2) {
			for _, kv := range batch {
				recs = append(recs, &kgo.Record{Topic: sample.Customers, Partition: p, Key: []byte(kv[0]), Value: []byte(kv[1])})
			}
		}
		if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for p, secs := range clickSeconds {
		for i, s := range secs {
			recs = append(recs, &kgo.Record{Topic: clicksTopic, Partition: p, Key: []byte(fmt.Sprintf("click-%d-%d", p, i)),
				Value: []byte(fmt.Sprintf("t+%ds", s)), Timestamp: base.Add(time.Duration(s) * time.Second)})
		}
	}
	if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{clicksTopic: {1: {Topic: clicksTopic, Partition: 1, At: 1, LeaderEpoch: -1}}})
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %q: %v", clicksTopic, err)
	}
	return base.Add(clicksCut * time.Second)
}

func waitForLeaders(t *testing.T, adm *kadm.Client, topics ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := adm.ListTopics(context.Background(), topics...)
		ok := err == nil && len(td) == len(topics)
		for _, d := range td {
			if d.Err != nil || len(d.Partitions) == 0 {
				ok = false
			}
			for _, p := range d.Partitions {
				if p.Leader < 0 || p.Err != nil {
					ok = false
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics %v have no leaders after 30s (%v)", topics, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// commitAwkwardOffsets commits the application's offsets where a naive
// translation goes wrong (docs/DOMAIN.md#offset-translation): into a
// compaction hole of customers (field case 16), at an aborted record, at an
// abort marker, at a commit marker and at the log end of eventsTopic
// (field case 14, transactions), at a record older than its predecessor and
// below the log start of clicksTopic (field cases 16 and 20). The sample's
// own commits stay (orders-1 at the log end, payments inside a log starting
// at 8, a repartition topic).
func commitAwkwardOffsets(t *testing.T, c cluster, adm *kadm.Client) {
	t.Helper()
	offs := kadm.Offsets{}
	cust := restorecheck.ReadAll(t, c.Addrs(), restorecheck.EndOffsets(t, adm, sample.Customers))[sample.Customers]
	for p, recs := range cust {
		h := compactionHole(recs)
		if h < 0 {
			t.Fatalf("customers partition %d has no compaction hole: %s", p, restorecheck.Summary(recs))
		}
		offs.AddOffset(sample.Customers, p, h, -1)
	}

	ends := restorecheck.EndOffsets(t, adm, eventsTopic)
	committed := restorecheck.ReadAll(t, c.Addrs(), ends)[eventsTopic]
	data := map[int32]map[int64]bool{} // every data record, aborted or not
	for _, m := range testkit.KcatConsume(t, c.Bootstrap(), eventsTopic, "-X", "isolation.level=read_uncommitted") {
		if data[m.Partition] == nil {
			data[m.Partition] = map[int64]bool{}
		}
		data[m.Partition][m.Offset] = true
	}
	for p := range int32(4) {
		isCommitted := map[int64]bool{}
		for _, r := range committed[p] {
			isCommitted[r.Offset] = true
		}
		var aborted, markers []int64
		for o := int64(0); o < ends[eventsTopic][p]; o++ {
			switch {
			case isCommitted[o]:
			case data[p][o]:
				aborted = append(aborted, o)
			default:
				markers = append(markers, o)
			}
		}
		if len(aborted) == 0 || len(markers) < 3 {
			t.Fatalf("%s partition %d: aborted records %v, markers %v; want an aborted transaction and 3 markers", eventsTopic, p, aborted, markers)
		}
		var at int64
		switch p {
		case 0: // the first aborted record
			at = aborted[0]
		case 1: // the abort marker, right after the aborted transaction
			at = aborted[len(aborted)-1] + 1
		case 2: // the log end, after a commit marker
			at = ends[eventsTopic][p]
		case 3: // the first commit marker
			at = markers[0]
		}
		offs.AddOffset(eventsTopic, p, at, -1)
	}

	offs.AddOffset(clicksTopic, 0, 3, -1) // the late record after the cut
	offs.AddOffset(clicksTopic, 1, 0, -1) // below the log start 1: data lost before the backup
	if err := adm.CommitAllOffsets(context.Background(), sample.AppID, offs); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
}

// compactionHole returns an offset inside the partition that holds no
// record because compaction removed it, preferring one between two records.
func compactionHole(recs []format.Record) int64 {
	for i := 1; i < len(recs); i++ {
		if recs[i].Offset > recs[i-1].Offset+1 {
			return recs[i-1].Offset + 1
		}
	}
	if len(recs) > 0 && recs[0].Offset > 0 {
		return 0
	}
	return -1
}

// waitForInteriorHoles waits until the real broker's log cleaner has
// removed a record between two records it keeps in both partitions of
// customers (seedExtras wrote such records), appending records that roll
// the active segment so that the cleaner can clean the previous one.
func waitForInteriorHoles(t *testing.T, c cluster) {
	t.Helper()
	cl := testkit.Client(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	deadline := time.Now().Add(90 * time.Second)
	for {
		recs := restorecheck.ReadAll(t, c.Addrs(), restorecheck.EndOffsets(t, admin(t, c), sample.Customers))[sample.Customers]
		if interiorHole(recs[0]) && interiorHole(recs[1]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log cleaner left no interior hole in customers in 90s:\n0: %s\n1: %s", restorecheck.Summary(recs[0]), restorecheck.Summary(recs[1]))
		}
		for p := range int32(2) {
			cl.ProduceSync(context.Background(), &kgo.Record{Topic: sample.Customers, Partition: p, Key: []byte("cust-0"), Value: []byte(`{"roll":true}`)})
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func interiorHole(recs []format.Record) bool {
	h := compactionHole(recs)
	return h > 0 && len(recs) > 0 && h > recs[0].Offset
}

// freezeCompaction stops the real broker's log cleaner from compacting
// customers any further (every record is younger than a day), so that the
// source still holds what the backup took when the tests compare, and the
// restored topic, which gets the same config, is not compacted under them.
func freezeCompaction(t *testing.T, c cluster) {
	t.Helper()
	v := "86400000"
	resp, err := admin(t, c).AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: &v}}, sample.Customers)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("set min.compaction.lag.ms of customers: %v", err)
	}
	time.Sleep(time.Second) // a cleaning pass already running ends
}

func restoreOptions(dst cluster, s *restoreSource) restorer.Options {
	return restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: s.store, BackupID: s.res.BackupID,
		Strategy: restorer.StrategyChangelog, ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs}
}

// startTarget starts an empty kfake target cluster with its own cluster
// id (the restore journal is kept per target cluster id).
func startTarget(t *testing.T, brokers int, name string, opts ...kfake.Opt) *testkit.Kfake {
	t.Helper()
	return testkit.StartKfake(t, brokers, append([]kfake.Opt{kfake.ClusterID("target-" + name)}, opts...)...)
}

func refused(t *testing.T, err error) *restorer.RefusedError {
	t.Helper()
	var r *restorer.RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("restore: got error %v (%T), want a *restorer.RefusedError", err, err)
	}
	return r
}

// checkRestored checks a changelog-strategy restore of the whole backup into
// dst against the source: topics, partition counts, configs, every record
// (franz-go and kcat), the in-flight tails (restorecheck.InFlight: topics,
// records, offsets), record counts, group offsets and the report. It
// returns the restored records and the expected group offsets.
func checkRestored(t *testing.T, s *restoreSource, dst cluster, rep *restorer.Report) (restorecheck.Records, restorecheck.Offsets) {
	t.Helper()
	adm := admin(t, dst)

	// Exactly the backed-up topics and the in-flight ones (the
	// application's repartition and FK-subscription topics, invariant 38),
	// with the source's partition counts: no other application's topic
	// (field cases 01 broker-internal topics, 03 internal topics, 05
	// partition counts).
	if got, want := restorecheck.Topics(t, adm), s.restoredTopics(); !maps.Equal(got, want) {
		t.Errorf("topics on the target %v, want the backed-up and in-flight topics %v", got, want)
	}
	// Each in-flight tail: the records the source held in [committed
	// offset, cut) (or from the log start where the group never
	// committed), the group's offset on the target at the first restored
	// one, the topic configured as Kafka Streams would create it.
	restorecheck.InFlight(t, s.c.Addrs(), dst.Addrs(), admin(t, s.c), adm, sample.AppID, s.committed, s.m)

	// Every topic-level config of the source and the manifest, equal
	// (field case 08, topic configs).
	tc := restorecheck.TopicConfigs(t, adm, s.topics...)
	for _, tp := range s.m.Topics {
		keys := map[string]bool{}
		for k, c := range tp.Configs {
			if c.Source == "DYNAMIC_TOPIC_CONFIG" {
				keys[k] = true
				if src := s.configs[tp.Name][k]; !restorecheck.SameConfigValue(k, c.Value, src.Value) {
					t.Errorf("topic %q config %s: manifest %s, source %s", tp.Name, k, str(c.Value), str(src.Value))
				}
			}
		}
		for k, c := range s.configs[tp.Name] {
			if c.Source == "DYNAMIC_TOPIC_CONFIG" && !keys[k] {
				t.Errorf("topic %q config %s=%s is set on the source topic but not in the manifest", tp.Name, k, str(c.Value))
				keys[k] = true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			want, got := s.configs[tp.Name][k], tc[tp.Name][k]
			if !restorecheck.SameConfigValue(k, got.Value, want.Value) || got.Source != "DYNAMIC_TOPIC_CONFIG" {
				t.Errorf("topic %q config %s on the target: %s (%s), want %s (DYNAMIC_TOPIC_CONFIG)", tp.Name, k, str(got.Value), got.Source, str(want.Value))
			}
		}
	}

	// Every record, field for field, in its original partition and order
	// (field cases 06 original partition, 12 tombstones, 13 headers, 14
	// aborted records); the log ends where the records end (field case 19 A4).
	ends := restorecheck.EndOffsets(t, adm, s.topics...)
	recs := restorecheck.ReadAll(t, dst.Addrs(), ends)
	reports := map[string]restorer.PartitionReport{}
	for _, pr := range rep.Partitions {
		reports[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)] = pr
	}
	var total int64
	for _, tp := range s.m.Topics {
		for _, p := range tp.PartitionCuts {
			what := fmt.Sprintf("topic %q partition %d", tp.Name, p.Partition)
			got, want := recs[tp.Name][p.Partition], s.recs[tp.Name][p.Partition]
			restorecheck.SameRecords(t, what, got, want, s.logAppend[tp.Name])
			if n := int64(len(got)); n != p.Records || ends[tp.Name][p.Partition] != n {
				t.Errorf("%s: %d records restored, log end %d; the manifest has %d records", what, n, ends[tp.Name][p.Partition], p.Records)
			}
			pr, ok := reports[fmt.Sprintf("%s/%d", tp.Name, p.Partition)]
			if !ok {
				t.Errorf("%s: not in the report", what)
				continue
			}
			if pr.Records != p.Records || pr.NewEnd != ends[tp.Name][p.Partition] || pr.SourceEnd != p.EndOffset {
				t.Errorf("%s: report says %d records, new end %d, source end %d; want %d, %d, %d",
					what, pr.Records, pr.NewEnd, pr.SourceEnd, p.Records, ends[tp.Name][p.Partition], p.EndOffset)
			}
			total += p.Records
		}
	}
	var inFlight []string
	for _, tp := range s.m.InFlight {
		inFlight = append(inFlight, tp.Name)
	}
	tailEnds := restorecheck.EndOffsets(t, adm, inFlight...)
	tailRecs := restorecheck.ReadAll(t, dst.Addrs(), tailEnds)
	for topic, parts := range s.tails {
		for p, tail := range parts {
			what := fmt.Sprintf("in-flight topic %q partition %d", topic, p)
			n := int64(len(tail))
			if got := int64(len(tailRecs[topic][p])); got != n || tailEnds[topic][p] != n {
				t.Errorf("%s: %d records restored, log end %d; the source's tail has %d", what, got, tailEnds[topic][p], n)
			}
			pr, ok := reports[fmt.Sprintf("%s/%d", topic, p)]
			if !ok {
				t.Errorf("%s: not in the report", what)
				continue
			}
			if pr.Records != n || pr.NewEnd != tailEnds[topic][p] {
				t.Errorf("%s: report says %d records, new end %d; want %d, %d", what, pr.Records, pr.NewEnd, n, tailEnds[topic][p])
			}
			total += n
		}
	}
	if rep.Records != total {
		t.Errorf("report: %d records restored, want %d", rep.Records, total)
	}
	for _, tp := range rep.Topics {
		if tp.Action != "create" {
			t.Errorf("topic %q: plan action %q, want create", tp.Topic, tp.Action)
		}
	}
	if !rep.WipeState {
		t.Errorf("report: wipe_state false after restoring changelogs (field case 19: the state must be wiped)")
	}

	checkKcatSame(t, s, dst)

	// The state of every changelog partition is proven: the report says
	// equal, and the records read here with franz-go and with kcat have
	// the manifest's state digest.
	if restorecheck.StateDigests(t, s.m, rep, recs) == 0 || restorecheck.KcatStateDigests(t, s.m, dst.Bootstrap()) == 0 {
		t.Errorf("no changelog partition's state was proven")
	}

	// Group offsets, translated by the rule, computed here from the records
	// (field cases 07 empty partitions, 14 transactions, 16 offsets past the
	// end, 17 offsets really committed). The offsets the source group had
	// on the backed-up topics, and on every in-flight partition the first
	// restored record of its tail (invariant 38: also where the group never
	// committed on the source); no changelog or invented offsets.
	want := restorecheck.Offsets{}
	for topic, parts := range s.committed {
		if _, restored := s.parts[topic]; !restored {
			continue
		}
		for p, c := range parts {
			want.Set(topic, p, restorecheck.Translate(s.recs[topic][p], c, recs[topic][p], ends[topic][p]))
		}
	}
	for topic, parts := range s.tails {
		for p, tail := range parts {
			want.Set(topic, p, restorecheck.Translate(tail, s.tailFrom[topic][p], tailRecs[topic][p], tailEnds[topic][p]))
		}
	}
	if got := restorecheck.GroupOffsets(t, adm, sample.AppID); !reflect.DeepEqual(got, want) {
		t.Errorf("group %q offsets on the target (OffsetFetch):\n got %v\nwant %v\nsource %v", sample.AppID, got, want, s.committed)
	}
	if got := restorecheck.GroupOffsets(t, adm, sample.OtherApp); len(got) != 0 {
		t.Errorf("group %q of another application got offsets on the target: %v", sample.OtherApp, got)
	}
	checkGroupPlan(t, rep, s, want)
	return recs, want
}

// checkGroupPlan checks the report's group plan: every committed offset of
// the source once, and every in-flight partition the group never committed
// on the source at its log start; all committed with the expected
// translation, none dropped (invariant 38: the in-flight tails are restored
// and the group resumes them at their first restored record, where before
// issue 11 field case 17 A5 dropped the repartition offsets; field case 16
// A4: a commit below the log start is named).
func checkGroupPlan(t *testing.T, rep *restorer.Report, s *restoreSource, want restorecheck.Offsets) {
	t.Helper()
	if rep.Group == nil || rep.Group.GroupID != sample.AppID {
		t.Fatalf("report group plan %+v, want group %q", rep.Group, sample.AppID)
	}
	if !rep.Committed {
		t.Errorf("report: committed false")
	}
	seen := restorecheck.Offsets{}
	for _, op := range rep.Group.Offsets {
		seen.Set(op.Topic, op.Partition, op.Committed)
		if _, inFlight := s.inFlight[op.Topic]; inFlight {
			if w := want[op.Topic][op.Partition]; op.Action != "commit" || op.Translated != w || !strings.Contains(op.Note, "in-flight tail restored") {
				t.Errorf("report: offset of %s/%d (an in-flight tail): action %q translated %d note %q; want commit %d and a note saying the tail is restored", op.Topic, op.Partition, op.Action, op.Translated, op.Note, w)
			}
			continue
		}
		if _, restored := s.parts[op.Topic]; !restored {
			if op.Action != "drop" || op.Translated != -1 || op.Note == "" {
				t.Errorf("report: offset of %s/%d (a topic not restored): action %q translated %d note %q; want drop, -1 and a reason", op.Topic, op.Partition, op.Action, op.Translated, op.Note)
			}
			continue
		}
		if w := want[op.Topic][op.Partition]; op.Action != "commit" || op.Translated != w {
			t.Errorf("report: offset of %s/%d: action %q translated %d, want commit %d", op.Topic, op.Partition, op.Action, op.Translated, w)
		}
	}
	covered := restorecheck.Offsets{}
	for topic, parts := range s.committed {
		for p, c := range parts {
			covered.Set(topic, p, c)
		}
	}
	for topic, parts := range s.tailFrom {
		for p, from := range parts {
			if _, ok := s.committed[topic][p]; !ok {
				covered.Set(topic, p, from) // never committed: the tail starts at the log start
			}
		}
	}
	if !reflect.DeepEqual(seen, covered) {
		t.Errorf("report: group plan covers %v, want the source group's %v and the in-flight partitions it never committed at their log start", seen, covered)
	}
	var dropped []string
	for _, op := range rep.Group.Offsets {
		if op.Action == "drop" {
			dropped = append(dropped, fmt.Sprintf("%s/%d", op.Topic, op.Partition))
		}
	}
	if len(dropped) > 0 {
		t.Errorf("report: dropped offsets of %v, want none (every offset of the source group is on a backed-up or in-flight topic)", dropped)
	}
	for _, op := range rep.Group.Offsets {
		if op.Topic == clicksTopic && op.Partition == 1 && !strings.Contains(op.Note, "before") {
			t.Errorf("report: %s/1 was committed at %d, below the log start at backup time; the note %q does not say so (field case 16 A4)", clicksTopic, op.Committed, op.Note)
		}
	}
}

// checkSavedReport checks that the restore saved its report in the
// repository as restores/<restore-id>/report.json, equal to the one
// returned.
func checkSavedReport(t *testing.T, store storage.Backend, rep *restorer.Report) {
	t.Helper()
	key := "restores/" + rep.RestoreID + "/report.json"
	rc, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("restore report %s: %v", key, err)
	}
	defer rc.Close()
	var saved restorer.Report
	if err := json.NewDecoder(rc).Decode(&saved); err != nil {
		t.Fatalf("restore report %s: %v", key, err)
	}
	if saved.RestoreID != rep.RestoreID || saved.BackupID != rep.BackupID || saved.Records != rep.Records ||
		!saved.Committed || !reflect.DeepEqual(saved.Group, rep.Group) || len(saved.Partitions) != len(rep.Partitions) {
		t.Errorf("saved report %s differs from the returned one:\nsaved %+v\nreturned %+v", key, saved, *rep)
	}
}

// checkKcatSame compares what kcat (librdkafka, read_committed) reads from
// each topic on the source and on the target, partition by partition:
// keys, values, headers, timestamps and their types, nil versus empty.
func checkKcatSame(t *testing.T, s *restoreSource, dst cluster) {
	t.Helper()
	for _, topic := range s.topics {
		want := kcatByPartition(t, s.c.Bootstrap(), topic, s.logAppend[topic])
		got := kcatByPartition(t, dst.Bootstrap(), topic, false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("topic %q: kcat reads on the target\n %q\nand on the source\n %q", topic, got, want)
		}
	}
}

// kcatByPartition reads topic with kcat. asCreate shows LogAppendTime
// timestamps as CreateTime (see restorecheck.SameRecords).
func kcatByPartition(t *testing.T, brokers, topic string, asCreate bool) map[int32][]string {
	t.Helper()
	out := map[int32][]string{}
	for _, m := range testkit.KcatConsume(t, brokers, topic, "-X", "isolation.level=read_committed", "-X", "fetch.wait.max.ms=10") {
		ts := m.TsType
		if asCreate && ts == "logappend" {
			ts = "create"
		}
		out[m.Partition] = append(out[m.Partition], fmt.Sprintf("k=%s v=%s h=%s ts=%d/%s", str(m.Key), str(m.Payload), strs(m.Headers), m.Ts, ts))
	}
	return out
}

// checkGroupConsumer starts a real consumer in the application's group on
// the target and checks the first record it reads from every partition the
// group has an offset for: the record that follows the committed offset on
// the source, or nothing when the offset is at the end (field cases 14, 16
// and 17: docs/DOMAIN.md#commit-verified).
func checkGroupConsumer(t *testing.T, s *restoreSource, dst cluster, want restorecheck.Offsets) {
	t.Helper()
	type tp struct {
		topic string
		p     int32
	}
	next := map[tp]format.Record{}
	atEnd := map[tp]bool{}
	for topic, parts := range want {
		for p := range parts {
			src, from := s.sourceRecords(topic, p)
			if r, ok := restorecheck.FirstAtOrAfter(src, from); ok {
				next[tp{topic, p}] = r
			} else {
				atEnd[tp{topic, p}] = true
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(dst.Addrs()...), kgo.ConsumerGroup(sample.AppID),
		kgo.ConsumeTopics(slices.Sorted(maps.Keys(want))...), kgo.DisableAutoCommit(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	first := map[tp]format.Record{}
	deadline := time.Now().Add(60 * time.Second)
	for len(first) < len(next) && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("group consumer: %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[tp{r.Topic, r.Partition}]; !ok {
				first[tp{r.Topic, r.Partition}] = sample.FromKgo(r)
			}
		})
	}
	cl.Close() // leaves the group
	for k, w := range next {
		g, ok := first[k]
		if !ok {
			t.Errorf("group consumer: read nothing from %s/%d in 60s; want %s", k.topic, k.p, restorecheck.Describe(w))
			continue
		}
		_, from := s.sourceRecords(k.topic, k.p)
		restorecheck.SameRecords(t, fmt.Sprintf("group consumer's first record of %s/%d (from %d on the source)", k.topic, k.p, from),
			[]format.Record{g}, []format.Record{w}, s.logAppend[k.topic])
	}
	for k, g := range first {
		if _, ok := next[k]; !ok {
			t.Errorf("group consumer: read %s from %s/%d, whose committed offset is at the end (at end: %v)", restorecheck.Describe(g), k.topic, k.p, atEnd[k])
		}
	}
	if got := restorecheck.GroupOffsets(t, admin(t, dst), sample.AppID); !reflect.DeepEqual(got, want) {
		t.Errorf("group offsets changed by a consumer that does not commit: %v, want %v", got, want)
	}
}

// TestRestoreKfake restores the sample application from a 3-broker kfake
// cluster, backed up to S3, into kfake target clusters: the whole round
// trip, point-in-time restores, every refusal, the replication factor.
func TestRestoreKfake(t *testing.T) {
	t.Parallel()
	src := testkit.StartKfake(t, 3)
	s := prepareSource(t, src, src.Compact)
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		dst := startTarget(t, 3, "roundtrip")
		rep, err := restorer.Run(ctx, restoreOptions(dst, s))
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if rep.TargetClusterID != "target-roundtrip" || rep.TargetBrokers != 3 {
			t.Errorf("report: target cluster %q with %d brokers, want target-roundtrip with 3", rep.TargetClusterID, rep.TargetBrokers)
		}
		_, want := checkRestored(t, s, dst, rep)
		checkSavedReport(t, s.store, rep)
		checkGroupConsumer(t, s, dst, want)

		// PredictOffsets, without a target, agrees with what the restore
		// committed into empty topics.
		pg, err := restorer.PredictOffsets(ctx, s.store, s.res.BackupID, restorer.StrategyChangelog, nil)
		if err != nil {
			t.Fatalf("predict offsets: %v", err)
		}
		if !reflect.DeepEqual(pg.Offsets, rep.Group.Offsets) {
			t.Errorf("PredictOffsets:\n%+v\nthe restore's group plan:\n%+v", pg.Offsets, rep.Group.Offsets)
		}

		// Field case 23 A1 (a restore run again): the same restore again
		// produces nothing and commits
		// the same offsets.
		adm := admin(t, dst)
		all := slices.Sorted(maps.Keys(s.restoredTopics()))
		ends := restorecheck.EndOffsets(t, adm, all...)
		again, err := restorer.Run(ctx, restoreOptions(dst, s))
		if err != nil {
			t.Fatalf("the same restore again: %v", err)
		}
		if again.Records != 0 {
			t.Errorf("the same restore again produced %d records, want 0", again.Records)
		}
		for _, tp := range again.Topics {
			if tp.Action != "resume" {
				t.Errorf("the same restore again: topic %q action %q, want resume", tp.Topic, tp.Action)
			}
		}
		if got := restorecheck.EndOffsets(t, adm, all...); !reflect.DeepEqual(got, ends) {
			t.Errorf("the same restore again changed the end offsets: %v, before %v", got, ends)
		}
		if got := restorecheck.GroupOffsets(t, adm, sample.AppID); !reflect.DeepEqual(got, want) {
			t.Errorf("group offsets after the same restore again: %v, want %v", got, want)
		}

		// Field case 23 A2: a topic deleted and created again empty (a new topic
		// id) is restored in full; the others are left alone.
		if _, err := adm.DeleteTopic(ctx, sample.Payments); err != nil {
			t.Fatal(err)
		}
		createTopic(t, dst, sample.Payments, 1, nil)
		third, err := restorer.Run(ctx, restoreOptions(dst, s))
		if err != nil {
			t.Fatalf("restore after %s was recreated: %v", sample.Payments, err)
		}
		want0 := int64(len(s.recs[sample.Payments][0]))
		if third.Records != want0 {
			t.Errorf("restore after %s was recreated produced %d records, want its %d", sample.Payments, third.Records, want0)
		}
		for _, tp := range third.Topics {
			if w := map[bool]string{true: "fill", false: "resume"}[tp.Topic == sample.Payments]; string(tp.Action) != w {
				t.Errorf("restore after %s was recreated: topic %q action %q, want %s", sample.Payments, tp.Topic, tp.Action, w)
			}
		}
		pe := restorecheck.EndOffsets(t, adm, sample.Payments)
		restorecheck.SameRecords(t, sample.Payments+" restored again", restorecheck.ReadAll(t, dst.Addrs(), pe)[sample.Payments][0], s.recs[sample.Payments][0], false)
		if got := restorecheck.GroupOffsets(t, adm, sample.AppID); !reflect.DeepEqual(got, want) {
			t.Errorf("group offsets after %s was restored again: %v, want %v", sample.Payments, got, want)
		}
	})

	t.Run("PointInTime", func(t *testing.T) {
		dst := startTarget(t, 3, "pitr")
		adm := admin(t, dst)
		before := restorecheck.Snapshot(t, adm, sample.AppID)

		// Field case 20 A1 (docs/DOMAIN.md#pitr): with changelogs selected,
		// refused before any write.
		o := restoreOptions(dst, s)
		o.Strategy = ""
		o.ToTime = &s.pitr
		_, err := restorer.Run(ctx, o)
		r := refused(t, err)
		for _, name := range []string{sample.Changelog, sample.Customers} {
			if !strings.Contains(r.Error(), name) {
				t.Errorf("refusal does not name changelog topic %q: %v", name, r)
			}
		}
		restorecheck.Unchanged(t, adm, sample.AppID, before)

		// Field case 20 A2: rebuild from inputs and outputs cut at the time.
		o.Strategy = restorer.StrategyRebuild
		o.Topics = []string{sample.Orders, sample.Payments, sample.Totals, clicksTopic}
		rep, err := restorer.Run(ctx, o)
		if err != nil {
			t.Fatalf("rebuild restore to %v: %v", s.pitr, err)
		}
		wantTopics := map[string]int{}
		for _, name := range o.Topics {
			wantTopics[name] = s.parts[name]
		}
		if got := restorecheck.Topics(t, adm); !maps.Equal(got, wantTopics) {
			t.Errorf("topics on the target %v, want %v", got, wantTopics)
		}
		ends := restorecheck.EndOffsets(t, adm, o.Topics...)
		recs := restorecheck.ReadAll(t, dst.Addrs(), ends)
		plans := map[string]restorer.PartitionPlan{}
		for _, tp := range rep.Topics {
			for _, pp := range tp.PartitionPlans {
				plans[fmt.Sprintf("%s/%d", tp.Topic, pp.Partition)] = pp
			}
		}
		for _, topic := range o.Topics {
			for p, src := range s.recs[topic] {
				what := fmt.Sprintf("topic %q partition %d", topic, p)
				want, cutAt := restorecheck.Prefix(src, s.pitr.UnixMilli())
				restorecheck.SameRecords(t, what, recs[topic][p], want, s.logAppend[topic])
				pp := plans[fmt.Sprintf("%s/%d", topic, p)]
				if pp.Records != int64(len(want)) || pp.CutAt != cutAt {
					t.Errorf("%s: plan says %d records, cut at %d; want %d, cut at %d", what, pp.Records, pp.CutAt, len(want), cutAt)
				}
			}
		}
		// The seed's shape, so that the cut above is not vacuous.
		for p, n := range map[int32]int{0: 2, 1: 2, 2: 0} {
			if got := len(recs[clicksTopic][p]); got != n {
				t.Errorf("%s partition %d: %d records restored, want %d (cut at t+%ds of %v)", clicksTopic, p, got, n, clicksCut, clickSeconds[p])
			}
		}
		// The group's input offsets: the start of the restored data.
		starts := restorecheck.StartOffsets(t, adm, o.Topics...)
		want := restorecheck.Offsets{}
		for _, topic := range o.Topics {
			for p := range s.committed[topic] {
				want.Set(topic, p, starts[topic][p])
			}
		}
		if got := restorecheck.GroupOffsets(t, adm, sample.AppID); !reflect.DeepEqual(got, want) {
			t.Errorf("group offsets after a rebuild restore: %v, want %v", got, want)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			brokers map[string]string
			setup   func(t *testing.T, dst *testkit.Kfake)
			want    []string // the refusal names these
		}{
			{name: "NonEmptyTopic", // field case 23 A4: a target that is not empty
				setup: func(t *testing.T, dst *testkit.Kfake) {
					createTopic(t, dst, sample.Payments, 1, nil)
					testkit.KcatProduce(t, dst.Bootstrap(), sample.Payments, 0, []string{"unrelated:record"}, "-K:")
				},
				want: []string{sample.Payments, "not empty"}},
			{name: "FewerPartitions", // field case 05 A2: the wrong number of partitions
				setup: func(t *testing.T, dst *testkit.Kfake) { createTopic(t, dst, sample.Orders, 2, nil) },
				want:  []string{sample.Orders, "2 partitions"}},
			{name: "MorePartitions", // field case 05 A3
				setup: func(t *testing.T, dst *testkit.Kfake) { createTopic(t, dst, sample.Orders, 8, nil) },
				want:  []string{sample.Orders, "8 partitions"}},
			{name: "ActiveGroupMember", // field case 18 A2: a running application
				setup: func(t *testing.T, dst *testkit.Kfake) {
					createTopic(t, dst, "unrelated", 1, nil)
					runGroupMember(t, dst, sample.AppID, "unrelated")
				},
				want: []string{sample.AppID, "Stable"}},
			{name: "RecordTooLargeForTopic", // field cases 08 and 21: max.message.bytes
				setup: func(t *testing.T, dst *testkit.Kfake) {
					createTopic(t, dst, sample.Orders, 3, map[string]*string{"max.message.bytes": ptr("64")})
				},
				want: []string{sample.Orders, "max.message.bytes"}},
			{name: "RecordTooLargeForBroker",
				brokers: map[string]string{"message.max.bytes": "100"},
				want:    []string{sample.Orders, sample.Customers, "max.message.bytes"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var opts []kfake.Opt
				if tc.brokers != nil {
					opts = append(opts, kfake.BrokerConfigs(tc.brokers))
				}
				dst := startTarget(t, 3, strings.ToLower(tc.name), opts...)
				if tc.setup != nil {
					tc.setup(t, dst)
				}
				adm := admin(t, dst)
				before := restorecheck.Snapshot(t, adm, sample.AppID)
				var beforeRecs restorecheck.Records
				if len(before.Ends) > 0 {
					beforeRecs = restorecheck.ReadAll(t, dst.Addrs(), before.Ends)
				}
				_, err := restorer.Run(ctx, restoreOptions(dst, s))
				r := refused(t, err)
				for _, w := range tc.want {
					if !strings.Contains(r.Error(), w) {
						t.Errorf("refusal does not mention %q: %v", w, r)
					}
				}
				restorecheck.Unchanged(t, adm, sample.AppID, before)
				if len(before.Ends) > 0 {
					if after := restorecheck.ReadAll(t, dst.Addrs(), before.Ends); !reflect.DeepEqual(after, beforeRecs) {
						t.Errorf("records on the target changed:\nbefore %v\n after %v", beforeRecs, after)
					}
				}
			})
		}
	})

	t.Run("ReplicationFactor", func(t *testing.T) { // field case 08 A3: never a silent downgrade
		for _, tp := range s.m.Topics {
			if tp.ReplicationFactor != 3 {
				t.Fatalf("topic %q backed up with replication factor %d; this test needs 3", tp.Name, tp.ReplicationFactor)
			}
		}
		dst := startTarget(t, 1, "rf")
		adm := admin(t, dst)
		before := restorecheck.Snapshot(t, adm, sample.AppID)
		o := restoreOptions(dst, s)
		_, err := restorer.Run(ctx, o)
		r := refused(t, err)
		if !strings.Contains(r.Error(), "replication factor") {
			t.Errorf("refusal does not mention the replication factor: %v", r)
		}
		restorecheck.Unchanged(t, adm, sample.AppID, before)

		o.ReplicationFactor = 1
		rep, err := restorer.Run(ctx, o)
		if err != nil {
			t.Fatalf("restore with replication factor 1: %v", err)
		}
		for topic, rf := range restorecheck.ReplicationFactors(t, adm, slices.Sorted(maps.Keys(s.restoredTopics()))...) {
			if rf != 1 {
				t.Errorf("topic %q created with replication factor %d, want 1", topic, rf)
			}
		}
		checkRestored(t, s, dst, rep)
	})
}

func ptr(s string) *string { return &s }

func createTopic(t *testing.T, c cluster, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := admin(t, c)
	resp, err := adm.CreateTopic(context.Background(), partitions, -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %q: %v", name, err)
	}
	waitForLeaders(t, adm, name)
}

// runGroupMember runs kcat as a member of group subscribed to topic in the
// background and waits until the group is Stable. The returned function
// (also run at cleanup) stops kcat, which leaves the group.
func runGroupMember(t *testing.T, c cluster, group, topic string) (stop func()) {
	t.Helper()
	bin := os.Getenv("KDR_KCAT") // as testkit.Kcat finds it
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kcat"); err != nil {
			t.Fatalf("kcat: %v", err)
		}
	}
	cmd := exec.Command(bin, "-b", c.Bootstrap(), "-G", group, "-q", "-X", "enable.auto.commit=false", topic)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	adm := admin(t, c)
	deadline := time.Now().Add(30 * time.Second)
	for {
		dg, err := adm.DescribeGroups(context.Background(), group)
		if err == nil && dg[group].State == "Stable" && len(dg[group].Members) == 1 {
			return stop
		}
		select {
		case <-done:
			t.Fatalf("kcat -G exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %q not Stable with kcat as its member after 30s (%+v, %v); kcat: %s", group, dg[group], err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startKafkaPair starts a source and a target Apache Kafka broker at once.
func startKafkaPair(t *testing.T, srcOpts ...testkit.KafkaOpt) (src, dst *testkit.Kafka) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(2)
	// StartKafka fails the test through t.Fatal, which ends only its own
	// goroutine here: the nil result tells.
	go func() { defer wg.Done(); src = testkit.StartKafka(t, srcOpts...) }()
	go func() { defer wg.Done(); dst = testkit.StartKafka(t) }()
	wg.Wait()
	if src == nil || dst == nil {
		t.FailNow()
	}
	return src, dst
}

// TestRestoreRealKafka restores the sample application from a real Apache
// Kafka broker, backed up to S3, into another one, and cross-checks with
// Kafka's own tools.
func TestRestoreRealKafka(t *testing.T) {
	t.Parallel()
	src, dst := startKafkaPair(t,
		testkit.KafkaProperty("log.cleaner.backoff.ms", "100"),
		testkit.KafkaProperty("log.cleaner.min.compaction.lag.ms", "0"),
		testkit.KafkaProperty("log.retention.check.interval.ms", "1000"))
	s := prepareSource(t, src, func() {
		waitForCompaction(t, src)
		waitForInteriorHoles(t, src)
		freezeCompaction(t, src)
	})
	ctx := context.Background()

	// Field case 18 A2 on a real broker: a Stable group refuses the restore, and
	// nothing is written. Then the member leaves (the group is Empty, A1).
	createTopic(t, dst, "unrelated", 1, nil)
	stop := runGroupMember(t, dst, sample.AppID, "unrelated")
	adm := admin(t, dst)
	before := restorecheck.Snapshot(t, adm, sample.AppID)
	_, err := restorer.Run(ctx, restoreOptions(dst, s))
	if r := refused(t, err); !strings.Contains(r.Error(), sample.AppID) || !strings.Contains(r.Error(), "Stable") {
		t.Errorf("refusal does not name the group %q and its state Stable: %v", sample.AppID, r)
	}
	restorecheck.Unchanged(t, adm, sample.AppID, before)
	stop()
	if _, err := adm.DeleteTopic(ctx, "unrelated"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		dg, err := adm.DescribeGroups(ctx, sample.AppID)
		_, listed := restorecheck.Topics(t, adm)["unrelated"]
		if err == nil && dg[sample.AppID].State == "Empty" && !listed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %q is %q and topic unrelated listed %v 30s after kcat left", sample.AppID, dg[sample.AppID].State, listed)
		}
	}

	rep, err := restorer.Run(ctx, restoreOptions(dst, s))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if rep.Group == nil || rep.Group.TargetState != "Empty" {
		t.Errorf("report: target group state %+v, want Empty", rep.Group)
	}
	if rep.TargetClusterID != dst.ClusterID() {
		t.Errorf("report: target cluster %q, the broker says %q", rep.TargetClusterID, dst.ClusterID())
	}
	_, want := checkRestored(t, s, dst, rep)

	t.Run("ConsumerGroupCommand", func(t *testing.T) {
		out, err := dst.RunTool(t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", dst.Bootstrap(), "--describe", "--group", sample.AppID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := restorecheck.ParseConsumerGroupDescribe(out)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("kafka-consumer-groups --describe on the target shows CURRENT-OFFSET %v, want %v\n%s", got, want, out)
		}
	})

	t.Run("StreamsResetter", func(t *testing.T) {
		inputs := []string{sample.Orders, sample.Customers, sample.Payments, eventsTopic, clicksTopic}
		out, err := src.RunTool(t, "org.apache.kafka.tools.StreamsResetter", "--bootstrap-server", src.Bootstrap(),
			"--application-id", sample.AppID, "--dry-run", "--input-topics", strings.Join(inputs, ","))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := restorecheck.ParseStreamsResetterInternal(out)
		if err != nil {
			t.Fatal(err)
		}
		// Ours: changelogs named after a store (not inputs reused as
		// changelogs) and repartition/FK-join topics of this application.
		// The reset tool also takes the internal topics of application
		// order-processor-v1, whose names start with "order-processor-"
		// (KAFKA-14922); our classification names them as another
		// application's instead.
		var ours, otherApp []string
		for _, d := range s.res.Decisions {
			switch {
			case d.BrokerInternal:
			case d.OtherApplicationID != "":
				otherApp = append(otherApp, d.Topic)
			case d.Class == topicfilter.Repartition, d.Class == topicfilter.Changelog && !d.SourceChangelog:
				ours = append(ours, d.Topic)
			}
		}
		if !slices.Equal(otherApp, []string{sample.OtherTopic}) {
			t.Errorf("topics classified as another application's: %v, want [%s]", otherApp, sample.OtherTopic)
		}
		union := append(slices.Clone(ours), otherApp...)
		sort.Strings(union)
		if !slices.Equal(theirs, union) {
			t.Errorf("StreamsResetter's internal topics %v; ours %v plus the other application's %v\n%s", theirs, ours, otherApp, out)
		}
		for _, tp := range s.m.Topics {
			internal := slices.Contains(theirs, tp.Name)
			if internal != (tp.Class == string(topicfilter.Changelog) && !tp.SourceChangelog) {
				t.Errorf("manifest topic %q (class %s, source changelog %v): StreamsResetter internal %v", tp.Name, tp.Class, tp.SourceChangelog, internal)
			}
		}
	})

	checkGroupConsumer(t, s, dst, want)
}

// Interrupted restore (field case 23 A3: a restore killed part-way resumes
// where it stopped, docs/DOMAIN.md#field-case-23).

const (
	bulkTopic   = "bulk"
	bulkApp     = "bulk-app"
	bulkPerPart = 20000
)

// slowGetStore delays every segment read, so that a restore takes long
// enough to be killed in the middle.
type slowGetStore struct {
	storage.Backend
	delay time.Duration
}

func (s slowGetStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if strings.HasPrefix(key, "segments/") {
		time.Sleep(s.delay)
	}
	return s.Backend.Get(ctx, key)
}

// TestHelperRestoreProcess is not a test: TestRestoreInterruptedResumes runs
// the test binary with KDR_HELPER_RESTORE set to get a restore process it
// can SIGKILL.
func TestHelperRestoreProcess(t *testing.T) {
	dir, seeds := os.Getenv("KDR_HELPER_RESTORE"), os.Getenv("KDR_HELPER_TARGET")
	if dir == "" {
		t.Skip("helper process for TestRestoreInterruptedResumes")
	}
	fs, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(strings.Split(seeds, ",")...)},
		Store: slowGetStore{fs, 150 * time.Millisecond}, ApplicationID: bulkApp, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestoreInterruptedResumes kills a restore process once the target
// holds some of the records, re-runs the restore, and checks that it resumes
// and that the target ends with every record exactly once.
func TestRestoreInterruptedResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a subprocess")
	}
	ctx := context.Background()
	src := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 2, -1, nil, bulkTopic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	base := time.Now().Add(-time.Hour)
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range bulkPerPart {
			recs = append(recs, &kgo.Record{Topic: bulkTopic, Partition: p, Key: []byte(fmt.Sprintf("k-%d-%05d", p, i)),
				Value: []byte(fmt.Sprintf("v-%d-%05d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.AddOffset(bulkTopic, 0, 12345, -1)
	offs.AddOffset(bulkTopic, 1, bulkPerPart, -1)
	if err := adm.CommitAllOffsets(ctx, bulkApp, offs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fs, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: fs,
		ApplicationID: bulkApp, Include: []string{bulkTopic}, SegmentMaxRecords: 1000, SourceClusterID: "bulk"}); err != nil {
		t.Fatalf("backup: %v", err)
	}
	srcRecs := restorecheck.ReadAll(t, src.Addrs(), restorecheck.EndOffsets(t, adm, bulkTopic))[bulkTopic]

	dst := startTarget(t, 1, "bulk")
	dadm := admin(t, dst)
	held := func() int64 {
		lo, err := dadm.ListEndOffsets(ctx, bulkTopic)
		if err != nil || lo.Error() != nil {
			return 0
		}
		var n int64
		lo.Each(func(o kadm.ListedOffset) { n += max(o.Offset, 0) })
		return n
	}
	// Kill a first restore early, then a second one (which resumes the
	// first) later.
	var killedAt map[int32]int64
	for _, after := range []int64{3000, 20000} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRestoreProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "KDR_HELPER_RESTORE="+dir, "KDR_HELPER_TARGET="+strings.Join(dst.Addrs(), ","))
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		deadline := time.Now().Add(60 * time.Second)
		for held() < after {
			select {
			case <-exited:
				t.Fatalf("the restore process ended before it was killed (%d records on the target): %s", held(), out.String())
			default:
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				<-exited
				t.Fatalf("the restore process did not get to %d records in 60s: %s", after, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		time.Sleep(200 * time.Millisecond)
		killedAt = restorecheck.EndOffsets(t, dadm, bulkTopic)[bulkTopic]
		if killedAt[0]+killedAt[1] >= 2*bulkPerPart {
			t.Fatalf("the restore had finished when killed (%v records); slow it down", killedAt)
		}
		t.Logf("killed the restore with %v records on the target", killedAt)
	}
	there := killedAt[0] + killedAt[1]

	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: fs, ApplicationID: bulkApp})
	if err != nil {
		t.Fatalf("re-run after the kill: %v", err)
	}
	if len(rep.Topics) != 1 || rep.Topics[0].Action != "resume" {
		t.Fatalf("re-run plan %+v, want topic %q with action resume", rep.Topics, bulkTopic)
	}
	for _, pp := range rep.Topics[0].PartitionPlans {
		if pp.AlreadyThere != killedAt[pp.Partition] {
			t.Errorf("partition %d: plan finds %d records already there, the target held %d", pp.Partition, pp.AlreadyThere, killedAt[pp.Partition])
		}
	}
	if rep.Records != 2*bulkPerPart-there {
		t.Errorf("re-run produced %d records, want %d (%d minus the %d already there)", rep.Records, 2*bulkPerPart-there, 2*bulkPerPart, there)
	}
	ends := restorecheck.EndOffsets(t, dadm, bulkTopic)
	got := restorecheck.ReadAll(t, dst.Addrs(), ends)[bulkTopic]
	for p := range int32(2) {
		restorecheck.SameRecords(t, fmt.Sprintf("partition %d", p), got[p], srcRecs[p], false)
		if ends[bulkTopic][p] != bulkPerPart {
			t.Errorf("partition %d ends at %d, want %d: every record exactly once", p, ends[bulkTopic][p], bulkPerPart)
		}
	}
	want := restorecheck.Offsets{}
	want.Set(bulkTopic, 0, 12345)
	want.Set(bulkTopic, 1, bulkPerPart)
	if got := restorecheck.GroupOffsets(t, dadm, bulkApp); !reflect.DeepEqual(got, want) {
		t.Errorf("group %q offsets after the resumed restore: %v, want %v", bulkApp, got, want)
	}
}

// admin returns an admin client for c whose metadata answers are at most
// 10 ms old: franz-go caches metadata for MetadataMinAge (5 s by default),
// which would hide the topics a restore has just created.
func admin(t *testing.T, c cluster) *kadm.Client {
	t.Helper()
	return testkit.Admin(t, c.Addrs(), kgo.MetadataMinAge(10*time.Millisecond))
}
