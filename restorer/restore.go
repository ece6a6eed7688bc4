package restorer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Kafka's defaults, used when the target does not report a setting.
const (
	defaultMessageMaxBytes = 1048588 // message.max.bytes
	produceChunk           = 2000    // records per ProduceSync call and partition
	produceBytes           = 4 << 20 // bytes per ProduceSync call and partition
)

type restore struct {
	o     Options
	log   *slog.Logger
	store storage.Backend
	cl    *kgo.Client
	adm   *kadm.Client
	sel   *selection
	plan  *Plan
	jour  *journal
	other *journal // a journal of this backup and target with another strategy or cut
	bm    kadm.Metadata
	// batches caps the producer's record batches per topic at the
	// target's max.message.bytes (limits.go).
	batches *batchLimits
	// target state found by preflight
	targetStart map[string]map[int32]int64
	targetEnd   map[string]map[int32]int64
}

// journal is the restore's journal in the repository
// (format.RestoreJournal, repository.LoadJournal): which topics a restore
// of one backup into one target cluster created, so that running the same
// restore again resumes it instead of refusing the now non-empty topics
// (case 23).
type journal = format.RestoreJournal

func run(ctx context.Context, o Options) (*Report, error) {
	if o.Store == nil {
		return nil, errors.New("restore: no storage backend")
	}
	if o.Strategy == "" {
		o.Strategy = StrategyChangelog
	}
	if o.Strategy != StrategyChangelog && o.Strategy != StrategyRebuild {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("unknown strategy %q: use changelog or rebuild", o.Strategy)}}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	m, err := loadBackup(ctx, o.Store, o.BackupID)
	if err != nil {
		return nil, err
	}
	if o.ApplicationID != "" && m.ApplicationID != "" && o.ApplicationID != m.ApplicationID {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("backup %s is of application.id %q, the config says %q", m.BackupID, m.ApplicationID, o.ApplicationID)}}
	}
	sel, err := selectTopics(ctx, o.Store, m, &o)
	if err != nil {
		return nil, allDamage(ctx, o.Store, m, nil, err)
	}
	batches := &batchLimits{}
	cl, err := kgo.NewClient(append(slices.Clone(o.Target),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Produce is retried by time (produceTimeout), not by a count:
		// unlimited record retries, and an unanswered, in-flight idempotent
		// produce may be failed once the chunk's deadline has passed (a
		// resumed restore then finds what the broker did write).
		kgo.AllowIdempotentProduceCancellation(),
		kgo.MetadataMinAge(250*time.Millisecond), // see new topics quickly (waitLeaders)
		kgo.ProducerBatchMaxBytesFn(batches.get))...)
	if err != nil {
		return nil, fmt.Errorf("target cluster client: %w", err)
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "target cluster"); err != nil {
		return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
	}
	r := &restore{o: o, log: log, store: o.Store, cl: cl, adm: kadm.NewClient(cl), sel: sel, batches: batches,
		targetStart: map[string]map[int32]int64{}, targetEnd: map[string]map[int32]int64{}}
	if r.bm, err = r.adm.BrokerMetadata(ctx); err != nil {
		return nil, fmt.Errorf("connect to the target cluster: %w (%w)", err, ErrNothingWritten)
	}
	if !o.DryRun {
		// One restore at a time into a target cluster: two would both
		// find the same topics resumable and write every record twice.
		var rnd [4]byte
		rand.Read(rnd[:])
		lock, err := repository.AcquireLockWait(ctx, r.store, format.RestoreLockKey(r.bm.Cluster), "restore of backup "+m.BackupID, o.LockWait,
			func(msg string, args ...any) { log.Warn(msg, args...) })
		if err != nil {
			return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
		}
		defer lock.Release(ctx)
		// Prune takes the restore locks before it deletes anything: with
		// ours held, a backup whose manifest is still there keeps its
		// segments until we are done.
		if _, err := r.store.Stat(ctx, format.ManifestKey(m.BackupID)); errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: backup %s was pruned while this restore started", ErrNoBackup, m.BackupID)
		}
	}
	preflightStarted := time.Now()
	err = r.preflight(ctx)
	o.Observer.PhaseDone("preflight", time.Since(preflightStarted))
	err = allDamage(ctx, r.store, m, sel, err)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
	}
	rep := &Report{Plan: *r.plan, StartedAt: time.Now().UTC()}
	if o.DryRun || r.plan.Complete {
		return rep, nil
	}
	// Every object the restore reads is checked before the first write
	// (issue 9): damage found half-way would leave a half-restored target.
	precheckStarted := time.Now()
	err = precheck(ctx, r.store, sel)
	o.Observer.PhaseDone("precheck", time.Since(precheckStarted))
	if err != nil {
		return nil, fmt.Errorf("check the backup's segments before the first write: %w (%w)", err, ErrNothingWritten)
	}
	rep, err = r.restore(ctx, rep)
	if de, ok := errors.AsType[*DamageError](err); ok {
		de.BackupID, de.Written = m.BackupID, true // an object changed since the pre-check
	}
	return rep, err
}

