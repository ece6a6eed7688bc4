package backup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func produce(t *testing.T, cl *kgo.Client, topic string, part int32, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func manualClient(t *testing.T, addrs []string) *kgo.Client {
	return testkit.Client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

func TestSecondRunBacksUpOnlyNewRecords(t *testing.T) {
	kf := seededKfake(t)
	store, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	r1, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m1 := backupcheck.Latest(t, store, r1.BackupID)

	cl := manualClient(t, kf.Addrs())
	produce(t, cl, sample.Orders, 1, 1000, 7)
	produce(t, cl, sample.Totals, 1, 0, 3) // the empty partition gets records
	r2, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	// Every backup captures its own in-flight tails (never chained): the
	// sample's 8 records in flight are copied again, beside the 10 new.
	if r2.ParentID != r1.BackupID || r2.Records-r2.InFlightRecords != 10 || r2.InFlightRecords != 8 {
		t.Fatalf("second run: parent %q records %d (%d in flight); want parent %q, 10 new records and the 8 in flight", r2.ParentID, r2.Records, r2.InFlightRecords, r1.BackupID)
	}
	for _, tp := range backupcheck.Latest(t, store, r2.BackupID).InFlight {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				if s.BackupID != r2.BackupID {
					t.Errorf("in-flight tail %s/%d names segment %s of backup %s: tails are never chained", tp.Name, p.Partition, s.Key, s.BackupID)
				}
			}
		}
	}
	m2 := backupcheck.Latest(t, store, r2.BackupID)
	for _, tp := range m2.Topics {
		for _, p := range tp.PartitionCuts {
			prev := findCut(m1, tp.Name, p.Partition)
			for _, s := range p.Segments {
				if s.BackupID == r2.BackupID && s.FirstOffset < prev.EndOffset {
					t.Errorf("%s/%d: new segment %s re-reads offsets below the previous end %d", tp.Name, p.Partition, s.Key, prev.EndOffset)
				}
				if s.BackupID == r1.BackupID && !strings.Contains(s.Key, r1.BackupID) {
					t.Errorf("segment %s attributed to %s", s.Key, r1.BackupID)
				}
			}
		}
	}
	backupcheck.MatchesCluster(t, store, m2, kf.Addrs())

	// Nothing new: a third run copies nothing but its own in-flight
	// tails, and still stands alone.
	r3, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	if r3.Records != r3.InFlightRecords || r3.InFlightRecords != 8 {
		t.Fatalf("third run copied %d records (%d in flight); want only the 8 in flight", r3.Records, r3.InFlightRecords)
	}
	backupcheck.MatchesCluster(t, store, backupcheck.Latest(t, store, r3.BackupID), kf.Addrs())
}

func findCut(m *format.Manifest, topic string, p int32) format.Partition {
	if tp := backupcheck.Topic(m, topic); tp != nil {
		for _, c := range tp.PartitionCuts {
			if c.Partition == p {
				return c
			}
		}
	}
	return format.Partition{}
}

func TestRetentionGapAndRecreatedTopicAreRecorded(t *testing.T) {
	kf := seededKfake(t)
	store, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store)); err != nil {
		t.Fatal(err)
	}
	cl := manualClient(t, kf.Addrs())
	adm := kadm.NewClient(cl)
	produce(t, cl, sample.Payments, 0, 100, 10) // offsets 20..29
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{sample.Payments: {0: {Topic: sample.Payments, Partition: 0, At: 25, LeaderEpoch: -1}}})
	if err != nil || dr.Error() != nil {
		t.Fatal(err, dr.Error())
	}
	// Recreate customer-totals: a new topic id.
	if _, err := adm.DeleteTopics(ctx, sample.Totals); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, sample.Totals); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, sample.Totals, 0, 0, 2)

	var logBuf strings.Builder
	o2 := sampleOptions(kf.Addrs(), store)
	o2.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf}, nil))
	r2, err := backup.Run(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	if r2.NewGaps != 1 {
		t.Errorf("NewGaps = %d, want 1", r2.NewGaps)
	}
	// Every warning reaches the log, not only the manifest (new-user test).
	for _, want := range []string{"offsets 20..24 were deleted", "was recreated"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("warning %q not logged:\n%s", want, logBuf.String())
		}
	}
	m2 := backupcheck.Latest(t, store, r2.BackupID)
	pay := findCut(m2, sample.Payments, 0)
	if len(pay.Gaps) != 1 || pay.Gaps[0].From != 20 || pay.Gaps[0].To != 25 || pay.EndOffset != 30 || pay.StartOffset != 8 || pay.Records != 12+5 {
		t.Fatalf("payments after retention: %+v; want gap 20..25, start 8, end 30, 17 records", pay)
	}
	tot := findCut(m2, sample.Totals, 0)
	if tot.Records != 2 || tot.EndOffset != 2 {
		t.Fatalf("recreated topic: %+v; want a new chain of 2 records", tot)
	}
	var warned bool
	for _, w := range m2.Warnings {
		warned = warned || strings.Contains(w, "recreated")
	}
	if !warned {
		t.Errorf("no warning about the recreated topic: %q", m2.Warnings)
	}
	backupcheck.MatchesCluster(t, store, m2, kf.Addrs())
}

