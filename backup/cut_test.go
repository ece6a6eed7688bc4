package backup_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// The transactional test data of the cut tests: an application "cutapp"
// whose producer i (transactional id "cutapp-p<i>", as Kafka Streams names
// its EOS v2 producers "<application.id>-<process>-<thread>") owns
// partition i of the changelog and of the input topic. Each transaction
// writes txnRecords records to its changelog partition and commits input
// offset k for its k-th transaction, in one transaction. So a cut holds
// every committed transaction wholly or not at all exactly when, for every
// i, the changelog's end offset (last stable offset) is (txnRecords+1)*k,
// k the group's committed offset on input partition i (each transaction
// takes txnRecords offsets and one for its commit marker).
const (
	cutApp       = "cutapp"
	cutChangelog = "cutapp-store-changelog"
	cutInput     = "cutapp-input"
	txnRecords   = 3
)

// txnWriter is one transactional producer of the cut tests.
type txnWriter struct {
	cl        *kgo.Client
	txnID     string
	partition int32
	inputID   [16]byte // the input topic's id (TxnOffsetCommit v6+ names topics by id)
	k         int64    // transactions committed
}

func newTxnWriter(t *testing.T, addrs []string, i int32) *txnWriter {
	t.Helper()
	id := fmt.Sprintf("%s-p%d", cutApp, i)
	cl := testkit.Client(t, addrs, kgo.TransactionalID(id), kgo.DefaultProduceTopic(cutChangelog),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(10*time.Second))
	return &txnWriter{cl: cl, txnID: id, partition: i}
}

// commit runs one transaction: txnRecords records to the changelog
// partition and the input offset k+1, sent with AddOffsetsToTxn and
// TxnOffsetCommit (what the Java producer's sendOffsetsToTransaction sends;
// generation -1: not a group member), then EndTxn(commit).
func (w *txnWriter) commit(ctx context.Context, extra ...*kgo.Record) error {
	err := w.transact(ctx, extra)
	if err != nil && w.cl.EndTransaction(context.WithoutCancel(ctx), kgo.TryAbort) == nil {
		return err
	}
	return err
}

