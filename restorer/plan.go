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
	// inFlight names the in-flight tails (Manifest.InFlight) among topics:
	// restored with the changelog strategy unless Options.SkipInFlight.
	inFlight map[string]bool
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
	sel := &selection{m: m, cuts: map[string]map[int32]int64{}, records: map[string]map[int32]int64{}, inFlight: map[string]bool{}}
	var changelogsUnderPITR []string
	matched := 0
	for i := range m.Topics {
		t := &m.Topics[i]
		if strings.HasPrefix(t.Name, "__") {
			// Never restore broker-internal topics (docs/DOMAIN.md#field-case-01 A3), whatever the manifest says.
			return nil, &RefusedError{Reasons: []string{fmt.Sprintf("the backup holds broker-internal topic %q: it cannot be restored as data", t.Name)}}
		}
		if filter != nil && !filter.Match(t.Name) {
			reason := "not matched by --topics"
			if t.SchemaRegistry {
				reason += "; it is the Schema Registry's storage topic: without it a registry on the target cannot resolve the schema ids of the restored records (add it to --topics)"
			}
			sel.skipped = append(sel.skipped, SkippedTopic{Topic: t.Name, Reason: reason})
			continue
		}
		matched++
		changelog := isChangelog(t, o.SourceChangelogTopics)
		source := t.SourceChangelog || slices.Contains(o.SourceChangelogTopics, t.Name)
		if o.Strategy == StrategyRebuild && changelog && !source {
			sel.skipped = append(sel.skipped, SkippedTopic{Topic: t.Name, Reason: "changelog: the rebuild strategy lets the application rebuild its state from its input"})
			continue
		}
		// Under rebuild a source-topic changelog is an input: its store is
		// rebuilt from what is restored of it, so a cut of it is as safe as
		// of any input (docs/DOMAIN.md#pitr). Only where its state is
		// restored (the changelog strategy) is a cut refused.
		if o.ToTime != nil && changelog && !(o.Strategy == StrategyRebuild && source) {
			changelogsUnderPITR = append(changelogsUnderPITR, t.Name)
		}
		sel.topics = append(sel.topics, t)
	}
	// The Schema Registry's storage topic comes first: its records are
	// written before any other topic's (restoreRecords), so a consumer
	// of the restored topics never meets a schema id the registry does
	// not know yet.
	slices.SortStableFunc(sel.topics, func(a, b *format.Topic) int {
		switch {
		case a.SchemaRegistry == b.SchemaRegistry:
			return 0
		case a.SchemaRegistry:
			return -1
		}
		return 1
	})
	if filter != nil && matched == 0 {
		// --topics chooses among the in-flight tails too (below), so a
		// pattern that matches only tails matches something.
		var tails []string
		for _, t := range m.InFlight {
			if filter.Match(t.Name) {
				tails = append(tails, t.Name)
			}
		}
		switch {
		case len(tails) == 0:
			return nil, &RefusedError{Reasons: []string{fmt.Sprintf("--topics %q matches no topic of backup %s", o.Topics, m.BackupID)}}
		case !restoresInFlight(o):
			return nil, &RefusedError{Reasons: []string{fmt.Sprintf("--topics %q matches only in-flight tails of backup %s (%s), which a restore with --skip-in-flight or --strategy rebuild does not restore",
				o.Topics, m.BackupID, strings.Join(tails, ", "))}}
		}
	}
	const pitrWhy = "a changelog cut at a time does not match the input offsets and outputs at that time; " +
		"the safe point-in-time restore restores inputs and outputs up to the time, skips changelogs and lets the application rebuild its state"
	if len(changelogsUnderPITR) > 0 {
		return nil, &RefusedError{
			Reasons: []string{fmt.Sprintf("point-in-time restore (--to-time) of changelog topics is refused: %s. %s",
				strings.Join(changelogsUnderPITR, ", "), pitrWhy)},
			Hint: "restore with --strategy rebuild --to-time T: it leaves changelogs out and cuts source-topic changelogs as the inputs they are there",
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
	if restoresInFlight(o) {
		// The tails of the repartition topics, so that the application
		// goes on with the records in flight at the cut
		// (docs/DOMAIN.md#in-flight). --topics chooses among them too.
		for i := range m.InFlight {
			t := &m.InFlight[i]
			if filter != nil && !filter.Match(t.Name) {
				sel.skipped = append(sel.skipped, SkippedTopic{Topic: t.Name, Reason: "in-flight tail not matched by --topics"})
				continue
			}
			sel.topics = append(sel.topics, t)
			sel.inFlight[t.Name] = true
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
		toTime := o.ToTime
		if t.SchemaRegistry {
			// The registry's topic is never cut at a time: a schema
			// registered after it harms nothing (ids are never reused),
			// one registered "after" it only by the registry's clock
			// would leave a restored record's id unresolvable.
			toTime = nil
		}
		for pi := range t.PartitionCuts {
			p := &t.PartitionCuts[pi]
			end, err := cutEnd(ctx, store, t.Name, p, toTime)
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
		case c.Class == string(topicfilter.Repartition) && sel.inFlight[c.Topic]:
			p := partitionOf(t, c.Partition)
			if p == nil {
				op.Note = fmt.Sprintf("partition %d is not in the backup's in-flight tail", c.Partition)
				break
			}
			if err := commitTail(&op, t, p, translate); err != nil {
				return nil, err
			}
			if c.Offset < p.StartOffset {
				op.Note += fmt.Sprintf(" (committed %d was below the log start %d at the backup)", c.Offset, p.StartOffset)
			}
		case c.Class == string(topicfilter.Repartition):
			op.Note = "repartition topic: not restored (it regenerates)"
			n := c.EndOffset - c.Offset
			switch tail := inFlightTail(m, c.Topic, c.Partition); {
			case o.Strategy == StrategyRebuild:
				// The application recreates it empty and reprocesses its
				// reset input (StreamsResetter), so what was in flight
				// comes again: none of it is lost.
				op.Note += ": nothing in flight is lost, the application reprocesses it from its reset input"
			case tail != nil && o.SkipInFlight:
				op.Note = fmt.Sprintf("repartition topic: its in-flight tail is not restored (--skip-in-flight): %s lost", plural(tail.Records, "record", "records"))
			case tail != nil:
				op.Note = fmt.Sprintf("repartition topic: its in-flight tail is not restored (not matched by --topics): %s lost; add %s to --topics to restore it", plural(tail.Records, "record", "records"), c.Topic)
			case n == 1:
				op.Note += "; 1 record was in flight in it at backup time and is lost"
			case n > 1:
				op.Note += fmt.Sprintf("; %d records were in flight in it at backup time and are lost", n)
			}
			if n > 0 && o.Strategy == StrategyChangelog && m.InFlight == nil {
				op.Note += " (an estimate from the high watermark: this backup predates in-flight capture)"
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
	// The partitions of restored tails the group never committed: the
	// application would otherwise start them at auto.offset.reset
	// (Kafka Streams sets earliest, StreamsConfig), which is the tail's
	// start on the target too; committed explicitly all the same.
	committed := map[string]bool{}
	for _, c := range m.Group.Offsets {
		committed[fmt.Sprintf("%s/%d", c.Topic, c.Partition)] = true
	}
	for _, t := range sel.topics {
		if !sel.inFlight[t.Name] {
			continue
		}
		for i := range t.PartitionCuts {
			p := &t.PartitionCuts[i]
			if committed[fmt.Sprintf("%s/%d", t.Name, p.Partition)] {
				continue
			}
			op := OffsetPlan{Topic: t.Name, Partition: p.Partition, Committed: p.StartOffset, Current: -1, NeverCommitted: true}
			if err := commitTail(&op, t, p, translate); err != nil {
				return nil, err
			}
			op.Note += fmt.Sprintf(" (never committed on the lost cluster: the tail starts at the log start %d)", p.StartOffset)
			g.Offsets = append(g.Offsets, op)
		}
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

// restoresInFlight reports whether a restore with o restores the backup's
// in-flight tails: with the changelog strategy, unless o.SkipInFlight.
// Under the rebuild strategy the application recreates its internal topics
// empty and reprocesses its input (StreamsResetter's rule).
func restoresInFlight(o *Options) bool {
	return o.Strategy != StrategyRebuild && !o.SkipInFlight
}

// commitTail plans op, the group's offset on in-flight partition p of t,
// as a commit of the translated start of the tail: the offset of its first
// restored record on the target (the end when the tail is empty).
func commitTail(op *OffsetPlan, t *format.Topic, p *format.Partition, translate func(t *format.Topic, p *format.Partition, committed int64) (int64, error)) error {
	v, err := translate(t, p, p.StartOffset)
	if err != nil {
		return err
	}
	op.Action, op.Translated = format.OffsetCommit, v
	op.Note = fmt.Sprintf("in-flight tail restored: %s from offset %d; committed to its first restored record", plural(p.Records, "record", "records"), p.StartOffset)
	return nil
}

// partitionOf returns partition n of t, or nil.
func partitionOf(t *format.Topic, n int32) *format.Partition {
	if t == nil {
		return nil
	}
	for i := range t.PartitionCuts {
		if t.PartitionCuts[i].Partition == n {
			return &t.PartitionCuts[i]
		}
	}
	return nil
}

// inFlightTail returns partition n of m's in-flight tail of topic, or nil.
func inFlightTail(m *format.Manifest, topic string, n int32) *format.Partition {
	for i := range m.InFlight {
		if m.InFlight[i].Name == topic {
			return partitionOf(&m.InFlight[i], n)
		}
	}
	return nil
}

// plural is "1 record" or "n records".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