func TestRepositoryLock(t *testing.T) {
	kf := seededKfake(t)
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	ctx := context.Background()
	host, _ := os.Hostname()

	put := func(li string) {
		if err := store.Put(ctx, format.LockKey, strings.NewReader(li), int64(len(li))); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	put(fmt.Sprintf(`{"owner":"20260101T000000.000Z-00000000","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, now, now))
	_, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if !errors.Is(err, backup.ErrLocked) || !strings.Contains(err.Error(), "other-host") {
		t.Fatalf("live lock of another host: err = %v; want ErrLocked naming the holder", err)
	}

	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	put(fmt.Sprintf(`{"owner":"20260101T000000.000Z-00000000","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, old, old))
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store)); err != nil {
		t.Fatalf("stale lock (heartbeat an hour old) not taken over: %v", err)
	}

	// A dead process on this host, boot and PID namespace: stale at once.
	dead := exec.Command("true")
	dead.Run()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	pidns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	deadLock := func(boot, pidns string) string {
		return fmt.Sprintf(`{"owner":"20260101T000000.000Z-00000000","hostname":%q,"pid":%d,"created_at":%q,"heartbeat_at":%q,"boot_id":%q,"pid_namespace":%q}`,
			host, dead.Process.Pid, now, now, boot, pidns)
	}
	// Not when the lock is of another PID namespace or boot, or says
	// neither (a version before them): its PID means another process.
	for _, li := range []string{deadLock(strings.TrimSpace(string(boot)), "pid:[1]"), deadLock("another-boot", pidns), deadLock("", "")} {
		put(li)
		if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store)); !errors.Is(err, backup.ErrLocked) {
			t.Fatalf("live lock %s of a PID that is not this namespace's: %v; want ErrLocked", li, err)
		}
	}
	put(deadLock(strings.TrimSpace(string(boot)), pidns))
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store)); err != nil {
		t.Fatalf("lock of a dead local process not taken over: %v", err)
	}
	if _, err := store.Stat(ctx, format.LockKey); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("lock not released after the run: %v", err)
	}

	// Two runs at once: each either completes or is refused; the
	// repository stays valid.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = backup.Run(ctx, sampleOptions(kf.Addrs(), store)) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, backup.ErrLocked) {
			t.Fatalf("concurrent run failed with %v", err)
		}
	}
	r, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	backupcheck.MatchesCluster(t, store, backupcheck.Latest(t, store, r.BackupID), kf.Addrs())
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// slowStore delays segment uploads mid-stream so a test can kill the
// process while a segment is in flight.
type slowStore struct {
	storage.Backend
	delay time.Duration
}

func (s slowStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "segments/") {
		r = &slowReader{r: r, delay: s.delay}
	}
	return s.Backend.Put(ctx, key, r, size)
}

type slowReader struct {
	r     io.Reader
	delay time.Duration
	n     int
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.n++
	if s.n == 2 {
		time.Sleep(s.delay)
	}
	return s.r.Read(p)
}

