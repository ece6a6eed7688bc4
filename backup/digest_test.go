package backup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// clusterDigest reads topic/partition on the cluster with read_committed
// from its log start to its last stable offset and digests its state,
// apart from the backup's code path.
func clusterDigest(t *testing.T, addrs []string, topic string, partition int32) statedigest.StateDigest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := testkit.Admin(t, addrs)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, partition)
	d := statedigest.New()
	cl := testkit.Client(t, addrs, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	// Done at the record before the end, or when a poll finds nothing
	// more: the end may be a transaction marker, which is never delivered.
	for pos := int64(-1); pos < end.Offset-1; {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("read %s/%d: stopped at %d of %d", topic, partition, pos, end.Offset)
		}
		n := 0
		for _, r := range fs.Records() {
			if r.Offset < end.Offset {
				d.Add(r.Key, r.Value)
				n++
			}
			pos = r.Offset
		}
		if n == 0 {
			break
		}
	}
	return d.Sum()
}

func digestOf(t *testing.T, m *format.Manifest, topic string, partition int32) *statedigest.StateDigest {
	t.Helper()
	for _, tp := range m.Topics {
		if tp.Name == topic {
			for _, p := range tp.PartitionCuts {
				if p.Partition == partition {
					return p.StateDigest
				}
			}
		}
	}
	t.Fatalf("manifest %s has no %s/%d", m.BackupID, topic, partition)
	return nil
}

// TestBackupRecordsTheStateDigestOfChangelogs: every partition of a
// changelog and of a source-topic changelog gets the digest of the state
// on the cluster (the sample's changelog is written in transactions, one
// aborted; its customers topic is compacted), other topics none.
func TestBackupRecordsTheStateDigestOfChangelogs(t *testing.T) {
	kf := seededKfake(t)
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(context.Background(), sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			got := p.StateDigest
			if tp.Class != "changelog" && !tp.SourceChangelog {
				if got != nil {
					t.Errorf("%s/%d (class %s): state digest %+v, want none", tp.Name, p.Partition, tp.Class, got)
				}
				continue
			}
			want := clusterDigest(t, kf.Addrs(), tp.Name, p.Partition)
			if got == nil || *got != want {
				t.Errorf("%s/%d: state digest %+v, want %+v (the cluster's)", tp.Name, p.Partition, got, want)
			}
		}
	}
	// The changelog's committed transactions leave cust-0..2 per partition.
	if d := digestOf(t, m, sample.Changelog, 0); d == nil || d.Keys != 3 {
		t.Fatalf("%s/0: %+v, want 3 live keys", sample.Changelog, d)
	}
}

// TestIncrementalStateDigestCoversTheChain: an incremental backup's digest
// is that of the whole chain (updates and a tombstone of keys the parent
// holds), equal to a full backup's and the cluster's; a partition with no
// new records keeps its parent's.
func TestIncrementalStateDigestCoversTheChain(t *testing.T) {
	kf := seededKfake(t)
	store, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	r1, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m1 := backupcheck.Latest(t, store, r1.BackupID)
	cl := manualClient(t, kf.Addrs())
	recs := []*kgo.Record{
		{Topic: sample.Changelog, Partition: 0, Key: []byte("cust-0"), Value: nil},               // removes a key of the parent
		{Topic: sample.Changelog, Partition: 0, Key: []byte("cust-1"), Value: []byte("total-9")}, // updates one
		{Topic: sample.Changelog, Partition: 0, Key: []byte("cust-7"), Value: []byte{}},          // adds one, empty
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r2, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m2 := backupcheck.Latest(t, store, r2.BackupID)
	if m2.ParentBackupID != r1.BackupID {
		t.Fatalf("second backup's parent %q, want %q", m2.ParentBackupID, r1.BackupID)
	}
	fullStore, _ := storage.NewFilesystem(t.TempDir())
	r3, err := backup.Run(ctx, sampleOptions(kf.Addrs(), fullStore))
	if err != nil {
		t.Fatal(err)
	}
	m3 := backupcheck.Latest(t, fullStore, r3.BackupID)
	for _, p := range []int32{0, 1} {
		inc, full := digestOf(t, m2, sample.Changelog, p), digestOf(t, m3, sample.Changelog, p)
		want := clusterDigest(t, kf.Addrs(), sample.Changelog, p)
		if inc == nil || full == nil || *inc != want || *full != want {
			t.Errorf("%s/%d: incremental %+v, full %+v, want both %+v (the cluster's)", sample.Changelog, p, inc, full, want)
		}
	}
	if a, b := digestOf(t, m1, sample.Changelog, 0), digestOf(t, m2, sample.Changelog, 0); a == nil || b == nil || a.Digest == b.Digest || b.Keys != 3 {
		t.Errorf("partition 0 changed (cust-0 deleted, cust-7 added): parent %+v, incremental %+v", a, b)
	}
	if a, b := digestOf(t, m1, sample.Changelog, 1), digestOf(t, m2, sample.Changelog, 1); a == nil || b == nil || *a != *b {
		t.Errorf("partition 1 did not change: parent %+v, incremental %+v", a, b)
	}
}

// ledgerOptions back up "ledger", a source-topic changelog (keys updated
// and deleted), in small segments.
func ledgerOptions(seeds []string, store storage.Backend) backup.Options {
	return backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Store: store, ApplicationID: "trades-app",
		Include: []string{"ledger"}, SourceChangelogTopics: []string{"ledger"}, SegmentMaxRecords: 500, Concurrency: 2}
}

