package restorer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
)

// Retries of per-partition errors. Right after CreateTopics a Kafka broker
// answers ListOffsets (and Produce) with NOT_LEADER_OR_FOLLOWER for a while
// although metadata already names a leader: the controller has chosen the
// leader, the broker has not yet become it (KRaft: the broker applies the
// PartitionRecord from the metadata log after the controller commits it).
// kerr.IsRetriable tells which errors pass; every other error is reported
// as the broker gave it.
const (
	// offsetsBudget bounds how long a topic creation retries retriable
	// errors, and a listing when the client has no kgo.RetryTimeout.
	offsetsBudget = 2 * time.Minute
	// firstBackoff and maxBackoff bound the wait between two tries; it
	// doubles from the first to the max.
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// PartitionError is a per-partition error a broker answered (a kerr.Error
// from ListOffsets, CreateTopics, ...): Op says which request, Err is the
// broker's error. Kafka's error code is in the message so that it can be
// looked up (org.apache.kafka.common.protocol.Errors).
type PartitionError struct {
	Op        string // "list end offsets", "list log start offsets", ...
	Topic     string
	Partition int32 // -1 for a topic-level error
	Err       error
}

func (e *PartitionError) Error() string {
	where := fmt.Sprintf("topic %q partition %d", e.Topic, e.Partition)
	if e.Partition < 0 {
		where = fmt.Sprintf("topic %q", e.Topic)
	}
	var ke *kerr.Error
	if errors.As(e.Err, &ke) {
		return fmt.Sprintf("%s: %s: %s (Kafka error code %d): %s", where, e.Op, ke.Message, ke.Code, ke.Description)
	}
	return fmt.Sprintf("%s: %s: %v", where, e.Op, e.Err)
}

func (e *PartitionError) Unwrap() error { return e.Err }

// backoff returns the wait before try n (1-based).
func backoff(n int) time.Duration {
	d := firstBackoff << min(n-1, 10)
	return min(d, maxBackoff)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryListed calls list until every listed partition answers without an
// error. A retriable error (kerr.IsRetriable, for the whole request or any
// partition, or a transient network failure, config.Transient: the
// leader's broker refusing connections while it restarts) is retried with
// backoff for the target's retry_timeout, then returned (as a
// *PartitionError naming the last partition that failed, for a partition
// error); a non-retriable partition error is returned at once as a
// *PartitionError. Each try ends at retry_timeout + request_timeout after
// the first, so that franz-go's own retries of one try do not add a second
// budget.
func (r *restore) retryListed(ctx context.Context, op string, list func(context.Context) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	request, budget := r.timeouts()
	began := time.Now()
	deadline := began.Add(budget + request)
	for n := 1; ; n++ {
		tctx, cancel := context.WithDeadline(ctx, deadline)
		listed, err := list(tctx)
		cancel()
		if err == nil {
			err = firstPartitionErr(op, listed)
		}
		if err == nil {
			return listed, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !kerr.IsRetriable(err) && !config.Transient(err) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if time.Since(began) >= budget || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (still after retrying for %s, the target's retry_timeout)", err, time.Since(began).Round(time.Millisecond))
		}
		if err := sleep(ctx, min(backoff(n), budget-time.Since(began))); err != nil {
			return nil, err
		}
	}
}

// timeouts returns the target client's request_timeout
// (kgo.RequestTimeoutOverhead) and retry_timeout (kgo.RetryTimeout).
func (r *restore) timeouts() (request, retry time.Duration) {
	request, _ = r.cl.OptValue(kgo.RequestTimeoutOverhead).(time.Duration)
	retry, _ = r.cl.OptValue(kgo.RetryTimeout).(time.Duration)
	if retry <= 0 { // unbounded in franz-go; ours are never
		retry = offsetsBudget
	}
	return request, retry
}

// firstPartitionErr returns a *PartitionError for the first partition (in
// topic and partition order) whose answer is an error, preferring a
// non-retriable one: it is what the user must see.
func firstPartitionErr(op string, listed kadm.ListedOffsets) error {
	var errs []*PartitionError
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Err != nil {
			errs = append(errs, &PartitionError{Op: op, Topic: lo.Topic, Partition: lo.Partition, Err: lo.Err})
		}
	})
	return firstOf(errs)
}

// firstOf returns the first of errs (nil for none) in topic and partition
// order, preferring a non-retriable one.
func firstOf(errs []*PartitionError) error {
	if len(errs) == 0 {
		return nil
	}
	sort.Slice(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if ra, rb := kerr.IsRetriable(a.Err), kerr.IsRetriable(b.Err); ra != rb {
			return rb
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return errs[0]
}

// probeCreated waits until every partition of topics (created by this
// restore) answers ListOffsets for its log end on its leader. Each try
// reads the leaders (Metadata) and sends one ListOffsets per leader for
// all its partitions still unanswered, directly to that broker: kgo's
// sharded ListOffsets (kadm.ListEndOffsets) retries NOT_LEADER_OR_FOLLOWER
// itself with the client's backoff (250ms doubling, jittered, to seconds),
// which ended the wait after 2,000 new partitions up to 5s after the broker
// served them (issue 13). Tries are 50ms apart, doubling to
// leaderMaxBackoff. Retriable errors (kerr.IsRetriable, a partition still
// without a leader, config.Transient network failures) are retried for the
// target's retry_timeout like retryListed, each try cut at retry_timeout +
// request_timeout after the first; a non-retriable partition error is
// returned at once as a *PartitionError ("list end offsets").
func (r *restore) probeCreated(ctx context.Context, topics []string) error {
	request, budget := r.timeouts()
	began := time.Now()
	deadline := began.Add(budget + request)
	pending := map[string]map[int32]bool{}
	for _, tp := range r.plan.Topics {
		if slices.Contains(topics, tp.Topic) {
			pending[tp.Topic] = map[int32]bool{}
			for p := range int32(tp.Partitions) {
				pending[tp.Topic][p] = true
			}
		}
	}
	for n := 1; ; n++ {
		tctx, cancel := context.WithDeadline(ctx, deadline)
		err := r.probeOnce(tctx, pending)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !kerr.IsRetriable(err) && !config.Transient(err) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if time.Since(began) >= budget || time.Now().After(deadline) {
			return fmt.Errorf("%w (still after retrying for %s, the target's retry_timeout)", err, time.Since(began).Round(time.Millisecond))
		}
		if err := sleep(ctx, min(backoff(n), leaderMaxBackoff, budget-time.Since(began))); err != nil {
			return err
		}
	}
}

// probeOnce is one try of probeCreated: it removes from pending (topic ->
// partitions) every partition whose leader answers ListOffsets without an
// error, and returns nil when none is left, else the first error (firstOf).
func (r *restore) probeOnce(ctx context.Context, pending map[string]map[int32]bool) error {
	var names []string
	for t, ps := range pending {
		if len(ps) == 0 {
			delete(pending, t)
			continue
		}
		names = append(names, t)
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	ds, err := r.adm.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	var errs []*PartitionError
	reqs := map[int32]*kmsg.ListOffsetsRequest{} // by leader
	for _, t := range names {
		d := ds[t]
		at := map[int32]int{} // leader -> index of t in its request
		for p := range pending[t] {
			pd, ok := d.Partitions[p]
			if d.Err != nil || !ok || pd.Err != nil || pd.Leader < 0 {
				errs = append(errs, &PartitionError{Op: "list end offsets", Topic: t, Partition: p, Err: kerr.LeaderNotAvailable})
				continue
			}
			req, ok := reqs[pd.Leader]
			if !ok {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				reqs[pd.Leader] = req
			}
			i, ok := at[pd.Leader]
			if !ok {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = t
				req.Topics = append(req.Topics, rt)
				i = len(req.Topics) - 1
				at[pd.Leader] = i
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
	}
	var firstReqErr error
	for leader, req := range reqs {
		kresp, err := r.cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			firstReqErr = cmp.Or(firstReqErr, err)
			continue
		}
		for _, st := range kresp.(*kmsg.ListOffsetsResponse).Topics {
			for _, sp := range st.Partitions {
				if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
					errs = append(errs, &PartitionError{Op: "list end offsets", Topic: st.Topic, Partition: sp.Partition, Err: err})
					continue
				}
				delete(pending[st.Topic], sp.Partition)
			}
		}
	}
	if err := firstOf(errs); err != nil && !kerr.IsRetriable(err) {
		return err
	}
	if firstReqErr != nil {
		return firstReqErr
	}
	if err := firstOf(errs); err != nil {
		return err
	}
	for _, t := range names {
		for p := range pending[t] { // a broker's answer left it out
			return &PartitionError{Op: "list end offsets", Topic: t, Partition: p, Err: kerr.UnknownTopicOrPartition}
		}
	}
	return nil
}

// listEnds lists the log end offsets of every partition of topics, retrying
// retriable errors (retryListed).
func (r *restore) listEnds(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	return r.retryListed(ctx, "list end offsets", func(ctx context.Context) (kadm.ListedOffsets, error) {
		return r.adm.ListEndOffsets(ctx, topics...)
	})
}

// listStarts lists the log start offsets of every partition of topics,
// retrying retriable errors (retryListed).
func (r *restore) listStarts(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	return r.retryListed(ctx, "list log start offsets", func(ctx context.Context) (kadm.ListedOffsets, error) {
		return r.adm.ListStartOffsets(ctx, topics...)
	})
}

// waitReady waits until every partition of every planned topic has a leader
// in metadata (docs/DOMAIN.md#field-case-05 A4) and, for the topics this run created, answers
// ListOffsets for its log start and end: metadata naming a leader does not
// mean the leader serves the partition yet (issue 9). A created topic must
// be empty.
func (r *restore) waitReady(ctx context.Context) error {
	if err := r.waitLeaders(ctx); err != nil {
		return err
	}
	var created []string
	for _, tp := range r.plan.Topics {
		if tp.Action == format.ActionCreate {
			created = append(created, tp.Topic)
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := r.probeCreated(ctx, created); err != nil {
		return fmt.Errorf("the topics this restore created do not answer: %w", err)
	}
	starts, err := r.listStarts(ctx, created...)
	if err != nil {
		return fmt.Errorf("the topics this restore created do not answer: %w", err)
	}
	ends, err := r.listEnds(ctx, created...)
	if err != nil {
		return fmt.Errorf("the topics this restore created do not answer: %w", err)
	}
	var held []string
	ends.Each(func(lo kadm.ListedOffset) {
		if s, ok := starts.Lookup(lo.Topic, lo.Partition); ok && lo.Offset != s.Offset {
			held = append(held, fmt.Sprintf("%s/%d holds offsets %d..%d", lo.Topic, lo.Partition, s.Offset, lo.Offset))
		}
	})
	if len(held) > 0 {
		sort.Strings(held)
		return fmt.Errorf("topics created by this restore hold records before it wrote any (another producer is writing to them; stop it, delete the topics and restore again): %s", strings.Join(held, "; "))
	}
	return nil
}

// validateCreate runs a validate-only CreateTopics for tp (the request the
// restore will make, without creating anything). A retriable error
// (REQUEST_TIMED_OUT, NOT_CONTROLLER, ...) is retried like retryListed and
// then returned as an error: the target is busy, not unwilling. A refusal
// (any other error) is returned as refused, the reason for a RefusedError.
func (r *restore) validateCreate(ctx context.Context, tp *TopicPlan) (configs map[string]kadm.Config, refused string, err error) {
	began := time.Now()
	for n := 1; ; n++ {
		resp, err := r.adm.ValidateCreateTopics(ctx, int32(tp.Partitions), int16(tp.ReplicationFactor), ptrs(tp.Configs), tp.Topic)
		if err != nil && !kerr.IsRetriable(err) {
			return nil, "", fmt.Errorf("validate topic creation on the target: %w", err)
		}
		if err == nil {
			var retry error
			configs = map[string]kadm.Config{}
			for _, cr := range resp {
				if cr.Topic == tp.Topic {
					configs = cr.Configs
				}
				switch {
				case cr.Err == nil:
				case kerr.IsRetriable(cr.Err):
					retry = &PartitionError{Op: "validate topic creation", Topic: cr.Topic, Partition: -1, Err: cr.Err}
				default:
					return nil, fmt.Sprintf("topic %q cannot be created on the target as backed up (%d partitions, replication factor %d, configs %s): %v %s",
						cr.Topic, tp.Partitions, tp.ReplicationFactor, configString(tp.Configs), cr.Err, cr.ErrMessage), nil
				}
			}
			if retry == nil {
				return configs, "", nil
			}
			err = retry
		}
		if time.Since(began) > offsetsBudget {
			return nil, "", fmt.Errorf("%w (still after retrying for %s: the target is busy, try again)", err, offsetsBudget)
		}
		if err := sleep(ctx, backoff(n)); err != nil {
			return nil, "", err
		}
	}
}

// endsMoved names the partitions of reports whose log end on the target is
// not the end the restore wrote up to.
func endsMoved(reports []PartitionReport, ends kadm.ListedOffsets) ([]string, error) {
	var bad []string
	for _, pr := range reports {
		e, ok := ends.Lookup(pr.Topic, pr.Partition)
		if !ok {
			return nil, fmt.Errorf("topic %q partition %d: the broker's ListOffsets answer does not name the partition", pr.Topic, pr.Partition)
		}
		if e.Offset != pr.NewEnd {
			bad = append(bad, fmt.Sprintf("%s/%d ends at %d, the restore wrote up to %d", pr.Topic, pr.Partition, e.Offset, pr.NewEnd))
		}
	}
	return bad, nil
}