// TestHelperBackupProcess is not a test: TestKilledBackupResumesExactlyOnce
// runs the test binary with KDR_HELPER_BACKUP set to get a backup process it
// can SIGKILL.
func TestHelperBackupProcess(t *testing.T) {
	dir, seeds := os.Getenv("KDR_HELPER_BACKUP"), os.Getenv("KDR_HELPER_SEEDS")
	if dir == "" {
		t.Skip("helper process for TestKilledBackupResumesExactlyOnce")
	}
	fs, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := tradesOptions(strings.Split(seeds, ","), slowStore{fs, 150 * time.Millisecond})
	o.SegmentKind = os.Getenv("KDR_HELPER_KIND")
	if os.Getenv("KDR_HELPER_OPTIONS") == "ledger" { // TestKilledBackupResumesToTheSameStateDigest
		o = ledgerOptions(strings.Split(seeds, ","), slowStore{fs, 150 * time.Millisecond})
	}
	if d, err := time.ParseDuration(os.Getenv("KDR_HELPER_PROGRESS_INTERVAL")); err == nil { // TestBackupKilledBetweenProgressWritesResumesExactlyOnce
		defer backup.SetProgressInterval(d)()
	}
	if _, err := backup.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

func tradesOptions(seeds []string, store storage.Backend) backup.Options {
	return backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Store: store, ApplicationID: "trades-app",
		Include: []string{"trades"}, SegmentMaxRecords: 1000, Concurrency: 2}
}

// TestKilledBackupResumesExactlyOnce is field case 22 (an interrupted
// backup, docs/DOMAIN.md#field-case-22): SIGKILL a backup at several
// points, re-run, and every offset is in the backup exactly once; in
// batch kind too, whose in-flight tail stays in record segments.
func TestKilledBackupResumesExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses")
	}
	for _, kind := range []string{format.KindRecord, format.KindBatch} {
		t.Run(kind, func(t *testing.T) { killedBackupResumes(t, kind) })
	}
}

func killedBackupResumes(t *testing.T, kind string) {
	kf := testkit.StartKfake(t, 3)
	// Batches of about 150 records: a batch segment closes after the batch
	// that reaches SegmentMaxRecords, so it takes several segments too.
	cl := testkit.Client(t, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4<<10))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "trades"); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "trades", 0, 0, 10000)
	produce(t, cl, "trades", 1, 0, 4000)
	// An in-flight tail resumes like other partitions: offsets 1000..4999.
	const rep = "trades-app-KSTREAM-REPARTITION-0000000002-repartition"
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, rep); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, rep, 0, 0, 5000)
	if err := adm.CommitAllOffsets(ctx, "trades-app", kadm.Offsets{rep: {0: {Topic: rep, Partition: 0, At: 1000, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)

	// Kill at growing progress: after 1, 4 and 9 durable segments of this run.
	var firstCut *format.Cut // the cut the first run recorded
	for _, after := range []int{1, 4, 9} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBackupProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KDR_HELPER_BACKUP="+dir, "KDR_HELPER_SEEDS="+strings.Join(kf.Addrs(), ","), "KDR_HELPER_KIND="+kind)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for segmentsInProgress(t, store) < after {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("backup made no progress: %s", out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if firstCut == nil {
			firstCut = progressCut(t, store)
		}
	}
	if _, err := store.Stat(ctx, format.LockKey); err != nil {
		t.Fatalf("the killed run should have left its lock: %v", err)
	}
	o := tradesOptions(kf.Addrs(), store)
	o.SegmentKind = kind
	r, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatalf("re-run after kills: %v", err)
	}
	m := backupcheck.Latest(t, store, r.BackupID)
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				if want := map[bool]string{true: "", false: kind}[kind == format.KindRecord || tp.Class == "repartition"]; s.Kind != want {
					t.Fatalf("%s/%d: segment %s of kind %q, want %q", tp.Name, p.Partition, s.Key, s.Kind, want)
				}
			}
		}
	}
	for p, n := range map[int32]int{0: 10000, 1: 4000} {
		recs := backupcheck.Records(t, store, m, "trades", p)
		if len(recs) != n {
			t.Fatalf("partition %d: %d records, want %d", p, len(recs), n)
		}
		for i, rec := range recs {
			if rec.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d: every offset exactly once", p, i, rec.Offset)
			}
		}
	}
	tail := backupcheck.Records(t, store, m, rep, 0)
	if len(tail) != 4000 || r.InFlightRecords != 4000 {
		t.Fatalf("in-flight tail: %d records (result %d), want 4000", len(tail), r.InFlightRecords)
	}
	for i, rec := range tail {
		if rec.Offset != int64(1000+i) {
			t.Fatalf("in-flight tail: record %d has offset %d: every offset of [1000, 5000) exactly once", i, rec.Offset)
		}
	}
	if m.ParentBackupID != "" || !r.Resumed {
		t.Fatalf("the resumed run should complete the interrupted backup, not start a child of it: parent %q", m.ParentBackupID)
	}
	// Invariant 7: the resumed runs keep the first run's cut, and how it
	// was proven.
	if m.Cut == nil || firstCut == nil || *m.Cut != *firstCut {
		t.Errorf("resumed backup's cut %+v, want the first run's %+v", m.Cut, firstCut)
	}
	// The killed runs' temporary files are removed by the next run.
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), storage.TempPrefix) {
			t.Errorf("temporary file left behind: %s", path)
		}
		return nil
	})
}

