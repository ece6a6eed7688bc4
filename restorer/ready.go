package restorer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
	// offsetsBudget bounds how long a topic creation or a listing retries
	// retriable errors when the client has no kgo.RetryTimeout.
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
		if !targetRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if time.Since(began) >= budget || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (ListOffsets still failing after retrying for %s, the target's retry_timeout)", err, time.Since(began).Round(time.Millisecond))
		}
		if err := sleep(ctx, min(backoff(n), budget-time.Since(began))); err != nil {
			return nil, err
		}
	}
}

// timeouts returns the target client's request_timeout
// (kgo.RequestTimeoutOverhead) and retry_timeout (kgo.RetryTimeout).
func (r *restore) timeouts() (request, retry time.Duration) {
	if r.cl == nil { // a restore built by a test without a client
		return r.o.RequestTimeout, cmp.Or(r.o.RetryTimeout, offsetsBudget)
	}
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
// (REQUEST_TIMED_OUT, NOT_CONTROLLER, ...) is retried like retryListed, for the
// target client's retry_timeout (offsetsBudget without one), and
// then returned as an error: the target is busy, not unwilling. A refusal
// (any other error) is returned as refused, the reason for a RefusedError.
func (r *restore) validateCreate(ctx context.Context, tp *TopicPlan) (configs map[string]kadm.Config, refused string, err error) {
	began := time.Now()
	_, budget := r.timeouts()
	for n := 1; ; n++ {
		resp, err := r.adm.ValidateCreateTopics(ctx, int32(tp.Partitions), int16(tp.ReplicationFactor), ptrs(tp.Configs), tp.Topic)
		if err != nil && !targetRetriable(err) {
			return nil, "", fmt.Errorf("validate topic creation (CreateTopics) on the target: %w", err)
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
				case targetRetriable(cr.Err):
					retry = &PartitionError{Op: "validate topic creation (CreateTopics)", Topic: cr.Topic, Partition: -1, Err: cr.Err}
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
		if time.Since(began) > budget {
			return nil, "", fmt.Errorf("%w (still after retrying for %s, target.retry_timeout: the target is busy, try again or raise it)", err, budget)
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

// errShortAnswer marks an answer that lacks part of what was asked (a
// Metadata answer without a topic asked for, an offset missing from an
// OffsetFetch or OffsetCommit answer): asked again, like a retriable
// error.
var errShortAnswer = errors.New("the broker's answer lacks part of what was asked")

// targetRetriable reports whether a failed request to the target is worth
// asking again within the target's retry_timeout: config.Retriable
// (retriable codes, UNKNOWN_SERVER_ERROR, dropped connections; for the
// requests that are safe to repeat: every one but Produce, whose franz-go
// producer fails the batch and whose restore resumes when run again), or
// errShortAnswer.
func targetRetriable(err error) bool {
	return config.Retriable(err) || errors.Is(err, errShortAnswer)
}

// retrying calls fn until it returns nil or an error targetRetriable does
// not pass, with backoff, for the target's retry_timeout; then it returns
// fn's last error, saying that api (the Kafka request) still failed after
// the budget.
func (r *restore) retrying(ctx context.Context, api string, fn func() error) error {
	_, budget := r.timeouts()
	began := time.Now()
	for n := 1; ; n++ {
		err := fn()
		if err == nil || ctx.Err() != nil || !targetRetriable(err) {
			return err
		}
		if time.Since(began) >= budget {
			return fmt.Errorf("%w (%s still failing after retrying for %s, the target's retry_timeout)", err, api, time.Since(began).Round(time.Millisecond))
		}
		if err := sleep(ctx, min(backoff(n), max(budget-time.Since(began), time.Millisecond))); err != nil {
			return err
		}
	}
}