// preflight builds the plan against the target and refuses, before any
// write, whatever would fail or silently change the data.
func (r *restore) preflight(ctx context.Context) error {
	o, sel, m := &r.o, r.sel, r.sel.m
	var refusals []string
	refuse := func(format string, args ...any) { refusals = append(refusals, fmt.Sprintf(format, args...)) }

	bm := r.bm
	plan := &Plan{BackupID: m.BackupID, ApplicationID: m.ApplicationID, Strategy: o.Strategy, ToTime: o.ToTime,
		TargetClusterID: bm.Cluster, TargetBrokers: len(bm.Brokers), Skipped: sel.skipped}
	r.plan = plan
	if len(bm.Brokers) == 0 {
		return fmt.Errorf("the target cluster reports no brokers")
	}
	if err := r.loadJournal(ctx, bm.Cluster); err != nil {
		return err
	}

	// Broker-level limits (one broker's full config, defaults included).
	bd := r.brokerDefaultsOf(ctx)

	names := make([]string, len(sel.topics))
	for i, t := range sel.topics {
		names[i] = t.Name
	}
	details, err := r.adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("list topics of the target cluster: %w", err)
	}
	var existing []string
	for _, n := range names {
		if d, ok := details[n]; ok && d.Err == nil {
			existing = append(existing, n)
		} else if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q on the target: %w", n, d.Err)
		}
	}
	existingConfigs := map[string]map[string]*string{}
	existingFull := map[string]map[string]kadm.Config{}
	if len(existing) > 0 {
		starts, err := r.listStarts(ctx, existing...)
		if err != nil {
			return fmt.Errorf("list log start offsets on the target: %w", err)
		}
		ends, err := r.listEnds(ctx, existing...)
		if err != nil {
			return fmt.Errorf("list end offsets on the target: %w", err)
		}
		starts.Each(func(lo kadm.ListedOffset) { setOff(r.targetStart, lo.Topic, lo.Partition, lo.Offset) })
		ends.Each(func(lo kadm.ListedOffset) { setOff(r.targetEnd, lo.Topic, lo.Partition, lo.Offset) })
		rcs, err := r.adm.DescribeTopicConfigs(ctx, existing...)
		if err != nil {
			return fmt.Errorf("describe topic configs on the target: %w", err)
		}
		for _, rc := range rcs {
			cs, full := map[string]*string{}, map[string]kadm.Config{}
			for _, c := range rc.Configs {
				cs[c.Key], full[c.Key] = c.Value, c
			}
			existingConfigs[rc.Name], existingFull[rc.Name] = cs, full
		}
	}

	var toCreate []*TopicPlan
	for _, t := range sel.topics {
		tp := TopicPlan{Topic: t.Name, Class: t.Class, SourceChangelog: t.SourceChangelog, Action: format.ActionCreate,
			Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}}
		if o.ReplicationFactor > 0 {
			tp.ReplicationFactor = o.ReplicationFactor
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

		effective := func(key string) *string {
			if cs, ok := existingConfigs[t.Name]; ok {
				return cs[key]
			}
			if v, ok := tp.Configs[key]; ok {
				return &v
			}
			return nil
		}
		if d, ok := details[t.Name]; ok && d.Err == nil {
			if len(d.Partitions) != t.Partitions {
				refuse("topic %q exists on the target with %d partitions; the backup has %d: records would land in other partitions (delete the topic, or restore into a cluster without it)", t.Name, len(d.Partitions), t.Partitions)
			}
			var held int64
			for p, end := range r.targetEnd[t.Name] {
				held += end - r.targetStart[t.Name][p]
			}
			switch {
			case r.jour != nil && r.jour.Topics[t.Name] == kafkaTopicID(d.ID):
				tp.Action = format.ActionResume
			case held > 0 && r.other != nil && r.other.Topics[t.Name] == kafkaTopicID(d.ID):
				refuse("topic %q on the target (%d records) was created by an earlier restore of this backup with strategy %s and cut %s: re-run that restore with the same --strategy and --to-time to resume it, or delete the topic", t.Name, held, r.other.Strategy, cutString(r.other.ToTime))
			case held > 0:
				refuse("topic %q on the target is not empty (%d records) and was not created by an earlier run of this restore: delete it or restore into another cluster", t.Name, held)
			default:
				tp.Action = format.ActionFill
				if a, b := effective("cleanup.policy"), t.Configs["cleanup.policy"].Value; a != nil && b != nil && !sameSet(*a, *b) {
					refuse("topic %q exists empty on the target with cleanup.policy=%s; the backup has %s", t.Name, *a, *b)
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
					if have := deref(existingConfigs[t.Name][k]); k != "cleanup.policy" && have != backedUp {
						plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q exists (empty) on the target with %s=%s; the backup has %s: the target's value is kept", t.Name, k, have, backedUp))
					}
					tp.Configs[k] = deref(existingConfigs[t.Name][k]) // the plan shows what the topic will have
				}
				// The same timestamp care as a created topic: LogAppendTime
				// would replace every record's timestamp with the restore
				// time, so the topic is CreateTime while the records go in.
				tp.FinalConfigs = nil
				if deref(existingConfigs[t.Name]["message.timestamp.type"]) == "LogAppendTime" {
					tp.PreConfigs = map[string]string{"message.timestamp.type": "CreateTime"}
					tp.FinalConfigs = map[string]string{"message.timestamp.type": "LogAppendTime"}
				}
			}
		} else {
			toCreate = append(toCreate, &tp)
			if v, ok := tp.Configs["min.insync.replicas"]; ok {
				if mir := parseInt64(&v, 1); int(mir) > tp.ReplicationFactor {
					if o.ReplicationFactor > 0 {
						tp.Configs["min.insync.replicas"] = fmt.Sprint(tp.ReplicationFactor)
						plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q: min.insync.replicas lowered from %d to %d to fit --replication-factor %d", t.Name, mir, tp.ReplicationFactor, tp.ReplicationFactor))
					} else {
						refuse("topic %q: min.insync.replicas=%d does not fit replication factor %d: pass --replication-factor N (min.insync.replicas is then capped at N)", t.Name, mir, tp.ReplicationFactor)
					}
				}
			}
			if tp.ReplicationFactor > len(bm.Brokers) {
				refuse("topic %q: replication factor %d does not fit the target's %d broker(s): pass --replication-factor N with N <= %d", t.Name, tp.ReplicationFactor, len(bm.Brokers), len(bm.Brokers))
			}
			if tp.ReplicationFactor < 1 {
				tp.ReplicationFactor = min(3, len(bm.Brokers))
			}
		}

		for pi := range t.PartitionCuts {
			p := &t.PartitionCuts[pi]
			cut := sel.cuts[t.Name][p.Partition]
			pp := PartitionPlan{Partition: p.Partition, Records: sel.records[t.Name][p.Partition], SourceEnd: p.EndOffset, CutAt: cut}
			if unread := format.UnreadRange(t.Name, p); unread != "" {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s are not in this backup (the backup could not read them: unread): the restored partition ends at %d; a later backup holds them", unread, p.EndOffset))
			}
			if tp.Action == format.ActionResume {
				pp.AlreadyThere = r.targetEnd[t.Name][p.Partition] - r.targetStart[t.Name][p.Partition]
				if pp.AlreadyThere > pp.Records {
					refuse("topic %q partition %d on the target holds %d records, more than the %d this restore writes: it is not this restore's", t.Name, p.Partition, pp.AlreadyThere, pp.Records)
				}
			}
			tp.PartitionPlans = append(tp.PartitionPlans, pp)
		}
		plan.Topics = append(plan.Topics, tp)
	}

	// The target accepts every topic as it will be created.
	validated := map[string]map[string]kadm.Config{}
	for _, tp := range toCreate {
		cfgs, why, err := r.validateCreate(ctx, tp)
		if err != nil {
			return err
		}
		validated[tp.Topic] = cfgs
		if why != "" {
			refuse("%s", why)
		}
	}

	// Every record fits the target's limits (limits.go).
	limitRefusals, err := r.checkLimits(ctx, plan, bd, existingFull, validated)
	if err != nil {
		return err
	}
	refusals = append(refusals, limitRefusals...)

	// The application.id group on the target must have no members.
	if m.Group != nil {
		groups, err := r.adm.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("list consumer groups on the target: %w", err)
		}
		g := &GroupPlan{GroupID: m.Group.GroupID}
		if lg, ok := groups[m.Group.GroupID]; ok {
			g.TargetState, g.TargetType = lg.State, lg.GroupType
			members := 0
			if dg, err := r.adm.DescribeGroups(ctx, m.Group.GroupID); err == nil {
				if d, ok := dg[m.Group.GroupID]; ok {
					members = len(d.Members)
					if g.TargetState == "" {
						g.TargetState = d.State
					}
				}
			}
			switch g.TargetState {
			case "Empty", "Dead", "":
			default:
				kind := "consumer group"
				if lg.GroupType == "streams" {
					kind = "streams group (KIP-1071)"
				}
				refuse("the %s %q on the target is %s with %d member(s): stop every instance of the application (and any consumer in that group) before restoring; offsets can only be reset on a group with no members",
					kind, m.Group.GroupID, g.TargetState, members)
			}
		}
		current := kadm.OffsetResponses{}
		if _, ok := groups[m.Group.GroupID]; ok {
			if current, err = r.adm.FetchOffsets(ctx, m.Group.GroupID); err != nil {
				return fmt.Errorf("read the committed offsets of group %q on the target: %w", m.Group.GroupID, err)
			}
		}
		pg, err := planOffsets(sel, o, func(t *format.Topic, p *format.Partition, committed int64) (int64, error) {
			n, err := countBelow(ctx, r.store, t.Name, p, committed, sel.cuts[t.Name][p.Partition])
			return r.targetStart[t.Name][p.Partition] + n, err
		}, func(topic string, p int32) int64 { return r.targetStart[topic][p] })
		if err != nil {
			return err
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
		plan.Group = g
	}
	plan.Complete = r.jour != nil && r.jour.Complete
	for _, tp := range plan.Topics {
		for _, pp := range tp.PartitionPlans {
			if tp.Action != format.ActionResume || pp.AlreadyThere != pp.Records {
				plan.Complete = false
			}
		}
	}
	if plan.Group != nil {
		for _, op := range plan.Group.Offsets {
			switch {
			case op.Action != format.OffsetCommit || op.Current < 0:
			case plan.Complete && r.jour.Committed[fmt.Sprintf("%s/%d", op.Topic, op.Partition)] != op.Current:
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q moved on %s/%d since this restore committed it (now %d): left as it is", plan.Group.GroupID, op.Topic, op.Partition, op.Current))
			case !plan.Complete && op.Current != op.Translated:
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("group %q has offset %d committed on %s/%d on the target: the restore overwrites it with %d", plan.Group.GroupID, op.Current, op.Topic, op.Partition, op.Translated))
			}
		}
	}
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
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("--to-time %s is before every record of the selected topics: nothing will be restored", o.ToTime.UTC().Format(time.RFC3339)))
	}
	if o.Strategy == StrategyRebuild {
		plan.Warnings = append(plan.Warnings, "rebuild: the application reprocesses its input from the start and emits its output records again; restored output topics will hold them twice, so their consumers must tolerate duplicates (or leave outputs out with --topics)")
	} else {
		restoredChangelog := false
		for _, tp := range plan.Topics {
			restoredChangelog = restoredChangelog || tp.Class == string(topicfilter.Changelog) || tp.SourceChangelog
		}
		hasChangelog := false
		for _, t := range m.Topics {
			hasChangelog = hasChangelog || t.Class == string(topicfilter.Changelog)
		}
		if hasChangelog && !restoredChangelog {
			plan.Warnings = append(plan.Warnings, "the changelog strategy without any of the application's changelogs: input offsets are restored past records whose state is not; use --strategy rebuild, or include the changelogs")
		}
	}
	if len(refusals) > 0 {
		return &RefusedError{Reasons: refusals}
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

func ptrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
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

func recordBytes(r *format.Record) int64 {
	n := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		n += int64(len(h.Key) + len(h.Value))
	}
	return n
}

func kafkaTopicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return fmt.Sprintf("%x", id[:])
}

func (r *restore) loadJournal(ctx context.Context, clusterID string) error {
	j, err := repository.LoadJournal(ctx, r.store, r.sel.m.BackupID, clusterID)
	if err != nil || j == nil {
		return err
	}
	if j.Strategy == r.o.Strategy && timesEqual(j.ToTime, r.o.ToTime) {
		r.jour = j
	} else {
		r.other = j
	}
	return nil
}

func cutString(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func configString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func (r *restore) saveJournal(ctx context.Context) error {
	r.jour.UpdatedAt = time.Now().UTC()
	return repository.SaveJournal(ctx, r.store, r.jour)
}

// restore writes: topics, records, final configs, offsets, report.
func (r *restore) restore(ctx context.Context, rep *Report) (*Report, error) {
	plan := r.plan
	if r.jour == nil {
		r.jour = &journal{BackupID: plan.BackupID, TargetClusterID: plan.TargetClusterID, Strategy: plan.Strategy, ToTime: plan.ToTime, Topics: map[string]string{}}
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	rep.RestoreID = format.NewBackupID(time.Now(), rnd)

	// 1. Topics.
	phase := time.Now()
	for i := range plan.Topics {
		tp := &plan.Topics[i]
		if tp.Action != format.ActionCreate {
			if err := r.applyPreConfigs(ctx, tp); err != nil {
				return nil, err
			}
			continue
		}
		resp, err := r.adm.CreateTopic(ctx, int32(tp.Partitions), int16(tp.ReplicationFactor), ptrs(tp.Configs), tp.Topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return nil, fmt.Errorf("create topic %q on the target: %w %s", tp.Topic, err, resp.ErrMessage)
		}
		r.jour.Topics[tp.Topic] = kafkaTopicID(resp.ID)
		if err := r.saveJournal(ctx); err != nil {
			return nil, err
		}
		for _, pp := range tp.PartitionPlans {
			setOff(r.targetStart, tp.Topic, pp.Partition, 0)
		}
	}
	r.log.Debug("topics created", "topics", len(r.jour.Topics))
	if err := r.waitReady(ctx); err != nil {
		return nil, err
	}
	r.log.Debug("every partition has a leader and answers")
	r.o.Observer.PhaseDone("topics", time.Since(phase))
	phase = time.Now()

	// 2. Records, many partitions at once.
	type job struct {
		tp *TopicPlan
		pp PartitionPlan
		t  *format.Topic
		p  *format.Partition
	}
	var jobs []job
	for i := range plan.Topics {
		tp := &plan.Topics[i]
		t := topicOf(r.sel, tp.Topic)
		for _, pp := range tp.PartitionPlans {
			for pi := range t.PartitionCuts {
				if t.PartitionCuts[pi].Partition == pp.Partition {
					jobs = append(jobs, job{tp, pp, t, &t.PartitionCuts[pi]})
				}
			}
		}
	}
	reports := make([]PartitionReport, len(jobs))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan int)
	for range min(r.o.Concurrency, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range queue {
				j := jobs[i]
				began := time.Now()
				pr, err := r.restorePartition(cctx, j.tp, j.pp, j.t, j.p)
				r.log.Debug("partition restored", "topic", j.tp.Topic, "partition", j.pp.Partition, "records", pr.Records, "took", time.Since(began))
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				reports[i] = pr
			}
		}()
	}
	for i := range jobs {
		select {
		case queue <- i:
		case <-cctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		return nil, first
	}
	r.log.Debug("records produced")
	r.o.Observer.PhaseDone("records", time.Since(phase))
	if err := r.checkEnds(ctx, reports); err != nil {
		return nil, err
	}
	rep.Partitions = reports
	for _, pr := range reports {
		rep.Records += pr.Records
		if pr.Class == string(topicfilter.Changelog) {
			rep.WipeState = true
		}
	}

	// 3. Final configs (LogAppendTime).
	for _, tp := range plan.Topics {
		if len(tp.FinalConfigs) == 0 {
			continue
		}
		var acs []kadm.AlterConfig
		for k, v := range tp.FinalConfigs {
			acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
		resp, err := r.adm.AlterTopicConfigs(ctx, acs, tp.Topic)
		if err == nil {
			for _, ar := range resp {
				if ar.Err != nil {
					err = ar.Err
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("set final configs %v of topic %q: %w", tp.FinalConfigs, tp.Topic, err)
		}
	}

	// 4. Group offsets, from the observed offset maps.
	if plan.Group != nil {
		phase = time.Now()
		if err := r.commitOffsets(ctx, rep); err != nil {
			return nil, err
		}
		r.o.Observer.PhaseDone("offsets", time.Since(phase))
	}
	r.jour.Complete = true
	r.jour.Committed = map[string]int64{}
	if plan.Group != nil {
		for _, op := range plan.Group.Offsets {
			if op.Action == format.OffsetCommit {
				r.jour.Committed[fmt.Sprintf("%s/%d", op.Topic, op.Partition)] = op.Translated
			}
		}
	}
	if err := r.saveJournal(ctx); err != nil {
		return nil, err
	}
	rep.Plan = *plan
	rep.FinishedAt = time.Now().UTC()
	if err := repository.SaveReport(ctx, r.store, rep); err != nil {
		return nil, err
	}
	r.log.Info("restore complete", "restore_id", rep.RestoreID, "backup_id", rep.BackupID, "records", rep.Records)
	return rep, nil
}

// checkEnds compares each restored partition's log end on the target with
// the end its offset map says: another producer writing during the restore
// would break the restored sequence and the offset translation (case 19 A4).
func (r *restore) checkEnds(ctx context.Context, reports []PartitionReport) error {
	var names []string
	for _, pr := range reports {
		if !slices.Contains(names, pr.Topic) {
			names = append(names, pr.Topic)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ends, err := r.listEnds(ctx, names...)
	if err != nil {
		return fmt.Errorf("check the end offsets of the restored topics: %w", err)
	}
	bad, err := endsMoved(reports, ends)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("another producer wrote to the restored topics during the restore (stop every writer, delete the topics and restore again): %s", strings.Join(bad, "; "))
	}
	return nil
}

func topicOf(sel *selection, name string) *format.Topic {
	for _, t := range sel.topics {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// waitLeaders waits until every partition of every planned topic has a
// leader on the target (case 05 A4): metadata right after CreateTopics can
// still miss partitions.
func (r *restore) waitLeaders(ctx context.Context) error {
	names := make([]string, len(r.plan.Topics))
	for i, tp := range r.plan.Topics {
		names[i] = tp.Topic
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ds, err := r.adm.ListTopics(ctx, names...)
		ready := err == nil
		if ready {
			for _, tp := range r.plan.Topics {
				d, ok := ds[tp.Topic]
				if !ok || d.Err != nil || len(d.Partitions) != tp.Partitions {
					ready = false
					break
				}
				for _, pd := range d.Partitions {
					if pd.Leader < 0 || pd.Err != nil {
						ready = false
					}
				}
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the target's topics have no leader for every partition after 60s (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restorePartition produces one partition's records in order to the same
// partition, skipping those a resumed restore finds on the target, and
// builds its offset map from the offsets the target assigned.
func (r *restore) restorePartition(ctx context.Context, tp *TopicPlan, pp PartitionPlan, t *format.Topic, p *format.Partition) (PartitionReport, error) {
	start := r.targetStart[tp.Topic][pp.Partition]
	pr := PartitionReport{Topic: tp.Topic, Partition: pp.Partition, Class: t.Class, SourceEnd: p.EndOffset, Map: &offsets.Map{NewEnd: start}}
	if t.SourceChangelog {
		pr.Class = string(topicfilter.Changelog)
	}
	cut := r.sel.cuts[tp.Topic][pp.Partition]
	var (
		batch  []*kgo.Record
		origs  []int64
		bytesN int
		i      int64
	)
	var lastExisting *kgo.Record
	if pp.AlreadyThere > 0 {
		rec, err := fetchOne(ctx, r.o.Target, tp.Topic, pp.Partition, start+pp.AlreadyThere-1)
		if err != nil {
			return pr, fmt.Errorf("resume topic %q partition %d: read the last restored record: %w", tp.Topic, pp.Partition, err)
		}
		lastExisting = rec
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// Nobody else may write to the partition: the restored sequence
		// and the offset map would break (the restore lock keeps other
		// restores out; this catches any other producer).
		end, err := r.endOffset(ctx, tp.Topic, pp.Partition)
		if err != nil {
			return err
		}
		if end != pr.Map.NewEnd {
			return fmt.Errorf("topic %q partition %d ends at %d, but this restore wrote up to %d: another producer is writing to it; stop it, delete the topic and restore again",
				tp.Topic, pp.Partition, end, pr.Map.NewEnd)
		}
		pctx, cancel := context.WithTimeout(ctx, r.produceTimeout())
		results := r.cl.ProduceSync(pctx, batch...)
		cancel()
		if err := results.FirstErr(); err != nil {
			return r.produceError(ctx, tp.Topic, pp.Partition, err)
		}
		for k, rec := range batch {
			if err := pr.Map.Add(origs[k], rec.Offset); err != nil {
				return fmt.Errorf("topic %q partition %d: %w", tp.Topic, pp.Partition, err)
			}
		}
		pr.Records += int64(len(batch))
		r.o.Observer.Restored(tp.Topic, pp.Partition, int64(len(batch)))
		batch, origs, bytesN = batch[:0], origs[:0], 0
		return nil
	}
	r.o.Observer.RestoreStart(tp.Topic, pp.Partition, pp.Records-pp.AlreadyThere)
	defer func() { r.o.Observer.RestoreEnd(tp.Topic, pp.Partition, pr.Records) }()
	err := eachRecord(ctx, r.store, tp.Topic, p, cut, func(rec *format.Record) error {
		defer func() { i++ }()
		if i < pp.AlreadyThere {
			if i == pp.AlreadyThere-1 && !sameRecord(rec, lastExisting) {
				return fmt.Errorf("resume topic %q partition %d: the target's record at offset %d is not the backup's record at original offset %d: the topic holds other data; delete it and restore again",
					tp.Topic, pp.Partition, start+i, rec.Offset)
			}
			return pr.Map.Add(rec.Offset, start+i)
		}
		kr := &kgo.Record{Topic: tp.Topic, Partition: pp.Partition, Key: rec.Key, Value: rec.Value, Timestamp: time.UnixMilli(rec.Timestamp)}
		if len(rec.Headers) > 0 {
			kr.Headers = make([]kgo.RecordHeader, len(rec.Headers))
			for h, hd := range rec.Headers {
				kr.Headers[h] = kgo.RecordHeader{Key: hd.Key, Value: hd.Value}
			}
		}
		batch = append(batch, kr)
		origs = append(origs, rec.Offset)
		bytesN += int(recordBytes(rec))
		if len(batch) >= produceChunk || bytesN >= produceBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return pr, err
	}
	pr.NewEnd = pr.Map.NewEnd
	if got := pr.Map.Records(); got != pp.Records {
		return pr, fmt.Errorf("topic %q partition %d: restored %d records, the plan says %d", tp.Topic, pp.Partition, got, pp.Records)
	}
	return pr, nil
}

// produceTimeout bounds the produce of one chunk of records: the target's
// retry budget plus one request, the same bound as every other Kafka call
// of the restore (DESIGN.md, "Every Kafka call is bounded").
func (r *restore) produceTimeout() time.Duration {
	request, retry := r.o.RequestTimeout, r.o.RetryTimeout
	if request <= 0 {
		request = defaultRequestTimeout
	}
	if retry <= 0 {
		retry = defaultRetryTimeout
	}
	return retry + request
}

// The defaults of Options.RequestTimeout and RetryTimeout
// (config.DefaultRequestTimeout and DefaultRetryTimeout).
const (
	defaultRequestTimeout = 30 * time.Second
	defaultRetryTimeout   = 2 * time.Minute
)

// produceError names the partition's leader on the target in a produce
// error. A chunk that ran out of time (ctx itself still live) is told as
// such, without the context's error: the restore failed, it was not
// cancelled.
func (r *restore) produceError(ctx context.Context, topic string, partition int32, err error) error {
	broker := r.leaderOf(ctx, topic, partition)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("produce to topic %q partition %d on broker %s: not acknowledged within %v (target.retry_timeout + target.request_timeout): the broker does not answer",
			topic, partition, broker, r.produceTimeout())
	}
	return fmt.Errorf("produce to topic %q partition %d on broker %s: %w", topic, partition, broker, err)
}

// leaderOf is "ID (host:port)" of the partition's leader on the target, as
// a fresh metadata request says (bounded by one request timeout), or as
// far as it is known.
func (r *restore) leaderOf(ctx context.Context, topic string, partition int32) string {
	request := r.o.RequestTimeout
	if request <= 0 {
		request = defaultRequestTimeout
	}
	mctx, cancel := context.WithTimeout(ctx, request)
	defer cancel()
	leader := int32(-1)
	if ds, err := r.adm.ListTopics(kadm.WithAuthorizedOps(mctx), topic); err == nil {
		if pd, ok := ds[topic].Partitions[partition]; ok {
			leader = pd.Leader
		}
	}
	for _, b := range r.bm.Brokers {
		if b.NodeID == leader {
			return fmt.Sprintf("%d (%s)", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
	}
	if leader >= 0 {
		return fmt.Sprintf("%d", leader)
	}
	var seeds []string
	for _, b := range r.bm.Brokers {
		seeds = append(seeds, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return "unknown, one of " + strings.Join(seeds, ",")
}

func sameRecord(a *format.Record, b *kgo.Record) bool {
	if b == nil || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) {
		return false
	}
	return a.Timestamp == kgotime.Millis(b.Timestamp) && len(a.Headers) == len(b.Headers)
}

// fetchOne reads the record at offset of one partition of the target.
func fetchOne(ctx context.Context, target []kgo.Opt, topic string, p int32, offset int64) (*kgo.Record, error) {
	cl, err := kgo.NewClient(append(slices.Clone(target),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("no record at offset %d: %w", offset, err)
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == offset && found == nil {
				found = r
			}
		})
		if found != nil {
			return found, nil
		}
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

// commitOffsets commits the planned offsets, translated with the offset
// maps observed while producing, through the group coordinator; checks
// every partition's error; reads them back and compares (case 17).
func (r *restore) commitOffsets(ctx context.Context, rep *Report) error {
	g := r.plan.Group
	maps := map[string]map[int32]*offsets.Map{}
	for _, pr := range rep.Partitions {
		if maps[pr.Topic] == nil {
			maps[pr.Topic] = map[int32]*offsets.Map{}
		}
		maps[pr.Topic][pr.Partition] = pr.Map
	}
	want := kadm.Offsets{}
	for i := range g.Offsets {
		op := &g.Offsets[i]
		if op.Action != format.OffsetCommit {
			continue
		}
		if r.o.Strategy == StrategyChangelog {
			m := maps[op.Topic][op.Partition]
			if m == nil {
				return fmt.Errorf("no offset map for topic %q partition %d", op.Topic, op.Partition)
			}
			if v := m.Translate(op.Committed); v != op.Translated {
				r.plan.Warnings = append(r.plan.Warnings, fmt.Sprintf("topic %q partition %d: committed %d translated to %d, the plan predicted %d", op.Topic, op.Partition, op.Committed, v, op.Translated))
				op.Translated = v
			}
		}
		want.AddOffset(op.Topic, op.Partition, op.Translated, -1)
	}
	if len(want) == 0 {
		rep.Committed = true
		return nil
	}
	resps, err := r.adm.CommitOffsets(ctx, g.GroupID, want)
	if err != nil {
		return fmt.Errorf("commit offsets of group %q on the target: %w", g.GroupID, err)
	}
	var failed []string
	resps.Each(func(or kadm.OffsetResponse) {
		if or.Err != nil {
			failed = append(failed, fmt.Sprintf("%s/%d: %v", or.Topic, or.Partition, or.Err))
		}
	})
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("commit offsets of group %q: %d partition(s) failed: %s", g.GroupID, len(failed), strings.Join(failed, "; "))
	}
	got, err := r.adm.FetchOffsets(ctx, g.GroupID)
	if err != nil {
		return fmt.Errorf("read back the offsets of group %q: %w", g.GroupID, err)
	}
	var diffs []string
	want.Each(func(o kadm.Offset) {
		gr, ok := got.Lookup(o.Topic, o.Partition)
		if !ok || gr.Err != nil || gr.At != o.At {
			diffs = append(diffs, fmt.Sprintf("%s/%d: committed %d, read back %d (%v)", o.Topic, o.Partition, o.At, gr.At, gr.Err))
		}
	})
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("offsets of group %q read back differ from what was committed: %s", g.GroupID, strings.Join(diffs, "; "))
	}
	rep.Committed = true
	return nil
}