// TestBackupKilledBetweenProgressWritesResumesExactlyOnce: the progress
// manifest is written on a timer (issue 13), so a backup can be killed
// with segments stored that no progress.json names yet. The killed run
// here writes progress only for its cut (an interval of an hour); the
// re-run resumes the same cut, reads those segments' records again, and
// holds every offset exactly once.
func TestBackupKilledBetweenProgressWritesResumesExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses")
	}
	kf := testkit.StartKfake(t, 1)
	cl := manualClient(t, kf.Addrs())
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, "trades"); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "trades", 0, 0, 10000)
	produce(t, cl, "trades", 1, 0, 6000)
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBackupProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KDR_HELPER_BACKUP="+dir, "KDR_HELPER_SEEDS="+strings.Join(kf.Addrs(), ","), "KDR_HELPER_PROGRESS_INTERVAL=1h")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for storedSegments(t, store) < 4 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("backup stored no segments: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if named, stored := segmentsInProgress(t, store), storedSegments(t, store); named >= stored {
		t.Fatalf("the killed run's progress.json names %d of its %d stored segments: the test no longer kills between progress writes", named, stored)
	}
	firstCut := progressCut(t, store)

	r, err := backup.Run(ctx, tradesOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatalf("re-run after the kill: %v", err)
	}
	if !r.Resumed {
		t.Fatal("the re-run did not resume the killed backup")
	}
	m := backupcheck.Latest(t, store, r.BackupID)
	for p, n := range map[int32]int{0: 10000, 1: 6000} {
		recs := backupcheck.Records(t, store, m, "trades", p)
		if len(recs) != n {
			t.Fatalf("partition %d: %d records, want %d", p, len(recs), n)
		}
		for i, rec := range recs {
			if rec.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d: every offset exactly once", p, i, rec.Offset)
			}
		}
	}
	if m.Cut == nil || *m.Cut != *firstCut {
		t.Errorf("resumed backup's cut %+v, want the killed run's %+v", m.Cut, firstCut)
	}
}

// storedSegments counts the segment objects in the repository, named by a
// manifest or not.
func storedSegments(t *testing.T, store storage.Backend) int {
	t.Helper()
	n := 0
	store.List(context.Background(), "segments/", func(oi storage.ObjectInfo) error {
		if strings.HasSuffix(oi.Key, ".kseg") {
			n++
		}
		return nil
	})
	return n
}

// progressCut returns the cut recorded in the repository's progress.json.
func progressCut(t *testing.T, store storage.Backend) *format.Cut {
	t.Helper()
	var c *format.Cut
	store.List(context.Background(), "backups/", func(oi storage.ObjectInfo) error {
		if strings.HasSuffix(oi.Key, "/progress.json") {
			if m, err := repository.LoadManifest(context.Background(), store, oi.Key); err == nil {
				c = m.Cut
			}
		}
		return nil
	})
	if c == nil {
		t.Fatal("no progress.json with a cut")
	}
	return c
}

