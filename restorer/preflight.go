package restorer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// findings are the refusals and warnings one step of preflight returns, in
// the order it found them. A refusal stops the restore before its first
// write (RefusedError); a warning goes into the plan.
type findings struct {
	refusals []string
	warnings []string
}

func (f *findings) refuse(format string, args ...any) {
	f.refusals = append(f.refusals, fmt.Sprintf(format, args...))
}

func (f *findings) warn(format string, args ...any) {
	f.warnings = append(f.warnings, fmt.Sprintf(format, args...))
}

// add appends g's refusals and warnings after f's.
func (f *findings) add(g findings) {
	f.refusals = append(f.refusals, g.refusals...)
	f.warnings = append(f.warnings, g.warnings...)
}

// preflight builds the plan against the target and refuses, before any
// write, whatever would fail or silently change the data: it reads the
// target's copies of the selected topics, plans each topic
// (planTopic), has the target validate the topics to create, checks every
// record against the target's limits (limits.go), plans the group's
// offsets (planGroup) and says whether an earlier run already did it all.
// Refusals come back as one *RefusedError; the target's state it read is
// kept in r.targetStart and r.targetEnd for the restore.
func (r *restore) preflight(ctx context.Context) (*Plan, error) {
	o, sel, m, bm := &r.o, r.sel, r.sel.m, r.bm
	if len(bm.Brokers) == 0 {
		return nil, fmt.Errorf("the target cluster reports no brokers")
	}
	if err := r.loadJournal(ctx, bm.Cluster); err != nil {
		return nil, err
	}
	// Broker-level limits (one broker's full config, defaults included).
	bd := r.brokerDefaultsOf(ctx)
	tt, err := r.readTargetTopics(ctx, sel)
	if err != nil {
		return nil, err
	}
	r.targetStart, r.targetEnd = tt.start, tt.end
	// A fill an earlier run began is planned from the configs that run
	// found, not from what its pre-configs made of them.
	tt.restoreFilledConfigs(r.jour)

	plan := &Plan{BackupID: m.BackupID, ApplicationID: m.ApplicationID, Strategy: o.Strategy, ToTime: o.ToTime,
		TargetClusterID: bm.Cluster, TargetBrokers: len(bm.Brokers), Skipped: sel.skipped}
	var f findings
	var toCreate []int // indexes in plan.Topics
	for _, t := range sel.topics {
		tp, create, tf := planTopic(t, sel, o, tt, r.jour, r.other, len(bm.Brokers))
		f.add(tf)
		if create {
			toCreate = append(toCreate, len(plan.Topics))
		}
		plan.Topics = append(plan.Topics, tp)
	}
	plan.Warnings = f.warnings
	if r.latestNote != "" {
		plan.Warnings = append([]string{r.latestNote}, plan.Warnings...)
	}

	// The target accepts every topic as it will be created.
	validated := map[string]map[string]kadm.Config{}
	for _, i := range toCreate {
		tp := &plan.Topics[i]
		cfgs, why, err := r.validateCreate(ctx, tp)
		if err != nil {
			return nil, err
		}
		validated[tp.Topic] = cfgs
		if why != "" {
			f.refuse("%s", why)
		}
	}

	// Every record fits the target's limits (limits.go).
	limitRefusals, err := r.checkLimits(ctx, plan, bd, tt.full, validated)
	if err != nil {
		return nil, err
	}
	f.refusals = append(f.refusals, limitRefusals...)
	r.preConfigsWere = preConfigsWere(plan, tt)

	// The application.id group on the target must have no members, and
	// the target must accept the group's configs. A share group (KIP-932)
	// is left alone: the backup read none of it.
	if m.Group != nil && m.Group.Type != format.GroupTypeShare {
		g, refusals, err := r.planGroup(ctx)
		if err != nil {
			return nil, err
		}
		f.refusals = append(f.refusals, refusals...)
		var unset []string
		g.Configs, unset = groupConfigsToSet(m.Group.Configs)
		if len(unset) > 0 {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q: configs %s have no value in the backup (sensitive or null): not set on the target", g.GroupID, strings.Join(unset, ", ")))
		}
		if tc, err := r.targetGroupConfigs(ctx, g.GroupID); err != nil {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q: %v: the plan cannot show which of its configs the restore overwrites", g.GroupID, err))
		} else {
			g.TargetConfigs = tc
			kept := map[string]string{}
			for k, v := range tc {
				if _, ok := g.Configs[k]; !ok || r.o.SkipGroupConfigs {
					kept[k] = v
				}
			}
			if len(kept) > 0 {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q on the target holds configs the restore does not set (%s): left as they are (the read-back after the restore compares only the configs it sets)", g.GroupID, configString(kept)))
			}
		}
		if len(g.Configs) > 0 && r.o.SkipGroupConfigs {
			g.SkippedConfigs = slices.Sorted(maps.Keys(g.Configs))
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q: configs %s of the backup are not set on the target (--skip-group-configs): the application runs with the target's group configs and the broker's defaults; the offsets are committed",
				g.GroupID, configString(g.Configs)))
			g.Configs = nil
		}
		if len(g.Configs) > 0 {
			if err := r.alterGroupConfigs(ctx, g.GroupID, g.Configs, true); err != nil {
				f.refuse("%v", err)
			}
		}
		kf, err := r.kafka20254(ctx, g, m.Group)
		if err != nil {
			return nil, err
		}
		f.refusals = append(f.refusals, kf.refusals...)
		plan.Warnings = append(plan.Warnings, kf.warnings...)
		plan.Group = g
	}
	if m.Group != nil && m.Group.Type == format.GroupTypeShare {
		plan.ShareGroup = m.Group.GroupID
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q was a share group (KIP-932) on the source, not the application's consumer group: the backup holds none of it, and the restore leaves the target's group alone", m.Group.GroupID))
	}
	plan.InFlight = inFlightPlan(sel, o)
	plan.Warnings = append(plan.Warnings, inFlightWarnings(plan.InFlight, o)...)
	plan.Complete = planComplete(plan, r.jour)
	plan.Warnings = append(plan.Warnings, offsetWarnings(plan, r.jour)...)
	plan.Warnings = append(plan.Warnings, strategyWarnings(plan, sel, o)...)
	if len(f.refusals) > 0 {
		return nil, &RefusedError{Reasons: f.refusals}
	}
	return plan, nil
}

