package restorer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
)

// commitOffsets commits the planned offsets of group g, translated with
// the offset maps observed while producing (reports), through the group
// coordinator; checks every partition's error; reads them back and
// compares (docs/DOMAIN.md#commit-verified). It returns g's offsets as committed (with the
// changelog strategy each commit is translated again with its partition's
// observed map) and a warning for each translation the plan did not
// predict; g itself is not changed. A nil error means every offset was
// committed and read back equal (RestoreReport.Committed).
//
// The commit is an OffsetCommit with generation (member epoch) -1 and no
// member id, what Kafka's Admin#alterStreamsGroupOffsets sends (Kafka
// 4.4: through alterConsumerGroupOffsets' AlterConsumerGroupOffsetsHandler)
// and Admin#alterConsumerGroupOffsets alike: a classic, consumer or
// streams group (KIP-1071; StreamsGroup#validateOffsetCommit) takes it
// while it has no members, and a group that does not exist yet is made a
// classic one (which a streams application converts when it joins).
func (r *restore) commitOffsets(ctx context.Context, g *GroupPlan, reports []PartitionReport) ([]OffsetPlan, []string, error) {
	maps := map[string]map[int32]*offsets.Map{}
	for _, pr := range reports {
		if maps[pr.Topic] == nil {
			maps[pr.Topic] = map[int32]*offsets.Map{}
		}
		maps[pr.Topic][pr.Partition] = pr.Map
	}
	committed := slices.Clone(g.Offsets)
	var warnings []string
	want := kadm.Offsets{}
	for i := range committed {
		op := &committed[i]
		if op.Action != format.OffsetCommit {
			continue
		}
		if r.o.Strategy == StrategyChangelog {
			m := maps[op.Topic][op.Partition]
			if m == nil {
				return nil, nil, fmt.Errorf("no offset map for topic %q partition %d", op.Topic, op.Partition)
			}
			if v := m.Translate(op.Committed); v != op.Translated {
				warnings = append(warnings, fmt.Sprintf("topic %q partition %d: committed %d translated to %d, the plan predicted %d", op.Topic, op.Partition, op.Committed, v, op.Translated))
				op.Translated = v
			}
		}
		want.AddOffset(op.Topic, op.Partition, op.Translated, -1)
	}
	if len(want) == 0 {
		return committed, warnings, nil
	}
	// Committing the same offsets again is harmless, and they are read
	// back anyway: a retriable error, an UNKNOWN_SERVER_ERROR or an answer
	// without a partition is asked again for the target's retry_timeout
	// (issue 14: one UNKNOWN_SERVER_ERROR failed the restore).
	err := r.retrying(ctx, "OffsetCommit", func() error {
		resps, err := r.adm.CommitOffsets(ctx, g.GroupID, want)
		if err != nil {
			return fmt.Errorf("commit offsets (OffsetCommit) of group %q on the target: %w", g.GroupID, err)
		}
		var failed []string
		var first error
		resps.Each(func(or kadm.OffsetResponse) {
			if or.Err != nil {
				failed = append(failed, fmt.Sprintf("%s/%d: %v", or.Topic, or.Partition, or.Err))
				if first == nil || !targetRetriable(or.Err) {
					first = or.Err
				}
			}
		})
		if len(failed) == 0 {
			return nil
		}
		sort.Strings(failed)
		if first.Error() == "partition missing in commit response" { // kadm's, unexported
			first = errShortAnswer
		}
		return fmt.Errorf("commit offsets (OffsetCommit) of group %q: %d partition(s) failed: %s: %w", g.GroupID, len(failed), strings.Join(failed, "; "), first)
	})
	if err != nil {
		return nil, nil, err
	}
	err = r.retrying(ctx, "OffsetFetch", func() error {
		got, err := r.adm.FetchOffsets(ctx, g.GroupID)
		if err != nil {
			return fmt.Errorf("read back the offsets (OffsetFetch) of group %q: %w", g.GroupID, err)
		}
		var diffs []string
		short := false
		want.Each(func(o kadm.Offset) {
			gr, ok := got.Lookup(o.Topic, o.Partition)
			if !ok || gr.Err != nil || gr.At != o.At {
				diffs = append(diffs, fmt.Sprintf("%s/%d: committed %d, read back %d (%v)", o.Topic, o.Partition, o.At, gr.At, gr.Err))
				short = short || !ok || targetRetriable(gr.Err)
			}
		})
		if len(diffs) == 0 {
			return nil
		}
		sort.Strings(diffs)
		err = fmt.Errorf("offsets of group %q read back (OffsetFetch) differ from what was committed: %s", g.GroupID, strings.Join(diffs, "; "))
		if short { // not answered, not another value: asked again
			err = fmt.Errorf("%w: %w", err, errShortAnswer)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return committed, warnings, nil
}