func (w *txnWriter) transact(ctx context.Context, extra []*kgo.Record) error {
	if err := w.cl.BeginTransaction(); err != nil {
		return err
	}
	recs := extra
	for j := range txnRecords {
		recs = append(recs, &kgo.Record{Partition: w.partition, Value: fmt.Appendf(nil, "%s/%d/%d", w.txnID, w.k+1, j)})
	}
	if err := w.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	pid, epoch, err := w.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = w.txnID, pid, epoch, cutApp
	ar, err := add.RequestWith(ctx, w.cl)
	if err == nil {
		err = kerr.ErrorForCode(ar.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("add offsets to txn: %w", err)
	}
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = w.txnID, cutApp, pid, epoch, -1
	ot := kmsg.NewTxnOffsetCommitRequestTopic()
	ot.Topic, ot.TopicID = cutInput, w.inputID
	op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset, op.LeaderEpoch = w.partition, w.k+1, -1
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	or, err := oc.RequestWith(ctx, w.cl)
	if err == nil {
		for _, t := range or.Topics {
			for _, p := range t.Partitions {
				if err == nil {
					err = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("txn offset commit: %w", err)
	}
	if err := w.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("end txn: %w", err)
	}
	w.k++
	return nil
}

// startCutCluster starts a real Kafka 4.4 broker with the cut tests'
// topics (n partitions each) and n writers that each committed one
// transaction.
func startCutCluster(t *testing.T, n int32) (*testkit.Kafka, []*txnWriter) {
	t.Helper()
	k := testkit.StartKafka(t)
	adm := testkit.Admin(t, k.Addrs())
	var inputID [16]byte
	for _, topic := range []string{cutChangelog, cutInput} {
		cr, err := adm.CreateTopic(t.Context(), n, 1, nil, topic)
		if err != nil {
			t.Fatal(err)
		}
		inputID = cr.ID
	}
	var ws []*txnWriter
	for i := range n {
		w := newTxnWriter(t, k.Addrs(), i)
		w.inputID = inputID
		// Right after CreateTopics the group coordinator may not know the
		// input topic's id yet (UNKNOWN_TOPIC_ID): bounded retries.
		for try := 1; ; try++ {
			err := w.commit(t.Context())
			if err == nil {
				break
			}
			if try == 50 || !errors.Is(err, kerr.UnknownTopicID) {
				t.Fatalf("first transaction of %s (input topic id %x): %v", w.txnID, w.inputID, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		ws = append(ws, w)
	}
	return k, ws
}

func cutOptions(addrs []string, store storage.Backend) backup.Options {
	return backup.Options{
		Source: []kgo.Opt{kgo.SeedBrokers(addrs...)}, Store: store,
		ApplicationID: cutApp, Include: []string{cutChangelog}, SourceClusterID: "test",
		RetryTimeout: 10 * time.Second,
	}
}

// checkCutConsistent fails the test unless the manifest's cut holds every
// transaction of the writers wholly or not at all (see txnRecords).
func checkCutConsistent(t *testing.T, m *format.Manifest, n int32) {
	t.Helper()
	checkCut(t, m, n, false)
}

// checkCut checks the manifest's cut against the writers' transactions:
// exactly consistent, or with lossless only that every transaction the
// group's offsets count is wholly in the cut (a cut kept unproven may hold
// transactions the offsets do not count yet: input processed again, never
// state lost).
func checkCut(t *testing.T, m *format.Manifest, n int32, lossless bool) {
	t.Helper()
	if m.Group == nil {
		t.Fatal("the manifest has no group")
	}
	committed := map[int32]int64{}
	for _, o := range m.Group.Offsets {
		if o.Topic == cutInput {
			committed[o.Partition] = o.Offset
		}
	}
	i := slices.IndexFunc(m.Topics, func(tp format.Topic) bool { return tp.Name == cutChangelog })
	if i < 0 {
		t.Fatalf("the manifest has no topic %q", cutChangelog)
	}
	for _, pc := range m.Topics[i].PartitionCuts {
		want := (txnRecords + 1) * committed[pc.Partition]
		if lossless && pc.EndOffset < want {
			t.Errorf("backup %s: changelog partition %d ends at %d, below %d where the transactions of the group's committed input offset %d end: state of processed input is lost",
				m.BackupID, pc.Partition, pc.EndOffset, want, committed[pc.Partition])
		}
		if !lossless && pc.EndOffset != want {
			t.Errorf("backup %s: changelog partition %d ends at %d, but the group committed input offset %d, whose transactions end at %d: the cut splits the application's transactions",
				m.BackupID, pc.Partition, pc.EndOffset, committed[pc.Partition], want)
		}
	}
	if int32(len(m.Topics[i].PartitionCuts)) != n {
		t.Errorf("changelog has %d partition cuts, want %d", len(m.Topics[i].PartitionCuts), n)
	}
}

// TestCutHoldsATransactionCommittedBetweenOffsetsAndEnds is race (b) of
// issue 11, made deterministic: a transaction of the application commits
// (its changelog writes and its input offset) after the backup read the
// group's committed offsets and before it read the ends. A cut of those
// offsets and those ends holds the transaction's writes without its
// offsets: a restored application processes that input again. The cut
// must notice (the offsets read again differ) and take the cut again.
func TestCutHoldsATransactionCommittedBetweenOffsetsAndEnds(t *testing.T) {
	k, ws := startCutCluster(t, 2)
	var once sync.Once
	var hookErr error
	defer backup.SetCutHook(func(step string) {
		if step == "group" {
			once.Do(func() { hookErr = ws[0].commit(context.Background()) })
		}
	})()
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(t.Context(), cutOptions(k.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatalf("the transaction between the offsets and the ends: %v", hookErr)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	checkCutConsistent(t, m, 2)
	if m.Cut == nil || !m.Cut.Proven || m.Cut.Attempts < 2 || m.Cut.Method != format.CutMethodOffsetsEndsOffsets {
		t.Errorf("manifest cut %+v; want proven by %s after at least 2 attempts (the first saw the transaction commit)", m.Cut, format.CutMethodOffsetsEndsOffsets)
	}
}

// TestCutConsistentWhileTransactionsCommit takes backups while four
// transactional producers commit as fast as they can (each transaction:
// records to its changelog partition and its input offset): every proven
// cut holds each transaction wholly or not at all, and a cut that reached
// backup.cut_attempts unproven still holds every transaction its offsets
// count (nothing lost) and says why. It logs how many attempts each cut
// needed.
func TestCutConsistentWhileTransactionsCommit(t *testing.T) {
	t.Parallel()
	const n, backups = 4, 6
	k, ws := startCutCluster(t, n)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var commits atomic.Int64
	errs := make(chan error, n)
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := w.commit(ctx); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("%s: %w", w.txnID, err)
					}
					return
				}
				commits.Add(1)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	store, _ := storage.NewFilesystem(t.TempDir())
	var attempts []string
	proven := 0
	start := time.Now()
	for b := range backups {
		res, err := backup.Run(t.Context(), cutOptions(k.Addrs(), store))
		if err != nil {
			t.Fatalf("backup %d: %v", b, err)
		}
		m := backupcheck.Latest(t, store, res.BackupID)
		if m.Cut == nil {
			checkCutConsistent(t, m, n)
			t.Fatalf("backup %d: no cut recorded", b)
		}
		checkCut(t, m, n, !m.Cut.Proven)
		if m.Cut.Proven {
			proven++
		} else {
			t.Logf("backup %d: cut not proven: %s", b, m.Cut.Reason)
			if m.Cut.Reason == "" || m.Cut.Attempts != backup.DefaultCutAttempts {
				t.Errorf("backup %d: unproven cut %+v; want a reason, after %d attempts", b, m.Cut, backup.DefaultCutAttempts)
			}
		}
		attempts = append(attempts, fmt.Sprintf("%d(%dms,%d waited)", m.Cut.Attempts, m.Cut.DurationMillis, m.Cut.TransactionsWaited))
	}
	rate := float64(commits.Load()) / time.Since(start).Seconds()
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("%.0f transactions/s committed by %d producers; %d of %d cuts proven; attempts per cut: %s", rate, n, proven, backups, strings.Join(attempts, " "))
	if proven == 0 {
		t.Errorf("no cut of %d was proven", backups)
	}
}

// TestCutUnprovenWhenACommittedTransactionIsAboveTheLSO: a transaction of
// one producer stays open on an output partition while another producer's
// transaction writes after it and commits with its input offset. The last
// stable offset stays at the open transaction's first offset, so the
// committed records are above the cut's end while the group's offsets say
// they were processed: a restore loses them. Offsets read twice agree, so
// offsets-ends-offsets alone called this cut proven; the cut must say it is
// not, why, after backup.cut_attempts attempts, and the backup still
// completes (with a warning).
func TestCutUnprovenWhenACommittedTransactionIsAboveTheLSO(t *testing.T) {
	t.Parallel()
	k, ws := startCutCluster(t, 2)
	const output = "cutapp-output"
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, output); err != nil {
		t.Fatal(err)
	}
	open := testkit.Client(t, k.Addrs(), kgo.TransactionalID(cutApp+"-open"), kgo.TransactionTimeout(time.Minute))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(t.Context(), &kgo.Record{Topic: output, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// ws[1]'s next transaction also writes to the output partition.
	if err := ws[1].commit(t.Context(), &kgo.Record{Topic: output, Partition: 0, Value: []byte("committed")}); err != nil {
		t.Fatal(err)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	o := cutOptions(k.Addrs(), store)
	o.Include = append(o.Include, output)
	o.CutAttempts = 2
	res, err := backup.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	c := m.Cut
	if c == nil || c.Proven || c.Attempts != 2 || !strings.Contains(c.Reason, `topic "cutapp-output" partition 0`) || !strings.Contains(c.Reason, "above the last stable offset 0") {
		t.Fatalf("manifest cut %+v; want unproven after 2 attempts, naming topic cutapp-output partition 0 and its last stable offset 0", c)
	}
	if !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, "not proven") }) {
		t.Errorf("manifest warnings %q do not say the cut is not proven", m.Warnings)
	}
	if err := open.EndTransaction(t.Context(), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// TestCutMethodIsRecorded: a backup with an application.id records a cut
// proven by offsets-ends-offsets (kfake: no transaction of the application
// is in PrepareCommit, its offsets do not move); one without records the
// method "ends", unproven, and warns of nothing: there are no offsets to
// disagree with the ends.
func TestCutMethodIsRecorded(t *testing.T) {
	kf := seededKfake(t)
	for _, row := range []struct {
		name   string
		appID  string
		method string
		proven bool
	}{
		{"with an application.id", "", format.CutMethodOffsetsEndsOffsets, true},
		{"without", "none", format.CutMethodEnds, false},
	} {
		t.Run(row.name, func(t *testing.T) {
			store, _ := storage.NewFilesystem(t.TempDir())
			o := sampleOptions(kf.Addrs(), store)
			if row.appID == "none" {
				o.ApplicationID = ""
			}
			res, err := backup.Run(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			m := backupcheck.Latest(t, store, res.BackupID)
			if m.Cut == nil || m.Cut.Method != row.method || m.Cut.Proven != row.proven || m.Cut.Attempts != 1 || (m.Cut.Reason == "") == !row.proven {
				t.Fatalf("cut %+v; want method %s, proven %v, 1 attempt, a reason exactly when unproven", m.Cut, row.method, row.proven)
			}
			if slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, "cut is not proven") }) {
				t.Errorf("warnings %q speak of the cut", m.Warnings)
			}
		})
	}
}

// TestCutSettlesTransactionsInPrepareCommit: a transaction of the
// application that ListTransactions reports in PrepareCommit (its commit
// markers not all written) is waited for until DescribeTransactions says
// it left that state, and the cut is proven; one that stays there until
// backup.cut_timeout leaves the cut unproven, naming it; a cluster without
// ListTransactions (Kafka 2.8) leaves it unproven, saying so. The states
// are injected through kfake's control hooks (kfake completes transactions
// at once); the backups are real runs against it.
func TestCutSettlesTransactionsInPrepareCommit(t *testing.T) {
	const txnID = "order-processor-0f1e-StreamThread-1" // sample.AppID + "-"
	for _, row := range []struct {
		name       string
		prepared   int // DescribeTransactions answers PrepareCommit this many times; -1: always
		oldBroker  bool
		proven     bool
		reason     string
		minWaited  int
		minDescrib int
	}{
		{"left PrepareCommit", 3, false, true, "", 1, 4},
		{"stays in PrepareCommit", -1, false, false, "transactions " + txnID + " stayed in PrepareCommit", 1, 2},
		{"no ListTransactions", 0, true, false, "does not support ListTransactions (Kafka 3.0+, KIP-664)", 0, 0},
	} {
		t.Run(row.name, func(t *testing.T) {
			var opts []kfake.Opt
			if row.oldBroker {
				opts = append(opts, kfake.MaxVersions(kversion.V2_8_0()))
			}
			kf := testkit.StartKfake(t, 1, opts...)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := sample.Seed(ctx, testkit.Client(t, kf.Addrs())); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			describes := 0
			kf.ControlKey(int16(kmsg.ListTransactions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				kf.KeepControl()
				resp := kreq.ResponseKind().(*kmsg.ListTransactionsResponse)
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = txnID, 4242, "PrepareCommit"
				resp.TransactionStates = append(resp.TransactionStates, st)
				return resp, nil, true
			})
			kf.ControlKey(int16(kmsg.DescribeTransactions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				kf.KeepControl()
				mu.Lock()
				describes++
				n := describes
				mu.Unlock()
				resp := kreq.ResponseKind().(*kmsg.DescribeTransactionsResponse)
				for _, id := range kreq.(*kmsg.DescribeTransactionsRequest).TransactionalIDs {
					st := kmsg.NewDescribeTransactionsResponseTransactionState()
					st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, 4242, 3, 1000
					st.State = "CompleteCommit"
					if row.prepared < 0 || n <= row.prepared {
						st.State = "PrepareCommit"
					}
					resp.TransactionStates = append(resp.TransactionStates, st)
				}
				return resp, nil, true
			})
			store, _ := storage.NewFilesystem(t.TempDir())
			o := sampleOptions(kf.Addrs(), store)
			o.CutTimeout = time.Second
			res, err := backup.Run(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			m := backupcheck.Latest(t, store, res.BackupID)
			c := m.Cut
			if c == nil || c.Proven != row.proven || !strings.Contains(c.Reason, row.reason) || c.TransactionsWaited < row.minWaited {
				t.Fatalf("cut %+v; want proven %v, reason containing %q, at least %d transactions waited", c, row.proven, row.reason, row.minWaited)
			}
			mu.Lock()
			defer mu.Unlock()
			if describes < row.minDescrib {
				t.Errorf("%d DescribeTransactions, want at least %d (the cut did not wait)", describes, row.minDescrib)
			}
			if warned := slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, "cut is not proven") }); warned == row.proven {
				t.Errorf("warnings %q: a warning about the cut %v, want %v", m.Warnings, warned, !row.proven)
			}
		})
	}
}

// TestCutOfARunningStreamsApp takes backups of the real drill Kafka
// Streams application (exactly_once_v2, commit.interval.ms 200; a
// repartition, a windowed count, a foreign-key join) while events flow
// in, and logs how each cut was proven. Every backup records its cut, and
// cuts of a running exactly-once application are proven (at least one of
// them: a cut that reached its bound is kept unproven by design).
func TestCutOfARunningStreamsApp(t *testing.T) {
	t.Parallel()
	const backups = 5
	k := testkit.StartKafka(t)
	testkit.CreateStreamsAppTopics(t, k.Bootstrap(), 3)
	app := testkit.StartStreamsApp(t, k.Bootstrap())
	cl := testkit.Client(t, k.Addrs())
	cats := []string{"books", "games", "music", "garden", "food"}
	for _, c := range cats {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: testkit.StreamsAppCategoriesTopic, Key: []byte(c), Value: []byte(strings.ToUpper(c))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var events atomic.Int64
	wg.Add(1)
	go func() { // about 200 events a second
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Topic: testkit.StreamsAppEventsTopic, Key: fmt.Appendf(nil, "u%02d", i%30), Value: fmt.Appendf(nil, "%s:%d", cats[i%len(cats)], i)}
			if cl.ProduceSync(ctx, r).FirstErr() == nil {
				events.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	store, _ := storage.NewFilesystem(t.TempDir())
	o := backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, Store: store, ApplicationID: app.ApplicationID(),
		Include: append(slices.Clone(testkit.StreamsAppTopics), app.ApplicationID()+"-*"), SourceClusterID: "test"}
	time.Sleep(2 * time.Second) // the app commits its first transactions
	var cuts []string
	proven := 0
	for b := range backups {
		res, err := backup.Run(t.Context(), o)
		if err != nil {
			t.Fatalf("backup %d: %v", b, err)
		}
		m := backupcheck.Latest(t, store, res.BackupID)
		c := m.Cut
		if c == nil || c.Method != format.CutMethodOffsetsEndsOffsets || c.Attempts < 1 || c.Attempts > backup.DefaultCutAttempts {
			t.Fatalf("backup %d: cut %+v; want one taken by %s in 1 to %d attempts", b, c, format.CutMethodOffsetsEndsOffsets, backup.DefaultCutAttempts)
		}
		if c.Proven {
			proven++
		} else {
			t.Logf("backup %d: not proven: %s", b, c.Reason)
		}
		cuts = append(cuts, fmt.Sprintf("%v/%d(%dms,%d waited)", c.Proven, c.Attempts, c.DurationMillis, c.TransactionsWaited))
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("%d events produced; cuts (proven/attempts): %s", events.Load(), strings.Join(cuts, " "))
	if proven == 0 {
		t.Errorf("none of %d cuts of the running application was proven", backups)
	}
}

// TestCutWaitsForCommitMarkersOfOffsetsItRead is race (a) of issue 11,
// made deterministic: the group's committed offsets already count a
// transaction whose commit marker on the changelog partition is not yet
// written (the coordinator writes the markers of a commit in parallel,
// __consumer_offsets first here), so the changelog's last stable offset
// is still at the transaction's first record. A cut of those offsets and
// that end loses the transaction's state updates. kfake completes
// transactions at once; its control hooks make the coordinator's
// PrepareCommit visible (ListTransactions, DescribeTransactions) and keep
// the changelog's last stable offset below the transaction until the
// transaction has been described as in PrepareCommit twice, the markers
// then written. The cut must wait for them before it reads the ends.
func TestCutWaitsForCommitMarkersOfOffsetsItRead(t *testing.T) {
	kf := testkit.StartKfake(t, 1, kfake.SeedTopics(1, cutChangelog, cutInput))
	adm := testkit.Admin(t, kf.Addrs())
	td, err := adm.ListTopics(t.Context(), cutInput)
	if err != nil {
		t.Fatal(err)
	}
	w := newTxnWriter(t, kf.Addrs(), 0)
	w.inputID = td[cutInput].ID
	for range 2 {
		if err := w.commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// The second transaction's records start at txnRecords+1: without its
	// marker the last stable offset stays there.
	const staleLSO = txnRecords + 1
	var mu sync.Mutex
	prepared, markersWritten := 0, false
	kf.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		req := kreq.(*kmsg.ListOffsetsRequest)
		mu.Lock()
		written := markersWritten
		mu.Unlock()
		if written || req.IsolationLevel != 1 {
			return nil, nil, false
		}
		resp := kreq.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Offset, sp.Timestamp, sp.LeaderEpoch = rp.Partition, staleLSO, -1, 0
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	kf.ControlKey(int16(kmsg.ListTransactions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		resp := kreq.ResponseKind().(*kmsg.ListTransactionsResponse)
		mu.Lock()
		defer mu.Unlock()
		if !markersWritten {
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = w.txnID, 7, "PrepareCommit"
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil, true
	})
	kf.ControlKey(int16(kmsg.DescribeTransactions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		resp := kreq.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		mu.Lock()
		defer mu.Unlock()
		state := "PrepareCommit"
		if prepared++; prepared > 2 {
			state, markersWritten = "CompleteCommit", true
		}
		for _, id := range kreq.(*kmsg.DescribeTransactionsRequest).TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp, st.State = id, 7, 0, 1000, state
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil, true
	})
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(t.Context(), cutOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	checkCutConsistent(t, m, 1)
	if m.Cut == nil || !m.Cut.Proven || m.Cut.TransactionsWaited != 1 {
		t.Errorf("cut %+v; want proven after waiting for 1 transaction in PrepareCommit", m.Cut)
	}
}

// TestCutProvenWhenACommittedTransactionIsAboveTheLSOOfARepartitionTopic:
// as TestCutUnprovenWhenACommittedTransactionIsAboveTheLSO, on a
// repartition partition instead of an output one. There the in-flight tail
// ends at the high watermark and keeps exactly the transactions committed
// at the cut (tail.go), so the committed record above the LSO is in the
// backup and the cut is proven (after the merge of the cut and the tails,
// every such cut was called unproven, and a busy application with several
// threads got no proven cut at all).
func TestCutProvenWhenACommittedTransactionIsAboveTheLSOOfARepartitionTopic(t *testing.T) {
	t.Parallel()
	k, ws := startCutCluster(t, 2)
	const rep = cutApp + "-by-key-repartition"
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, rep); err != nil {
		t.Fatal(err)
	}
	open := testkit.Client(t, k.Addrs(), kgo.TransactionalID(cutApp+"-open"), kgo.TransactionTimeout(time.Minute))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(t.Context(), &kgo.Record{Topic: rep, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := ws[1].commit(t.Context(), &kgo.Record{Topic: rep, Partition: 0, Value: []byte("committed")}); err != nil {
		t.Fatal(err)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	o := cutOptions(k.Addrs(), store)
	o.CutAttempts = 2
	done := make(chan struct{})
	go func() {
		// The tail is read once the open transaction ends (the LSO passes
		// the high watermark): abort it after the cut.
		defer close(done)
		time.Sleep(2 * time.Second)
		_ = open.EndTransaction(context.WithoutCancel(t.Context()), kgo.TryAbort)
	}()
	res, err := backup.Run(t.Context(), o)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	if c := m.Cut; c == nil || !c.Proven {
		t.Fatalf("manifest cut %+v; want proven: the tail of %s holds the committed record above its LSO", c, rep)
	}
	var held int64
	for _, tp := range m.InFlight {
		if tp.Name == rep {
			for _, p := range tp.PartitionCuts {
				held += p.Records
			}
		}
	}
	if held != 1 {
		t.Errorf("in-flight tail of %s holds %d records; want 1 (the committed one, not the open transaction's)", rep, held)
	}
}