// repartitionTopicConfigs are the configs Kafka Streams creates a
// repartition topic with (RepartitionTopicConfig's
// REPARTITION_TOPIC_DEFAULT_OVERRIDES, over InternalTopicConfig's
// message.timestamp.type=CreateTime): the restore creates an in-flight
// topic with them, then the source's own topic configs over them. Its
// partitions are the source's, as InternalTopicManager makes them.
// InternalTopicManager accepts an existing repartition topic whose
// cleanup.policy has no compact, retention.ms is -1 and retention.bytes is
// unset.
var repartitionTopicConfigs = map[string]string{
	"cleanup.policy":         "delete",
	"segment.bytes":          "52428800",
	"retention.ms":           "-1",
	"message.timestamp.type": "CreateTime",
}

// inFlightPlan is what the restore does with the backup's records in
// flight: restored (sel holds the tails) or lost, per repartition topic;
// nil under the rebuild strategy or when there are none to speak of.
func inFlightPlan(sel *selection, o *Options) *format.InFlightPlan {
	if o.Strategy == StrategyRebuild {
		return nil
	}
	m := sel.m
	p := &format.InFlightPlan{Restored: restoresInFlight(o), Topics: []format.InFlightTopicPlan{}}
	if m.InFlight != nil {
		for _, t := range m.InFlight {
			tp := format.InFlightTopicPlan{Topic: t.Name, Partitions: t.Partitions, Restored: sel.inFlight[t.Name]}
			for _, pc := range t.PartitionCuts {
				tp.Records += pc.Records
			}
			// --topics may leave some out: those are lost too.
			p.Restored = p.Restored && tp.Restored
			p.Records += tp.Records
			p.Topics = append(p.Topics, tp)
		}
		return p
	}
	if m.Group == nil {
		return nil
	}
	// A backup written before in-flight capture: the recorded estimate.
	p.Restored, p.Estimated = false, true
	byTopic := map[string]int64{}
	parts := map[string]int{}
	for _, c := range m.Group.Offsets {
		if c.Class == string(topicfilter.Repartition) {
			byTopic[c.Topic] += max(c.EndOffset-c.Offset, 0)
			parts[c.Topic]++
		}
	}
	if len(byTopic) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(byTopic)) {
		p.Topics = append(p.Topics, format.InFlightTopicPlan{Topic: name, Partitions: parts[name], Records: byTopic[name]})
		p.Records += byTopic[name]
	}
	return p
}