// segmentsInProgress counts the segments the progress manifests
// (progress.json) of the store's backups name; it fails the test on a
// progress manifest that cannot be read (progressSegments).
func segmentsInProgress(t *testing.T, store storage.Backend) int {
	t.Helper()
	n, err := progressSegments(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// progressSegments counts the segments the progress manifests of store
// name. A progress.json gone between the listing and the read (the run
// finished and removed it) counts as none; any other load error is
// returned: a progress manifest refused on read is not "no progress".
func progressSegments(ctx context.Context, store storage.Backend) (int, error) {
	n := 0
	err := store.List(ctx, "backups/", func(oi storage.ObjectInfo) error {
		if !strings.HasSuffix(oi.Key, "/progress.json") {
			return nil
		}
		m, err := repository.LoadManifest(ctx, store, oi.Key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, tp := range slices.Concat(m.Topics, m.InFlight) {
			for _, p := range tp.PartitionCuts {
				n += len(p.Segments)
			}
		}
		return nil
	})
	return n, err
}

// TestProgressSegmentsRefusesAnUnreadableProgressManifest is a regression
// test of the helper above: it counted a progress.json it could not read
// as no segments, which hid a progress manifest refused on read behind
// "no progress yet".
func TestProgressSegmentsRefusesAnUnreadableProgressManifest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := progressSegments(ctx, store); err != nil || n != 0 {
		t.Fatalf("empty store: %d segments, error %v; want 0, none", n, err)
	}
	key := "backups/20260101T000000Z-0001/progress.json"
	if err := store.Put(ctx, key, strings.NewReader(`{"format_version": 99, "topics": [`), -1); err != nil {
		t.Fatal(err)
	}
	if n, err := progressSegments(ctx, store); err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("unreadable %s: %d segments, error %v; want an error naming it", key, n, err)
	}
}

// TestBackupsInOneSecondChain is a regression test: backup ids of runs
// started within one second sorted at random, so a run could pick an older
// backup as its parent and a restore of "latest" could miss records.
func TestBackupsInOneSecondChain(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	cl := manualClient(t, kf.Addrs())
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "fast"); err != nil {
		t.Fatal(err)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	o := backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store, ApplicationID: "fast-app", Include: []string{"fast"}}
	prev := ""
	for i := range 8 {
		produce(t, cl, "fast", 0, i, 1)
		r, err := backup.Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.ParentID != prev || r.Records != 1 || (prev != "" && r.BackupID <= prev) {
			t.Fatalf("run %d: backup %s parent %q copied %d; want parent %q, 1 record, an id sorting after it", i, r.BackupID, r.ParentID, r.Records, prev)
		}
		prev = r.BackupID
	}
	m := backupcheck.Latest(t, store, prev)
	if got := findCut(m, "fast", 0); got.Records != 8 || got.EndOffset != 8 {
		t.Fatalf("latest backup holds %+v; want all 8 records", got)
	}
}

// failingStore fails segment uploads after the first n.
type failingStore struct {
	storage.Backend
	mu sync.Mutex
	n  int
}

func (s *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "segments/") {
		s.mu.Lock()
		s.n--
		fail := s.n < 0
		s.mu.Unlock()
		if fail {
			return errors.New("injected storage failure")
		}
	}
	return s.Backend.Put(ctx, key, r, size)
}

// TestResumeOnlyWithTheSameSelection: a run whose topic filters differ
// from the interrupted backup's starts a new backup and says so (found by
// a new-user test: a changed config was silently ignored on resume).
func TestResumeOnlyWithTheSameSelection(t *testing.T) {
	kf := seededKfake(t)
	fs, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	o := sampleOptions(kf.Addrs(), &failingStore{Backend: fs, n: 2})
	_, err := backup.Run(ctx, o)
	var pe *backup.PhaseError
	if !errors.As(err, &pe) || pe.Phase != backup.PhaseCopy || !pe.Resumable() {
		t.Fatalf("injected failure: err = %v; want a resumable copy-phase error", err)
	}

	changed := sampleOptions(kf.Addrs(), fs)
	changed.Include = []string{sample.Orders}
	r, err := backup.Run(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed || r.Topics != 1 || !strings.Contains(strings.Join(r.Warnings, "\n"), "other filters") {
		t.Fatalf("changed filters: resumed %v, topics %d, warnings %q; want a new backup of 1 topic with a warning", r.Resumed, r.Topics, r.Warnings)
	}

	// Same filters: the interrupted backup is resumed.
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), &failingStore{Backend: fs, n: 1})); err == nil {
		t.Fatal("want the injected failure")
	}
	r, err = backup.Run(ctx, sampleOptions(kf.Addrs(), fs))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Resumed {
		t.Fatalf("same filters: not resumed")
	}
	backupcheck.MatchesCluster(t, fs, backupcheck.Latest(t, fs, r.BackupID), kf.Addrs())
}

func TestNothingSelectedIsAConfigError(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	fs, _ := storage.NewFilesystem(t.TempDir())
	o := backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: fs, Include: []string{"nomatch-*"}}
	_, err := backup.Run(context.Background(), o)
	var pe *backup.PhaseError
	if !errors.Is(err, backup.ErrNothingSelected) || errors.As(err, &pe) {
		t.Fatalf("err = %v; want ErrNothingSelected, not a cluster error", err)
	}
}

