package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// Defaults of Options.CutAttempts and Options.CutTimeout (the config's
// backup.cut_attempts and backup.cut_timeout).
const (
	DefaultCutAttempts = 100
	DefaultCutTimeout  = 30 * time.Second
)

// prepareCommit is the transaction state (Kafka's TransactionState
// PrepareCommit) in which the coordinator has decided to commit and is
// writing the commit markers to every partition of the transaction, the
// __consumer_offsets partition of a TxnOffsetCommit included, in parallel
// (TransactionMarkerChannelManager). It leaves that state, for
// CompleteCommit, only after every marker was acknowledged by all in-sync
// replicas (WriteTxnMarkers appends with acks=-1).
const prepareCommit = "PrepareCommit"

// cutResult is a cut as takeCut took it: the group's committed offsets
// and, for every partition of the topics it was given, the log start, the
// last stable offset and the high watermark, with how the cut was proven.
type cutResult struct {
	group             *format.Group // nil without an application.id
	starts, ends, hws kadm.ListedOffsets
	at                time.Time // when the last stable offsets were read
	proof             format.Cut
}

// takeCut takes the backup's cut of topics (every partition of each) and
// proves it consistent with the application's committed transactions
// (docs/DESIGN.md invariant 1): G1 = the group's committed offsets; settle
// (wait until every transaction of the application in PrepareCommit has
// left it); E = the log starts, high watermarks and last stable offsets;
// settle again; G2 = the committed offsets again. G2 == G1 proves that
// every committed transaction of the application is wholly in (G1, E) or
// wholly out. Otherwise it tries again from G1 := G2 after a short
// jittered backoff, at most Options.CutAttempts times and for
// Options.CutTimeout in all; then the last attempt's cut (G1 and its E) is
// kept, unproven, with the reason in proof.Reason.
//
// readGroup reads the group's committed offsets; nil without an
// application.id, when the ends alone are read (method "ends", unproven).
// A broker without ListTransactions or DescribeTransactions (KIP-664,
// Kafka 3.0) cannot settle: the cut is kept unproven, saying so. Errors
// are those of reading the offsets (after Options.RetryTimeout for
// retriable ones); a failure to settle is never an error, only unproven.
func (r *runner) takeCut(ctx context.Context, topics []string, readGroup func(context.Context) (*format.Group, error)) (*cutResult, error) {
	start := time.Now()
	res := &cutResult{}
	done := func() (*cutResult, error) {
		res.proof.DurationMillis = time.Since(start).Milliseconds()
		// Without an application.id no offsets are restored that the
		// ends could disagree with: recorded, not warned of.
		if !res.proof.Proven && res.proof.Method != format.CutMethodEnds {
			r.warn(fmt.Sprintf("the backup's cut is not proven consistent with the application's transactions (%s): a restore may process some input again or miss state written by a transaction whose input offsets it restores", res.proof.Reason))
		}
		r.log.Info("cut taken", "method", res.proof.Method, "proven", res.proof.Proven, "attempts", res.proof.Attempts,
			"transactions_waited", res.proof.TransactionsWaited, "duration_ms", res.proof.DurationMillis)
		return res, nil
	}
	if readGroup == nil {
		res.proof = format.Cut{Method: format.CutMethodEnds, Attempts: 1,
			Reason: "no application.id: there are no committed offsets to prove the cut against"}
		if err := r.readEnds(ctx, topics, res); err != nil {
			return nil, err
		}
		return done()
	}
	attempts, budget := r.o.CutAttempts, r.o.CutTimeout
	deadline := start.Add(budget)
	res.proof.Method = format.CutMethodOffsetsEndsOffsets
	settle := r.settle
	if reason := r.transactionsUnsupported(ctx); reason != "" {
		settle = func(context.Context, time.Time) (int, error) { return 0, errors.New(reason) }
	}

	g1, err := readGroup(ctx)
	if err != nil {
		return nil, err
	}
	hook("group")
	for attempt := 1; ; attempt++ {
		res.proof.Attempts = attempt
		res.group = g1
		n, serr := settle(ctx, deadline)
		res.proof.TransactionsWaited += n
		if err := r.readEnds(ctx, topics, res); err != nil {
			return nil, err
		}
		hook("ends")
		if serr == nil {
			n, serr = settle(ctx, deadline)
			res.proof.TransactionsWaited += n
		}
		if serr != nil {
			res.proof.Reason = serr.Error()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return done()
		}
		g2, err := readGroup(ctx)
		if err != nil {
			return nil, err
		}
		hook("group")
		why := offsetsDiff(g1, g2)
		if why != "" {
			why = "the group's committed offsets changed while the ends were read (" + why + ")"
		} else if why = r.hiddenCommit(ctx, res); why == "" {
			res.proof.Proven, res.proof.Reason = true, ""
			return done()
		}
		res.proof.Reason = unprovenReason(attempt, attempts, budget, why)
		wait := time.Duration(rand.Int64N(int64(20*time.Millisecond))) + time.Millisecond
		if attempt >= attempts || time.Now().Add(wait).After(deadline) {
			return done()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		g1 = g2
	}
}

// sortedListed returns l's offsets by topic and partition, so that an
// error names the same partition every time.
func sortedListed(l kadm.ListedOffsets) []kadm.ListedOffset {
	var all []kadm.ListedOffset
	l.Each(func(lo kadm.ListedOffset) { all = append(all, lo) })
	slices.SortFunc(all, func(a, b kadm.ListedOffset) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return all
}

func hook(step string) {
	if cutHook != nil {
		cutHook(step)
	}
}

// readEnds reads the log start offsets, high watermarks and last stable
// offsets of topics into res, in that order: a high watermark read before
// the last stable offset is never above the records the LSO decided.
func (r *runner) readEnds(ctx context.Context, topics []string, res *cutResult) error {
	list := func(what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		var l kadm.ListedOffsets
		err := retrying(ctx, r.o.RetryTimeout, func() (err error) {
			if l, err = list(ctx, topics...); err != nil {
				return fmt.Errorf("list %s (ListOffsets): %w", what, err)
			}
			for _, lo := range sortedListed(l) {
				if lo.Err != nil {
					return fmt.Errorf("list %s (ListOffsets) of topic %q partition %d: %w", what, lo.Topic, lo.Partition, lo.Err)
				}
			}
			return nil
		})
		return l, err
	}
	var err error
	if res.starts, err = list("log start offsets", r.adm.ListStartOffsets); err != nil {
		return err
	}
	if res.hws, err = list("high watermarks", r.adm.ListEndOffsets); err != nil {
		return err
	}
	if res.ends, err = list("last stable offsets", r.adm.ListCommittedOffsets); err != nil {
		return err
	}
	res.at = time.Now().UTC()
	return nil
}

// transactionsUnsupported returns why the brokers cannot settle
// transactions (a broker without ListTransactions or DescribeTransactions,
// Kafka before 3.0), or "" when they can.
func (r *runner) transactionsUnsupported(ctx context.Context) string {
	vs, err := r.adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Sprintf("the brokers' API versions could not be read to list transactions: %v", err)
	}
	for _, v := range vs {
		if v.Err != nil {
			return fmt.Sprintf("broker %d did not answer ApiVersions: %v", v.NodeID, v.Err)
		}
		for _, k := range []kmsg.Key{kmsg.ListTransactions, kmsg.DescribeTransactions} {
			if _, ok := v.KeyMaxVersion(int16(k)); !ok {
				return fmt.Sprintf("broker %d does not support %s (Kafka 3.0+, KIP-664): transactions in PrepareCommit cannot be waited for", v.NodeID, k.Name())
			}
		}
	}
	return ""
}

// settle waits until every transaction of the application (transactional
// id "<application.id>-...", as Kafka Streams names its EOS producers,
// ActiveTaskCreator) that ListTransactions answers is in PrepareCommit has
// left that state or started another transaction (DescribeTransactions:
// another state, producer id, epoch or start time), that is until its
// commit markers are written on every partition it touched, for at most
// until deadline. It returns how many transactions it waited for.
// Transactions in PrepareAbort are not waited for: an aborted transaction
// adds no record a read_committed reader returns and no committed offset.
// ListTransactions omits the transactional ids the principal may not
// describe (KafkaApis.handleListTransactionsRequest, DESCRIBE on
// TRANSACTIONAL_ID); settle cannot know of them.
func (r *runner) settle(ctx context.Context, deadline time.Time) (int, error) {
	prefix := r.o.ApplicationID + "-"
	var listed kadm.ListedTransactions
	err := retrying(ctx, max(time.Until(deadline), 0), func() (err error) {
		// The pattern filters on the broker from Kafka 4.1 (KIP-1152);
		// older brokers ignore it, so the prefix is checked here too.
		listed, err = r.adm.ListTransactionsByTxPattern(ctx, nil, []string{prepareCommit}, "^"+regexp.QuoteMeta(prefix))
		if se, ok := errors.AsType[*kadm.ShardErrors](err); ok && len(se.Errs) > 0 {
			err = se.Errs[0].Err // one broker could not list: its transactions are unknown
		}
		if err != nil {
			return fmt.Errorf("list the application's transactions in PrepareCommit: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	type seen struct {
		pid   int64
		epoch int16
		start int64
		known bool
	}
	waiting := map[string]*seen{}
	for _, l := range listed {
		if strings.HasPrefix(l.TxnID, prefix) && l.State == prepareCommit {
			waiting[l.TxnID] = &seen{pid: l.ProducerID}
		}
	}
	n := len(waiting)
	for try := 0; len(waiting) > 0; try++ {
		ids := make([]string, 0, len(waiting))
		for id := range waiting {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		described, err := r.adm.DescribeTransactions(ctx, ids...)
		if err != nil && !retriable(err) {
			return n, fmt.Errorf("describe the application's transactions %s: %w", strings.Join(ids, ", "), err)
		}
		for id, d := range described {
			s := waiting[id]
			switch {
			case s == nil:
			case errors.Is(d.Err, kerr.TransactionalIDNotFound):
				delete(waiting, id)
			case d.Err != nil:
			case d.State != prepareCommit || d.ProducerID != s.pid || (s.known && (d.ProducerEpoch != s.epoch || d.StartTimestamp != s.start)):
				delete(waiting, id)
			default:
				s.epoch, s.start, s.known = d.ProducerEpoch, d.StartTimestamp, true
			}
		}
		if len(waiting) == 0 {
			break
		}
		wait := min(time.Millisecond<<min(try, 6), 50*time.Millisecond)
		if time.Now().Add(wait).After(deadline) {
			ids = ids[:0]
			for id := range waiting {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			return n, fmt.Errorf("transactions %s stayed in PrepareCommit (their commit markers not all written) until backup.cut_timeout ran out", strings.Join(ids, ", "))
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(wait):
		}
	}
	return n, nil
}

// offsetsDiff describes how the committed offsets of b differ from a's
// (the first few partitions), or returns "" when they are equal.
func offsetsDiff(a, b *format.Group) string {
	type tp struct {
		t string
		p int32
	}
	at := map[tp]int64{}
	for _, o := range a.Offsets {
		at[tp{o.Topic, o.Partition}] = o.Offset
	}
	var diffs []string
	seen := map[tp]bool{}
	for _, o := range b.Offsets {
		k := tp{o.Topic, o.Partition}
		seen[k] = true
		if was, ok := at[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("topic %q partition %d committed %d", o.Topic, o.Partition, o.Offset))
		} else if was != o.Offset {
			diffs = append(diffs, fmt.Sprintf("topic %q partition %d %d -> %d", o.Topic, o.Partition, was, o.Offset))
		}
	}
	for k := range at {
		if !seen[k] {
			diffs = append(diffs, fmt.Sprintf("topic %q partition %d no longer committed", k.t, k.p))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	slices.Sort(diffs)
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("%d more", len(diffs)-3))
	}
	return strings.Join(diffs, ", ")
}

// maxScanFetches bounds the fetches hiddenCommit sends per partition (each
// of at most fetchPartitionMaxBytes).
const maxScanFetches = 20

// hiddenCommit looks, on every partition of the cut whose last stable
// offset is below the high watermark read before it, for a transaction
// that committed with records at or above the last stable offset: a
// transaction still open on the partition (another producer's: on a
// repartition or output topic every upstream task writes) holds the LSO
// at its first offset (Kafka's ProducerStateManager.firstUnstableOffset),
// and the committed records after it are not in the cut, though the
// transaction's offsets may be. It reads [LSO, HW) read_uncommitted,
// control records kept, and reports the first partition where a COMMIT
// marker follows data of its producer at or above the LSO, or why it could
// not read the range; "" when no partition hides a committed record. The
// records of transactions still open are not such records: they are
// outside the cut, as their offsets are. The in-flight topics
// (r.tailTopics) are not checked: their tails end at the high watermark
// and keep exactly the transactions committed at the cut (tail.go).
func (r *runner) hiddenCommit(ctx context.Context, res *cutResult) string {
	var found string
	res.ends.Each(func(e kadm.ListedOffset) {
		hw, ok := res.hws.Lookup(e.Topic, e.Partition)
		if found != "" || !ok || e.Offset >= hw.Offset || r.tailTopics[e.Topic] {
			return
		}
		found = r.scanAboveLSO(ctx, e.Topic, e.Partition, e.Offset, hw.Offset)
	})
	return found
}

func (r *runner) scanAboveLSO(ctx context.Context, topic string, p int32, lso, hw int64) string {
	where := fmt.Sprintf("topic %q partition %d", topic, p)
	data := map[int64]bool{} // producer id -> a data batch seen at or above the LSO
	pos := lso
	for range maxScanFetches {
		if pos >= hw {
			return ""
		}
		leader, id := r.leaderOf(topic, p)
		rp, err := r.fetch(ctx, topic, p, leader, id, pos, kgo.ReadUncommitted(), 0)
		if err == nil {
			err = kerr.ErrorForCode(rp.ErrorCode)
		}
		if err != nil {
			return fmt.Sprintf("%s could not be read above its last stable offset %d to check that no committed record is held there: %v", where, lso, err)
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset: pos, IsolationLevel: kgo.ReadUncommitted(), KeepControlRecords: true, Topic: topic, Partition: p,
		}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return fmt.Sprintf("%s above its last stable offset %d does not decode: %v", where, lso, fp.Err)
		}
		for _, rec := range fp.Records {
			if rec.Offset >= hw {
				break
			}
			if !rec.Attrs.IsControl() {
				if rec.Attrs.IsTransactional() {
					data[rec.ProducerID] = true
				}
				continue
			}
			// A control record's key: version int16, type int16 (0 abort,
			// 1 commit; Kafka's ControlRecordType).
			if len(rec.Key) >= 4 && rec.Key[3] == 1 && rec.Key[2] == 0 && data[rec.ProducerID] {
				return fmt.Sprintf("%s: a transaction (producer id %d) committed records above the last stable offset %d, which a transaction still open holds there; the cut leaves them out although the group may count them as processed",
					where, rec.ProducerID, lso)
			}
			delete(data, rec.ProducerID)
		}
		if next <= pos {
			return fmt.Sprintf("%s could not be read above its last stable offset %d (no progress at offset %d)", where, lso, pos)
		}
		pos = next
	}
	if pos >= hw {
		return ""
	}
	return fmt.Sprintf("%s has more than %d fetches of records above its last stable offset %d; not checked", where, maxScanFetches, lso)
}

// unprovenReason is the reason an unproven cut records: the attempts made,
// the bounds (backup.cut_attempts, backup.cut_timeout) and why the last
// attempt was not proven.
func unprovenReason(attempt, attempts int, budget time.Duration, why string) string {
	made := fmt.Sprintf("%d attempts", attempt)
	if attempt == 1 {
		made = "1 attempt"
	}
	return fmt.Sprintf("not proven in %s (backup.cut_attempts %d, backup.cut_timeout %s); the last: %s", made, attempts, budget, why)
}