// inFlightWarnings say what is lost of the records in flight, and why:
// --skip-in-flight, or --topics (o.Topics) not matching the tails.
func inFlightWarnings(p *format.InFlightPlan, o *Options) []string {
	if p.Lost() == 0 {
		return nil
	}
	var per []string
	for _, t := range p.Topics {
		if !t.Restored {
			per = append(per, fmt.Sprintf("%s: %d", t.Topic, t.Records))
		}
	}
	if p.Estimated {
		return []string{fmt.Sprintf("about %s in flight in repartition topics at the backup are lost (%s): this backup predates in-flight capture, so they are not in it, and the count is an estimate from the high watermark; a newer backup holds them",
			plural(p.Lost(), "record", "records"), strings.Join(per, ", "))}
	}
	if !o.SkipInFlight {
		return []string{fmt.Sprintf("%s in flight in repartition topics at the backup are not restored (%s): left out by --topics, the application never processes them, they are lost; add those topics to --topics (or restore without --topics) to bring them back",
			plural(p.Lost(), "record", "records"), strings.Join(per, ", "))}
	}
	return []string{fmt.Sprintf("%s in flight in repartition topics at the backup are not restored (%s): the application never processes them, they are lost; restore without --skip-in-flight (and with every repartition topic in --topics) to bring them back",
		plural(p.Lost(), "record", "records"), strings.Join(per, ", "))}
}

// targetTopics is what preflight read of the target's copies of the
// selected topics: their metadata (absent topics too), and for those that
// exist their log start and end offsets and configs.
type targetTopics struct {
	details kadm.TopicDetails
	start   map[string]map[int32]int64        // topic -> partition -> log start offset
	end     map[string]map[int32]int64        // topic -> partition -> log end offset
	configs map[string]map[string]*string     // topic -> config -> value (nil: null or sensitive)
	full    map[string]map[string]kadm.Config // topic -> config -> the whole entry (source, default)
}

// restoreFilledConfigs puts back, for each topic the journal jour records
// as filled (with the same topic id), the configs as they were before the
// pre-configs of an earlier run altered them (jour.FilledConfigs): the
// plan of a resumed fill is the plan of its first run, FinalConfigs and
// retention set-back included.
func (tt *targetTopics) restoreFilledConfigs(jour *journal) {
	if jour == nil {
		return
	}
	for topic, was := range jour.FilledConfigs {
		d, ok := tt.exists(topic)
		if !ok || jour.Filled[topic] != kafkaTopicID(d.ID) || tt.full[topic] == nil {
			continue
		}
		for k, c := range was {
			src, err := kmsg.ParseConfigSource(c.Source)
			if err != nil {
				src = kmsg.ConfigSourceUnknown
			}
			tt.full[topic][k] = kadm.Config{Key: k, Value: c.Value, Source: src, Sensitive: c.Sensitive}
			tt.configs[topic][k] = c.Value
		}
	}
}

