package restorer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// selection is the part of the plan that needs no target cluster.
type selection struct {
	m       *format.Manifest
	topics  []*format.Topic // restored, sorted by name
	skipped []SkippedTopic
	cuts    map[string]map[int32]int64 // --to-time cut per partition (-1: none)
	records map[string]map[int32]int64 // records to restore per partition
}

func isChangelog(t *format.Topic, declared []string) bool {
	return t.Class == string(topicfilter.Changelog) || t.SourceChangelog || slices.Contains(declared, t.Name)
}

// selectTopics picks the backup's topics to restore, refuses a
// point-in-time restore with any changelog among them (docs/DOMAIN.md#pitr), and
// computes the cut and record count of every partition.
func selectTopics(ctx context.Context, store storage.Backend, m *format.Manifest, o *Options) (*selection, error) {
	var filter *topicfilter.Filter
	if len(o.Topics) > 0 {
		f, err := topicfilter.NewFilter(o.Topics, nil)
		if err != nil {
			return nil, &RefusedError{Reasons: []string{fmt.Sprintf("--topics: %v", err)}}
		}
		filter = f
	}
	sel := &selection{m: m, cuts: map[string]map[int32]int64{}, records: map[string]map[int32]int64{}}
	var changelogsUnderPITR []string
	matched := 0
	for i := range m.Topics {
		t := &m.Topics[i]
		if strings.HasPrefix(t.Name, "__") {
			// Never restore broker-internal topics (docs/DOMAIN.md#field-case-01 A3), whatever the manifest says.
			return nil, &RefusedError{Reasons: []string{fmt.Sprintf("the backup holds broker-internal topic %q: it cannot be restored as data", t.Name)}}
		}
		if filter != nil && !filter.Match(t.Name) {
			sel.skipped = append(sel.skipped, SkippedTopic{Topic: t.Name, Reason: "not matched by --topics"})
			continue
		}
		matched++
		changelog := isChangelog(t, o.SourceChangelogTopics)
		if o.Strategy == StrategyRebuild && changelog && !t.SourceChangelog && !slices.Contains(o.SourceChangelogTopics, t.Name) {
			sel.skipped = append(sel.skipped, SkippedTopic{Topic: t.Name, Reason: "changelog: the rebuild strategy lets the application rebuild its state from its input"})
			continue
		}
		if o.ToTime != nil && changelog {
			changelogsUnderPITR = append(changelogsUnderPITR, t.Name)
		}
		sel.topics = append(sel.topics, t)
	}
	if filter != nil && matched == 0 {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("--topics %q matches no topic of backup %s", o.Topics, m.BackupID)}}
	}
	const pitrWhy = "a changelog cut at a time does not match the input offsets and outputs at that time; " +
		"the safe point-in-time restore restores inputs and outputs up to the time, skips changelogs and lets the application rebuild its state"
	if len(changelogsUnderPITR) > 0 {
		return nil, &RefusedError{
			Reasons: []string{fmt.Sprintf("point-in-time restore (--to-time) of changelog topics is refused: %s. %s",
				strings.Join(changelogsUnderPITR, ", "), pitrWhy)},
			Hint: "restore with --strategy rebuild --to-time T, leaving source-topic changelogs (inputs that stores reuse as changelogs) out with --topics",
		}
	}
	if o.ToTime != nil && o.Strategy != StrategyRebuild {
		// Even without changelogs: the group's input offsets would be
		// translated into a cut log while no state matches them.
		return nil, &RefusedError{
			Reasons: []string{"point-in-time restore (--to-time) needs --strategy rebuild: with the changelog strategy the application would resume mid-stream at the cut without the state built from the records before it; " + pitrWhy},
			Hint:    "restore with --strategy rebuild --to-time T",
		}
	}
	if len(sel.topics) == 0 {
		var why []string
		for _, sk := range sel.skipped {
			why = append(why, fmt.Sprintf("%s (%s)", sk.Topic, sk.Reason))
		}
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("nothing to restore: every topic of backup %s is left out: %s", m.BackupID, strings.Join(why, "; "))}}
	}
	for _, t := range sel.topics {
		sel.cuts[t.Name] = map[int32]int64{}
		sel.records[t.Name] = map[int32]int64{}
		for pi := range t.PartitionCuts {
			p := &t.PartitionCuts[pi]
			end, err := cutEnd(ctx, store, t.Name, p, o.ToTime)
			if err != nil {
				return nil, err
			}
			sel.cuts[t.Name][p.Partition] = end
			n := p.Records
			if end >= 0 {
				if n, err = countBelow(ctx, store, t.Name, p, end, -1); err != nil {
					return nil, err
				}
			}
			sel.records[t.Name][p.Partition] = n
		}
	}
	return sel, nil
}