// TestKilledBackupResumesToTheSameStateDigest: a backup of a changelog
// SIGKILLed after some of its segments are durable, then resumed, records
// the digest an uninterrupted backup does (the resumed run reads back the
// segments the killed one made durable).
func TestKilledBackupResumesToTheSameStateDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses")
	}
	kf := testkit.StartKfake(t, 1)
	cl := manualClient(t, kf.Addrs())
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, "ledger"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		var recs []*kgo.Record
		// 3,000 accounts, the first 1,000 updated again: the segments the
		// killed run made durable hold keys that no later record rewrites.
		for i := range 4000 {
			r := &kgo.Record{Topic: "ledger", Partition: p, Key: fmt.Appendf(nil, "acct-%d", i%3000), Value: fmt.Appendf(nil, "balance-%d", i)}
			if i%9 == 0 {
				r.Value = nil
			}
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const liveKeys = 2667 // of the 3,000, those whose latest record is no tombstone (every 9th)
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBackupProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KDR_HELPER_BACKUP="+dir, "KDR_HELPER_SEEDS="+strings.Join(kf.Addrs(), ","), "KDR_HELPER_OPTIONS=ledger")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for segmentsInProgress(t, store) < 5 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("backup made no progress: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	r, err := backup.Run(ctx, ledgerOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatalf("re-run after the kill: %v", err)
	}
	if !r.Resumed {
		t.Fatal("the re-run did not resume the killed backup")
	}
	resumed := backupcheck.Latest(t, store, r.BackupID)
	whole, _ := storage.NewFilesystem(t.TempDir())
	r2, err := backup.Run(ctx, ledgerOptions(kf.Addrs(), whole))
	if err != nil {
		t.Fatal(err)
	}
	uninterrupted := backupcheck.Latest(t, whole, r2.BackupID)
	for p := range int32(2) {
		got, want := digestOf(t, resumed, "ledger", p), digestOf(t, uninterrupted, "ledger", p)
		if got == nil || want == nil || *got != *want || want.Keys != liveKeys {
			t.Errorf("ledger/%d: resumed %+v, uninterrupted %+v (want equal, %d live keys)", p, got, want, liveKeys)
		}
	}
}

// TestUnreadRangeIsNotInTheStateDigest: a partition the broker answers
// with empty fetches below the end is ended unread; its digest is that of
// the records the chain holds (below the unread range), and the next
// backup, which reads the range, records the digest of the whole state.
func TestUnreadRangeIsNotInTheStateDigest(t *testing.T) {
	kf, topicID := eventsKfake(t)
	cl := manualClient(t, kf.Addrs())
	ctx := context.Background()
	produceKeys := func(from, to int) {
		for p := range int32(3) {
			var recs []*kgo.Record
			for i := from; i < to; i++ {
				recs = append(recs, &kgo.Record{Topic: eventsTopic, Partition: p, Key: fmt.Appendf(nil, "k%d", i%70), Value: fmt.Appendf(nil, "v%d", i)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produceKeys(0, 100)
	store, _ := storage.NewFilesystem(t.TempDir())
	o := eventsOptions(kf.Addrs(), store)
	o.SourceChangelogTopics = []string{eventsTopic}
	if _, err := backup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	produceKeys(100, 200)
	var blocked atomic.Bool
	blocked.Store(true)
	kf.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		p, off, ok := fetchOf(req, topicID)
		if !ok || p != 1 || off < 100 || !blocked.Load() {
			return nil, nil, false
		}
		return emptyFetch(req, 200), nil, true
	})
	r2, err := backup.Run(ctx, o)
	if err != nil || len(r2.Unread) != 1 {
		t.Fatalf("second backup: %v, unread %+v; want partition 1 unread", err, r2)
	}
	m2 := backupcheck.Latest(t, store, r2.BackupID)
	held := statedigest.New()
	for _, r := range backupcheck.Records(t, store, m2, eventsTopic, 1) {
		held.Add(r.Key, r.Value)
	}
	blocked.Store(false)
	if got, whole := digestOf(t, m2, eventsTopic, 1), clusterDigest(t, kf.Addrs(), eventsTopic, 1); got == nil || *got != held.Sum() || got.Equal(whole) {
		t.Errorf("partition 1 with offsets 100..199 unread: digest %+v, want the chain's %+v (not the cluster's %+v)", got, held.Sum(), whole)
	}
	r3, err := backup.Run(ctx, o)
	if err != nil || len(r3.Unread) != 0 {
		t.Fatalf("third backup: %v, unread %+v", err, r3)
	}
	m3 := backupcheck.Latest(t, store, r3.BackupID)
	for p := range int32(3) {
		if got, want := digestOf(t, m3, eventsTopic, p), clusterDigest(t, kf.Addrs(), eventsTopic, p); got == nil || *got != want {
			t.Errorf("partition %d after the range was read: digest %+v, want the cluster's %+v", p, got, want)
		}
	}
	backupcheck.MatchesCluster(t, store, m3, kf.Addrs())
}