// TestDamagedManifestOrSegmentDoesNotBlockTheNextBackup is a regression
// test (new-user test): a truncated latest manifest made every later backup
// fail, and a damaged segment stayed named by every later incremental
// backup with no way out.
func TestDamagedManifestOrSegmentDoesNotBlockTheNextBackup(t *testing.T) {
	kf := seededKfake(t)
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	ctx := context.Background()
	r1, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, format.ManifestKey(r2.BackupID))
	b, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, b[:len(b)/2], 0o600)

	r3, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatalf("backup after a damaged latest manifest: %v", err)
	}
	if r3.ParentID != r1.BackupID || !strings.Contains(strings.Join(r3.Warnings, "\n"), r2.BackupID+" is damaged") {
		t.Fatalf("parent %q (want %q, the latest readable), warnings %q", r3.ParentID, r1.BackupID, r3.Warnings)
	}

	// A damaged segment: a full backup starts a chain that does not name it.
	m3 := backupcheck.Latest(t, store, r3.BackupID)
	seg := m3.Topics[0].PartitionCuts[0].Segments[0].Key
	sb, _ := os.ReadFile(filepath.Join(dir, seg))
	sb[len(sb)/2] ^= 1
	os.WriteFile(filepath.Join(dir, seg), sb, 0o600)
	full := sampleOptions(kf.Addrs(), store)
	full.Full = true
	r4, err := backup.Run(ctx, full)
	if err != nil {
		t.Fatal(err)
	}
	m4 := backupcheck.Latest(t, store, r4.BackupID)
	if m4.ParentBackupID != "" {
		t.Fatalf("full backup has parent %q", m4.ParentBackupID)
	}
	for _, tp := range m4.Topics {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				if s.BackupID != r4.BackupID {
					t.Fatalf("full backup names segment %s of backup %s", s.Key, s.BackupID)
				}
			}
		}
	}
	backupcheck.MatchesCluster(t, store, m4, kf.Addrs())
}

// TestChainOfBothSegmentKindsMatchesTheCluster: a record-kind backup
// continued by batch-kind backups (backup.segment_kind changed between
// runs) is one chain: it holds what the cluster holds (the sample's
// transactions, a compacted topic with holes, in-flight tails), its
// newest manifest is format_version 2, and its state digests are those
// of a full record-kind backup.
func TestChainOfBothSegmentKindsMatchesTheCluster(t *testing.T) {
	kf := seededKfake(t)
	store, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store)); err != nil {
		t.Fatal(err)
	}
	cl := manualClient(t, kf.Addrs())
	produce(t, cl, sample.Orders, 1, 1000, 7)
	produce(t, cl, sample.Totals, 1, 0, 3)
	o := sampleOptions(kf.Addrs(), store)
	o.SegmentKind = format.KindBatch
	r2, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	m2 := backupcheck.Latest(t, store, r2.BackupID)
	kinds := map[string]int{}
	for _, tp := range m2.Topics {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				kinds[s.Kind]++
			}
		}
	}
	if m2.FormatVersion != format.VersionBatch || kinds[""] == 0 || kinds[format.KindBatch] == 0 {
		t.Fatalf("format_version %d, segments by kind %v: want 2 and both kinds in the chain", m2.FormatVersion, kinds)
	}
	backupcheck.MatchesCluster(t, store, m2, kf.Addrs())

	full := sampleOptions(kf.Addrs(), store)
	full.Full = true
	r3, err := backup.Run(ctx, full)
	if err != nil {
		t.Fatal(err)
	}
	m3 := backupcheck.Latest(t, store, r3.BackupID)
	digests := 0
	for _, tp := range m3.Topics {
		for _, p := range tp.PartitionCuts {
			if p.StateDigest != nil {
				digests++
			}
			if c := findCut(m2, tp.Name, p.Partition); !reflect.DeepEqual(c.StateDigest, p.StateDigest) || c.Records != p.Records {
				t.Errorf("%s/%d: the mixed chain's state digest %+v (%d records), a full record backup's %+v (%d)", tp.Name, p.Partition, c.StateDigest, c.Records, p.StateDigest, p.Records)
			}
		}
	}
	if digests == 0 {
		t.Fatal("no state digest compared: the sample has changelogs")
	}
}
