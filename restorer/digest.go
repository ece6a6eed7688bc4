package restorer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
)

// StateDigestError is returned, with the restore's report, when a restored
// changelog partition read back from the target does not encode the state
// the backup recorded (its state digest differs: docs/FORMAT.md, "State
// digest"). The records are in, the offsets committed and the report
// saved (its partitions say which differ); the restore has failed all the
// same: the application would start on other state than the backup's.
type StateDigestError struct {
	BackupID string
	// Different names each partition that differs: topic, partition, the
	// backup's digest and the target's.
	Different []string
}

func (e *StateDigestError) Error() string {
	noun := "changelog partitions"
	if len(e.Different) == 1 {
		noun = "changelog partition"
	}
	return fmt.Sprintf("the state restored from backup %s differs from the backup's in %d %s: %s",
		e.BackupID, len(e.Different), noun, strings.Join(e.Different, "; "))
}

// checkStateDigests reads back every restored changelog partition of
// reports from the target (read_committed, from its log start to its new
// end), computes its state digest and compares it with the manifest's,
// recording both in each report (PartitionReport.StateDigest,
// StateDigestResult). A manifest without a digest gives "not recorded",
// never "equal"; a partition cut by --to-time is not compared, and one
// whose records past retention.ms were restored under --retention
// accept-loss that differs is "loss accepted", not a failure. It returns
// a *StateDigestError naming every partition that differs, after filling
// in all of them; a target that cannot be read is an error.
func (r *restore) checkStateDigests(ctx context.Context, reports []PartitionReport) error {
	want := map[string]*format.Partition{}
	changelog := map[string]bool{}
	for _, t := range r.sel.topics {
		if !isChangelog(t, nil) {
			continue
		}
		changelog[t.Name] = true
		for i := range t.PartitionCuts {
			want[fmt.Sprintf("%s/%d", t.Name, t.PartitionCuts[i].Partition)] = &t.PartitionCuts[i]
		}
	}
	var read []int // indexes into reports to read back
	for i := range reports {
		pr := &reports[i]
		if !changelog[pr.Topic] {
			continue
		}
		if c := r.sel.cuts[pr.Topic][pr.Partition]; c >= 0 {
			pr.StateDigestResult = format.StateDigestCut
			continue
		}
		read = append(read, i)
	}
	if len(read) == 0 {
		return nil
	}
	// Concurrency partitions at a time: each Digester holds 53 to 80
	// bytes per live key of its partition (statedigest.Digester).
	sums := map[int]statedigest.StateDigest{}
	step := max(r.o.Concurrency, 1)
	for from := 0; from < len(read); from += step {
		got, err := r.targetDigests(ctx, reports, read[from:min(from+step, len(read))])
		if err != nil {
			return fmt.Errorf("read the restored changelogs back from the target to check their state: %w", err)
		}
		maps.Copy(sums, got)
	}
	// Records past retention.ms restored under --retention accept-loss may
	// be deleted by the broker before they are read back: a state that
	// differs there is the loss the user accepted, not a failure.
	lossAccepted := map[string]bool{}
	for _, tp := range r.plan.Topics {
		if tp.Retention == nil || tp.Retention.Choice != format.RetentionAcceptLoss {
			continue
		}
		for _, pp := range tp.PartitionPlans {
			if pp.PastRetention > 0 {
				lossAccepted[fmt.Sprintf("%s/%d", tp.Topic, pp.Partition)] = true
			}
		}
	}
	var differ []string
	for _, i := range read {
		pr := &reports[i]
		got := sums[i]
		pr.StateDigest = &got
		w := want[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)]
		switch {
		case w == nil || w.StateDigest == nil:
			pr.StateDigestResult = format.StateDigestNotRecorded
		case w.StateDigest.Equal(got):
			pr.StateDigestResult = format.StateDigestEqual
		case lossAccepted[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)]:
			pr.StateDigestResult = format.StateDigestLossAccepted
		default:
			pr.StateDigestResult = format.StateDigestDifferent
			differ = append(differ, fmt.Sprintf("topic %q partition %d: backup %d keys %s, target %d keys %s",
				pr.Topic, pr.Partition, w.StateDigest.Keys, w.StateDigest.Digest, got.Keys, got.Digest))
		}
	}
	if len(differ) > 0 {
		return &StateDigestError{BackupID: r.sel.m.BackupID, Different: differ}
	}
	return nil
}

// targetDigests reads the partitions reports[read...] from the target, each
// from its log start up to its new end, with one read_committed consumer
// (all at once: the caller bounds how many), and returns
// their state digests by report index. A partition is done when a record
// at new end - 1 arrived (the restore's idempotent producer leaves no
// transaction markers, and compaction never removes a log's last record);
// reading that stops moving for the target's retry_timeout fails.
func (r *restore) targetDigests(ctx context.Context, reports []PartitionReport, read []int) (map[int]statedigest.StateDigest, error) {
	type part struct {
		i   int
		d   *statedigest.Digester
		end int64
	}
	parts := map[string]map[int32]*part{}
	offs := map[string]map[int32]kgo.Offset{}
	left := 0
	out := map[int]statedigest.StateDigest{}
	planned := map[string]int64{} // records the restored partition holds, by the plan
	for _, tp := range r.plan.Topics {
		for _, pp := range tp.PartitionPlans {
			planned[fmt.Sprintf("%s/%d", tp.Topic, pp.Partition)] = pp.Records
		}
	}
	for _, i := range read {
		pr := &reports[i]
		p := &part{i: i, d: statedigest.New(), end: pr.NewEnd}
		// A partition that holds no record has the empty state: an
		// existing empty topic's log can end above 0 with nothing to
		// read (no record at new end - 1 would ever come).
		if n, ok := planned[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)]; p.end <= 0 || (ok && n == 0) {
			out[i] = p.d.Sum()
			continue
		}
		if parts[pr.Topic] == nil {
			parts[pr.Topic], offs[pr.Topic] = map[int32]*part{}, map[int32]kgo.Offset{}
		}
		parts[pr.Topic][pr.Partition] = p
		offs[pr.Topic][pr.Partition] = kgo.NewOffset().AtStart()
		left++
	}
	if left == 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(r.o.Target), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumePartitions(offs))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	budget := r.o.RetryTimeout
	if budget <= 0 {
		budget = 2 * time.Minute
	}
	moved := time.Now()
	for left > 0 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("topic %q partition %d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(rec *kgo.Record) {
			p := parts[rec.Topic][rec.Partition]
			if p == nil || rec.Offset >= p.end {
				return
			}
			moved = time.Now()
			p.d.Add(rec.Key, rec.Value)
			if rec.Offset == p.end-1 {
				out[p.i] = p.d.Sum()
				delete(parts[rec.Topic], rec.Partition)
				left--
			}
		})
		if time.Since(moved) > budget {
			var missing []string
			for t, ps := range parts {
				for p, pt := range ps {
					missing = append(missing, fmt.Sprintf("topic %q partition %d (end %d)", t, p, pt.end))
				}
			}
			slices.Sort(missing)
			return nil, fmt.Errorf("no record came for %s (the target's retry_timeout) while %s had not been read to the end", budget, strings.Join(missing, ", "))
		}
	}
	return out, nil
}