// preConfigsWere returns, for each filled topic of plan with pre-configs,
// those configs as tt describes them (after restoreFilledConfigs: as the
// first run found them); a config not described is recorded as null.
func preConfigsWere(plan *Plan, tt *targetTopics) map[string]map[string]format.TopicConfig {
	out := map[string]map[string]format.TopicConfig{}
	for _, tp := range plan.Topics {
		if tp.Action != format.ActionFill || len(tp.PreConfigs) == 0 {
			continue
		}
		was := map[string]format.TopicConfig{}
		for k := range tp.PreConfigs {
			c, ok := tt.full[tp.Topic][k]
			if !ok {
				was[k] = format.TopicConfig{}
				continue
			}
			was[k] = format.TopicConfig{Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive}
		}
		out[tp.Topic] = was
	}
	return out
}

// exists reports whether the target has topic name.
func (tt *targetTopics) exists(name string) (kadm.TopicDetail, bool) {
	d, ok := tt.details[name]
	return d, ok && d.Err == nil
}

// readTargetTopics reads the target's copies of the selected topics. A
// topic the target does not know (UNKNOWN_TOPIC_OR_PARTITION) is absent;
// another error of a topic fails preflight, naming it.
func (r *restore) readTargetTopics(ctx context.Context, sel *selection) (*targetTopics, error) {
	names := make([]string, len(sel.topics))
	for i, t := range sel.topics {
		names[i] = t.Name
	}
	var details kadm.TopicDetails
	var existing []string
	tries := 0
	err := r.retrying(ctx, "Metadata", func() (err error) {
		tries++
		mctx := ctx
		if tries > 1 {
			mctx = kadm.WithAuthorizedOps(ctx) // a fresh request, not franz-go's cached answer
		}
		existing = existing[:0]
		if details, err = r.adm.ListTopics(mctx, names...); err != nil {
			if strings.HasPrefix(err.Error(), "metadata returned only") { // kadm: topics missing from the answer
				err = fmt.Errorf("%w: %w", errShortAnswer, err)
			}
			return fmt.Errorf("list topics of the target cluster (Metadata): %w", err)
		}
		for _, n := range names {
			if d, ok := details[n]; ok && d.Err == nil {
				existing = append(existing, n)
			} else if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("topic %q on the target (Metadata): %w", n, d.Err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tt := &targetTopics{details: details, start: map[string]map[int32]int64{}, end: map[string]map[int32]int64{},
		configs: map[string]map[string]*string{}, full: map[string]map[string]kadm.Config{}}
	if len(existing) == 0 {
		return tt, nil
	}
	starts, err := r.listStarts(ctx, existing...)
	if err != nil {
		return nil, fmt.Errorf("list log start offsets on the target: %w", err)
	}
	ends, err := r.listEnds(ctx, existing...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets on the target: %w", err)
	}
	starts.Each(func(lo kadm.ListedOffset) { setOff(tt.start, lo.Topic, lo.Partition, lo.Offset) })
	ends.Each(func(lo kadm.ListedOffset) { setOff(tt.end, lo.Topic, lo.Partition, lo.Offset) })
	rcs, err := r.adm.DescribeTopicConfigs(ctx, existing...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs on the target: %w", err)
	}
	for _, rc := range rcs {
		cs, full := map[string]*string{}, map[string]kadm.Config{}
		for _, c := range rc.Configs {
			cs[c.Key], full[c.Key] = c.Value, c
		}
		tt.configs[rc.Name], tt.full[rc.Name] = cs, full
	}
	return tt, nil
}

// planTopic plans backed-up topic t against the target: created (create
// is true) with the backup's partition count and dynamic configs, resumed
// (jour, this restore's journal, names the target's topic id) or filled
// (exists empty), and refused when it exists with another partition
// count, holds records this restore did not write (other is the journal
// of this backup and target with another strategy or cut), or does not
// fit the target's brokers. brokers is the target's broker count.
func planTopic(t *format.Topic, sel *selection, o *Options, tt *targetTopics, jour, other *journal, brokers int) (tp TopicPlan, create bool, f findings) {
	tp = TopicPlan{Topic: t.Name, Class: t.Class, SourceChangelog: t.SourceChangelog, SchemaRegistry: t.SchemaRegistry, Action: format.ActionCreate,
		Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}}
	if o.ReplicationFactor > 0 {
		tp.ReplicationFactor = o.ReplicationFactor
	}
	if sel.inFlight[t.Name] {
		// Created as Kafka Streams creates it, then what the source had.
		maps.Copy(tp.Configs, repartitionTopicConfigs)
	}
	for k, c := range t.Configs {
		if c.Source == "DYNAMIC_TOPIC_CONFIG" && c.Value != nil && !c.Sensitive {
			tp.Configs[k] = *c.Value
		}
	}
	if tp.Configs["message.timestamp.type"] == "LogAppendTime" {
		// Produce with the original timestamps, then switch: the
		// restored records keep their original append times.
		tp.Configs["message.timestamp.type"] = "CreateTime"
		tp.FinalConfigs = map[string]string{"message.timestamp.type": "LogAppendTime"}
	}
	if d, ok := tt.exists(t.Name); ok {
		f.add(planExisting(&tp, t, d, tt, jour, other))
	} else {
		create = true
		f.add(planCreate(&tp, o, brokers))
	}
	for pi := range t.PartitionCuts {
		p := &t.PartitionCuts[pi]
		cut := sel.cuts[t.Name][p.Partition]
		pp := PartitionPlan{Partition: p.Partition, Records: sel.records[t.Name][p.Partition], SourceEnd: p.EndOffset, CutAt: cut}
		if unread := format.UnreadRange(t.Name, p); unread != "" {
			f.warn("%s are not in this backup (the backup could not read them: unread): the restored partition ends at %d; a later backup holds them", unread, p.EndOffset)
		}
		if tp.Action == format.ActionResume || tp.Resumed {
			pp.AlreadyThere = tt.end[t.Name][p.Partition] - tt.start[t.Name][p.Partition]
			if pp.AlreadyThere > pp.Records {
				f.refuse("topic %q partition %d on the target holds %d records, more than the %d this restore writes: it is not this restore's", t.Name, p.Partition, pp.AlreadyThere, pp.Records)
			}
		}
		tp.PartitionPlans = append(tp.PartitionPlans, pp)
	}
	return tp, create, f
}

// planExisting plans topic t that exists on the target (d): resume when
// this restore's journal created it, fill when it is empty (keeping the
// target's configs, with the timestamp care of a created topic), refused
// otherwise or when its partition count or cleanup.policy differ.
func planExisting(tp *TopicPlan, t *format.Topic, d kadm.TopicDetail, tt *targetTopics, jour, other *journal) (f findings) {
	if len(d.Partitions) != t.Partitions {
		f.refuse("topic %q exists on the target with %s; the backup has %d: records would land in other partitions (delete the topic, or restore into a cluster without it)", t.Name, plural(int64(len(d.Partitions)), "partition", "partitions"), t.Partitions)
	}
	var held int64
	for p, end := range tt.end[t.Name] {
		held += end - tt.start[t.Name][p]
	}
	id := kafkaTopicID(d.ID)
	switch {
	case jour != nil && jour.Topics[t.Name] == id:
		tp.Action = format.ActionResume
	case jour != nil && jour.Filled[t.Name] == id:
		// An earlier run found it empty and began to fill it.
		tp.Resumed = true
		f.add(planFill(tp, t, tt, id))
	case held > 0 && other != nil && (other.Topics[t.Name] == id || other.Filled[t.Name] == id):
		f.refuse("topic %q on the target (%d records) was created by an earlier restore of this backup with strategy %s and cut %s: re-run that restore with the same --strategy and --to-time to resume it, or delete the topic", t.Name, held, other.Strategy, cutString(other.ToTime))
	case held > 0 && t.SchemaRegistry:
		// A registry started on the target before the restore wrote its
		// own records there: its ids would collide with the backup's.
		f.refuse("topic %q, the Schema Registry's storage topic, is not empty on the target (%d records) and was not created by an earlier run of this restore: a registry started on the target wrote it; stop that registry, delete the topic, restore, and only then start the registry against the target", t.Name, held)
	case held > 0:
		f.refuse("topic %q on the target is not empty (%d records) and was not created by an earlier run of this restore: delete it or restore into another cluster", t.Name, held)
	default:
		f.add(planFill(tp, t, tt, id))
	}
	return f
}

// planFill plans backed-up topic t into the existing topic of id id on
// the target, empty or filled in part by an earlier run of this restore:
// the target's configs are kept (a warning names each that differs from
// the backup's), and a cleanup.policy other than the backup's is refused.
func planFill(tp *TopicPlan, t *format.Topic, tt *targetTopics, id string) (f findings) {
	tp.Action = format.ActionFill
	tp.TargetTopicID = id
	existing := tt.configs[t.Name]
	if a, b := existing["cleanup.policy"], t.Configs["cleanup.policy"].Value; a != nil && b != nil && !sameSet(*a, *b) {
		f.refuse("topic %q exists empty on the target with cleanup.policy=%s; the backup has %s", t.Name, *a, *b)
	}
	var keys []string
	for k := range tp.Configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		backedUp := tp.Configs[k]
		if k == "message.timestamp.type" && tp.FinalConfigs != nil {
			backedUp = tp.FinalConfigs[k] // the backup's, before the switch to CreateTime
		}
		if have := deref(existing[k]); k != "cleanup.policy" && have != backedUp {
			f.warn("topic %q exists (empty) on the target with %s=%s; the backup has %s: the target's value is kept", t.Name, k, have, backedUp)
		}
		tp.Configs[k] = deref(existing[k]) // the plan shows what the topic will have
	}
	// The same timestamp care as a created topic: LogAppendTime
	// would replace every record's timestamp with the restore
	// time, so the topic is CreateTime while the records go in.
	tp.FinalConfigs = nil
	if deref(existing["message.timestamp.type"]) == "LogAppendTime" {
		tp.PreConfigs = map[string]string{"message.timestamp.type": "CreateTime"}
		tp.FinalConfigs = map[string]string{"message.timestamp.type": "LogAppendTime"}
	}
	return f
}

// planCreate plans a topic the restore creates: its replication factor
// must fit the target's brokers, and its min.insync.replicas its
// replication factor (capped at --replication-factor when given).
func planCreate(tp *TopicPlan, o *Options, brokers int) (f findings) {
	if v, ok := tp.Configs["min.insync.replicas"]; ok {
		if mir := parseInt64(&v, 1); int(mir) > tp.ReplicationFactor {
			if o.ReplicationFactor > 0 {
				tp.Configs["min.insync.replicas"] = fmt.Sprint(tp.ReplicationFactor)
				f.warn("topic %q: min.insync.replicas lowered from %d to %d to fit --replication-factor %d", tp.Topic, mir, tp.ReplicationFactor, tp.ReplicationFactor)
			} else {
				f.refuse("topic %q: min.insync.replicas=%d does not fit replication factor %d: pass --replication-factor N (min.insync.replicas is then capped at N)", tp.Topic, mir, tp.ReplicationFactor)
			}
		}
	}
	if tp.ReplicationFactor > brokers {
		f.refuse("topic %q: replication factor %d does not fit the target's %d broker(s): pass --replication-factor N with N <= %d", tp.Topic, tp.ReplicationFactor, brokers, brokers)
	}
	if tp.ReplicationFactor < 1 {
		tp.ReplicationFactor = min(3, brokers)
	}
	return f
}

// planGroup plans the backup's group offsets on the target: the group must
// have no members (a refusal naming its state and member count), and each
// committed offset is translated (planOffsets) to the restored data's
// offsets and shown with the offset the target has now (-1: none).
func (r *restore) planGroup(ctx context.Context) (*GroupPlan, []string, error) {
	sel, o, mg := r.sel, &r.o, r.sel.m.Group
	var f findings
	groups, err := r.adm.ListGroups(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list consumer groups on the target: %w", err)
	}
	g := &GroupPlan{GroupID: mg.GroupID}
	if lg, ok := groups[mg.GroupID]; ok {
		g.TargetState, g.TargetType = lg.State, lg.GroupType
		members := 0
		if lg.GroupType == format.GroupTypeStreams {
			// DescribeGroups does not describe a streams group (KIP-1071):
			// StreamsGroupDescribe counts its members.
			if sg, err := streamsgroup.Describe(ctx, r.cl, mg.GroupID); err == nil {
				members = len(sg.Members)
				if g.TargetState == "" {
					g.TargetState = sg.State
				}
			}
		} else if dg, err := r.adm.DescribeGroups(ctx, mg.GroupID); err == nil {
			if d, ok := dg[mg.GroupID]; ok {
				members = len(d.Members)
				if g.TargetState == "" {
					g.TargetState = d.State
				}
			}
		}
		switch g.TargetState {
		case "Empty", "Dead", "":
		default:
			kind, wait := "consumer group", ""
			if lg.GroupType == format.GroupTypeStreams {
				kind, wait = "streams group (KIP-1071)", "; a killed instance stays a member until its session times out (the group's streams.session.timeout.ms, 45 s by default): wait that long and run the restore again"
			}
			f.refuse("the %s %q on the target is %s with %d member(s): stop every instance of the application (and any consumer in that group) before restoring; offsets can only be reset on a group with no members%s",
				kind, mg.GroupID, g.TargetState, members, wait)
		}
	}
	current := kadm.OffsetResponses{}
	if _, ok := groups[mg.GroupID]; ok {
		if current, err = r.adm.FetchOffsets(ctx, mg.GroupID); err != nil {
			return nil, nil, fmt.Errorf("read the committed offsets of group %q on the target: %w", mg.GroupID, err)
		}
	}
	pg, err := planOffsets(sel, o, func(t *format.Topic, p *format.Partition, committed int64) (int64, error) {
		n, err := countBelow(ctx, r.store, t.Name, p, committed, sel.cuts[t.Name][p.Partition])
		return r.targetStart[t.Name][p.Partition] + n, err
	}, func(topic string, p int32) int64 { return r.targetStart[topic][p] })
	if err != nil {
		return nil, nil, err
	}
	if pg != nil {
		g.Offsets = pg.Offsets
	}
	for i := range g.Offsets {
		op := &g.Offsets[i]
		op.Current = -1
		if c, ok := current.Lookup(op.Topic, op.Partition); ok && c.Err == nil && c.At >= 0 {
			op.Current = c.At
		}
	}
	return g, f.refusals, nil
}

// planComplete reports whether an earlier run of this same restore (jour)
// finished and every planned partition holds all its records: nothing is
// produced or committed again.
func planComplete(plan *Plan, jour *journal) bool {
	if jour == nil || !jour.Complete {
		return false
	}
	for _, tp := range plan.Topics {
		for _, pp := range tp.PartitionPlans {
			if (tp.Action != format.ActionResume && !tp.Resumed) || pp.AlreadyThere != pp.Records {
				return false
			}
		}
	}
	return true
}

// offsetWarnings name the group offsets the restore overwrites on the
// target, or (plan.Complete) those the group moved since this restore
// committed them (jour), which it leaves as they are.
func offsetWarnings(plan *Plan, jour *journal) []string {
	if plan.Group == nil {
		return nil
	}
	var ws []string
	for _, op := range plan.Group.Offsets {
		switch {
		case op.Action != format.OffsetCommit || op.Current < 0:
		case plan.Complete && jour.Committed[fmt.Sprintf("%s/%d", op.Topic, op.Partition)] != op.Current:
			ws = append(ws, fmt.Sprintf("group %q moved on %s/%d since this restore committed it (now %d): left as it is", plan.Group.GroupID, op.Topic, op.Partition, op.Current))
		case !plan.Complete && op.Current != op.Translated:
			ws = append(ws, fmt.Sprintf("group %q has offset %d committed on %s/%d on the target: the restore overwrites it with %d", plan.Group.GroupID, op.Current, op.Topic, op.Partition, op.Translated))
		}
	}
	return ws
}

// strategyWarnings say what the plan's strategy and cut mean for the
// application: a --to-time before every record, the rebuild strategy's
// duplicated outputs, the changelog strategy without changelogs or from a
// cut not proven consistent (format.Cut; docs/DESIGN.md invariant 1).
func strategyWarnings(plan *Plan, sel *selection, o *Options) []string {
	var ws []string
	var planned, backedUp int64
	for _, tp := range plan.Topics {
		for _, pp := range tp.PartitionPlans {
			planned += pp.Records
		}
		for _, p := range topicOf(sel, tp.Topic).PartitionCuts {
			backedUp += p.Records
		}
	}
	if o.ToTime != nil && planned == 0 && backedUp > 0 {
		ws = append(ws, fmt.Sprintf("--to-time %s is before every record of the selected topics: nothing will be restored", o.ToTime.UTC().Format(time.RFC3339)))
	}
	if o.Strategy == StrategyRebuild {
		return append(ws, "rebuild: the application reprocesses its input from the start and emits its output records again; restored output topics will hold them twice, so their consumers must tolerate duplicates (or leave outputs out with --topics)")
	}
	restoredChangelog := false
	for _, tp := range plan.Topics {
		restoredChangelog = restoredChangelog || tp.Class == string(topicfilter.Changelog) || tp.SourceChangelog
	}
	hasChangelog := false
	for _, t := range sel.m.Topics {
		hasChangelog = hasChangelog || t.Class == string(topicfilter.Changelog)
	}
	if hasChangelog && !restoredChangelog {
		ws = append(ws, "the changelog strategy without any of the application's changelogs: input offsets are restored past records whose state is not; use --strategy rebuild, or include the changelogs")
	}
	c := sel.m.Cut
	if c == nil && sel.m.Group != nil {
		// A manifest written before the cut was recorded: its cut is
		// treated as unproven (docs/FORMAT.md, Changes).
		c = &format.Cut{Method: format.CutMethodOffsetsEndsOffsets, Reason: "the backup predates the proven cut: its manifest has no cut"}
	}
	if c != nil && !c.Proven && c.Method != format.CutMethodEnds {
		ws = append(ws, fmt.Sprintf("backup %s's cut is not proven consistent with the application's transactions (%s): the restored offsets and changelogs may disagree (input processed again, or state missing); a later backup of the running application may be proven, or use --strategy rebuild",
			sel.m.BackupID, c.Reason))
	}
	return ws
}

func topicOf(sel *selection, name string) *format.Topic {
	for _, t := range sel.topics {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func setOff(m map[string]map[int32]int64, t string, p int32, o int64) {
	if m[t] == nil {
		m[t] = map[int32]int64{}
	}
	m[t][p] = o
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sameSet compares comma-separated lists as sets ("compact,delete" equals
// "delete,compact").
func sameSet(a, b string) bool {
	split := func(s string) []string {
		var out []string
		for _, x := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(x))
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(split(a), split(b))
}

func kafkaTopicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return fmt.Sprintf("%x", id[:])
}