// planOffsets decides what happens to each committed offset of the backup.
// translate returns the new offset for a restored partition (the observed
// or predicted translation); for the rebuild strategy it is not called:
// input offsets go to the start of the restored data (startOf).
func planOffsets(sel *selection, o *Options, translate func(t *format.Topic, p *format.Partition, committed int64) (int64, error), startOf func(topic string, p int32) int64) (*GroupPlan, error) {
	m := sel.m
	if m.Group == nil {
		return nil, nil
	}
	g := &GroupPlan{GroupID: m.Group.GroupID, Offsets: []OffsetPlan{}}
	restored := map[string]*format.Topic{}
	for _, t := range sel.topics {
		restored[t.Name] = t
	}
	inBackup := map[string]bool{}
	for _, t := range m.Topics {
		inBackup[t.Name] = true
	}
	for _, c := range m.Group.Offsets {
		op := OffsetPlan{Topic: c.Topic, Partition: c.Partition, Committed: c.Offset, Translated: -1, Current: -1, Action: format.OffsetDrop}
		t := restored[c.Topic]
		switch {
		case c.Class == string(topicfilter.Repartition):
			op.Note = "repartition topic: not restored (it regenerates)"
			switch n := c.EndOffset - c.Offset; {
			case n == 1:
				op.Note += "; 1 record was in flight in it at backup time and is lost"
			case n > 1:
				op.Note += fmt.Sprintf("; %d records were in flight in it at backup time and are lost", n)
			}
		case !inBackup[c.Topic]:
			op.Note = "topic not in the backup"
		case t == nil:
			op.Note = "topic not restored by this restore"
		case t.Class == string(topicfilter.Changelog) && !t.SourceChangelog && !slices.Contains(o.SourceChangelogTopics, t.Name):
			op.Note = "changelog topic: Kafka Streams keeps changelog positions in local .checkpoint files, not in the group"
		default:
			var p *format.Partition
			for i := range t.PartitionCuts {
				if t.PartitionCuts[i].Partition == c.Partition {
					p = &t.PartitionCuts[i]
				}
			}
			if p == nil {
				op.Note = fmt.Sprintf("partition %d is not in the backup", c.Partition)
				break
			}
			op.Action = format.OffsetCommit
			if o.Strategy == StrategyRebuild {
				op.Translated = startOf(c.Topic, c.Partition)
				op.Note = "reset to the start of the restored data: the application rebuilds its state"
				break
			}
			v, err := translate(t, p, c.Offset)
			if err != nil {
				return nil, err
			}
			op.Translated = v
			if c.Offset < p.StartOffset {
				op.Note = fmt.Sprintf("committed before the partition's first backed-up offset %d: records in between were deleted before the backup", p.StartOffset)
			}
		}
		g.Offsets = append(g.Offsets, op)
	}
	sort.Slice(g.Offsets, func(i, j int) bool {
		a, b := g.Offsets[i], g.Offsets[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return g, nil
}

func predictOffsets(ctx context.Context, store storage.Backend, backupID string, strategy Strategy, toTime *time.Time) (*GroupPlan, error) {
	if strategy == "" {
		strategy = StrategyChangelog
	}
	m, err := loadBackup(ctx, store, backupID)
	if err != nil {
		return nil, err
	}
	o := &Options{Strategy: strategy, ToTime: toTime}
	sel, err := selectTopics(ctx, store, m, o)
	if err != nil {
		return nil, err
	}
	g, err := planOffsets(sel, o, func(t *format.Topic, p *format.Partition, committed int64) (int64, error) {
		// Restored into an empty topic, the k-th restored record gets
		// offset k: the translation is the count of restored records
		// below the committed offset.
		return countBelow(ctx, store, t.Name, p, committed, sel.cuts[t.Name][p.Partition])
	}, func(string, int32) int64 { return 0 })
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("backup %s holds no group offsets (no application_id when it was taken)", m.BackupID)
	}
	return g, nil
}

// parseInt64 parses a config value, or returns def.
func parseInt64(v *string, def int64) int64 {
	if v == nil {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(*v), 10, 64)
	if err != nil {
		return def
	}
	return n
}
