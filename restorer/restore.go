package restorer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// restore is one run of a restore: run builds it, preflight plans it
// (preflight.go), restore carries the plan out (produce.go, commit.go).
// Not safe for concurrent use, except restorePartition's, which only
// reads it.
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
	// preConfigsWere holds, per filled topic with pre-configs, those
	// configs as the target described them before any run of this
	// restore altered them: recorded in the journal (FilledConfigs)
	// before createTopics alters them.
	preConfigsWere map[string]map[string]format.TopicConfig
	// clientOpts are r.cl's options, which producerFor's clients share.
	clientOpts []kgo.Opt
	prodMu     sync.Mutex
	producers  map[string]*kgo.Client // by codec (compression.go)
	// shardRun is the run object of a sharded restore (shard.go), nil
	// when not sharded; lock the restore lock held.
	shardRun *format.RestoreShardRun
	lock     interface{ Finish() }
	// latestNote is the plan's first warning when "latest" resolved past
	// a newer backup that did not complete (repository.NewerUnfinished).
	latestNote string
}

// journal is the restore's journal in the repository
// (format.RestoreJournal, repository.LoadJournal): which topics a restore
// of one backup into one target cluster created, so that running the same
// restore again resumes it instead of refusing the now non-empty topics
// (docs/DOMAIN.md#field-case-23).
type journal = format.RestoreJournal

// run is Run: it loads the backup and selects its topics, connects to the
// target, takes the target's restore lock (not for a dry run), plans and
// checks (preflight), reads every segment it will restore (precheck, to
// o.Precheck's depth), and then restores. Errors before the first write wrap ErrNothingWritten (a
// *RefusedError stands as it is); damage is a *DamageError.
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
	if o.Precheck == "" {
		o.Precheck = PrecheckDigest
	}
	if o.Precheck != PrecheckDigest && o.Precheck != PrecheckDeep {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("unknown pre-check %q: use digest or deep", o.Precheck)}}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	var shardRun *format.RestoreShardRun
	if o.Shard != nil && !o.DryRun {
		var err error
		if shardRun, err = locateShardRun(ctx, &o, func(msg string, args ...any) { log.Info(msg, args...) }); err != nil {
			return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
		}
		if shardRun != nil {
			o.BackupID = shardRun.BackupID // the backup shard 0 resolved
		}
	}
	m, err := loadBackup(ctx, o.Store, o.BackupID)
	if err != nil {
		return nil, err
	}
	var latestNote string // a newer backup that did not complete, for "latest"
	if o.BackupID == "" || o.BackupID == "latest" {
		latestNote = repository.NewerUnfinished(ctx, o.Store, m.BackupID)
	}
	if o.ApplicationID != "" {
		// A backup taken without an application_id ("") is of another
		// application too (repository.SameApplication).
		if err := repository.SameApplication(m, o.ApplicationID); err != nil {
			return nil, &RefusedError{Reasons: []string{err.Error()}}
		}
	}
	// Every key the backup needs, before anything else: a dry run, which
	// may read no segment, must refuse what the restore would.
	if err := missingKeys(o.Store, m); err != nil {
		return nil, err
	}
	sel, err := selectTopics(ctx, o.Store, m, &o)
	if err != nil {
		return nil, allDamage(ctx, o.Store, m, nil, o.Precheck, err)
	}
	batches := &batchLimits{}
	clientOpts := append(slices.Clone(o.Target),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Produce is retried by time (produceTimeout), not by a count:
		// unlimited record retries, and an unanswered, in-flight idempotent
		// produce may be failed once the chunk's deadline has passed (a
		// resumed restore then finds what the broker did write).
		kgo.AllowIdempotentProduceCancellation(),
		kgo.MetadataMinAge(250*time.Millisecond), // see new topics quickly (waitLeaders)
		kgo.ProducerBatchMaxBytesFn(batches.get))
	cl, err := kgo.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("target cluster client: %w", err)
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "target cluster"); err != nil {
		return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
	}
	r := &restore{o: o, log: log, store: o.Store, cl: cl, adm: kadm.NewClient(cl), sel: sel, latestNote: latestNote, batches: batches, clientOpts: clientOpts,
		targetStart: map[string]map[int32]int64{}, targetEnd: map[string]map[int32]int64{}}
	defer r.closeProducers()
	if r.bm, err = r.adm.BrokerMetadata(ctx); err != nil {
		return nil, fmt.Errorf("connect to the target cluster: %w (%w)", err, ErrNothingWritten)
	}
	if !o.DryRun {
		// One restore at a time into a target cluster: two would both
		// find the same topics resumable and write every record twice.
		var rnd [4]byte
		rand.Read(rnd[:])
		logf := func(msg string, args ...any) { log.Warn(msg, args...) }
		var lock *repository.Lock
		if o.Shard != nil {
			// The shards of one run share it (like a sharded backup's).
			lock, err = repository.AcquireRunLockWait(ctx, r.store, format.RestoreLockKey(r.bm.Cluster), "sharded restore of backup "+m.BackupID, o.Shard.Run, o.LockWait, logf)
		} else {
			lock, err = repository.AcquireLockWait(ctx, r.store, format.RestoreLockKey(r.bm.Cluster), "restore of backup "+m.BackupID, o.LockWait, logf)
		}
		if err != nil {
			return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
		}
		r.lock = lock
		defer lock.Release(ctx)
		// Prune takes the restore locks before it deletes anything: with
		// ours held, a backup whose manifest is still there keeps its
		// segments until we are done.
		if _, err := r.store.Stat(ctx, format.ManifestKey(m.BackupID)); errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: backup %s was pruned while this restore started", ErrNoBackup, m.BackupID)
		}
	}
	preflightStarted := time.Now()
	r.plan, err = r.preflight(ctx)
	o.Observer.PhaseDone("preflight", time.Since(preflightStarted))
	err = allDamage(ctx, r.store, m, sel, o.Precheck, err)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
	}
	started := time.Now().UTC()
	if r.plan.Complete || (o.DryRun && !o.DryRunPrecheck) {
		return &Report{Plan: *r.plan, StartedAt: started}, nil
	}
	// Every object the restore reads is checked before the first write
	// (issue 9): damage found half-way would leave a half-restored target.
	// By default (PrecheckDigest) its bytes and header, not its records:
	// the restore's read checks those at each segment's trailer.
	precheckStarted := time.Now()
	err = precheck(ctx, r.store, sel, o.Precheck, shardOwns(o.Shard, shardRun))
	o.Observer.PhaseDone("precheck", time.Since(precheckStarted))
	if err != nil {
		if de, ok := errors.AsType[*DamageError](err); ok && shardRun != nil {
			de.RunWritten = true // shard 0 created the topics
		}
		return nil, fmt.Errorf("check the backup's segments before the first write: %w (%w)", err, ErrNothingWritten)
	}
	if o.DryRun {
		return &Report{Plan: *r.plan, StartedAt: started}, nil
	}
	var rep *Report
	if o.Shard != nil {
		if shardRun == nil { // shard 0 of a new run
			shardRun = r.newShardRun()
			if err := writeJSON(ctx, r.store, format.RestoreShardRunKey(o.Shard.Run), shardRun); err != nil {
				return nil, fmt.Errorf("%w (%w)", err, ErrNothingWritten)
			}
			log.Info("planned a sharded restore", "run", o.Shard.Run, "shards", o.Shard.Count, "backup_id", m.BackupID, "restore_id", shardRun.RestoreID)
		}
		r.shardRun = shardRun
		rep, err = r.restoreShard(ctx, started)
	} else {
		rep, err = r.restore(ctx, started)
	}
	if de, ok := errors.AsType[*DamageError](err); ok {
		de.BackupID, de.Written = m.BackupID, true // an object changed since the pre-check, or records it did not decode
		for i := range de.Damaged {
			de.Damaged[i].InFlight = sel.inFlight[de.Damaged[i].Topic]
		}
	}
	return rep, err
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

// restore writes, in this order: the topics (createTopics), the records
// (restoreRecords, then checkEnds), the final configs, the group's offsets
// (commitOffsets), the completed journal and the report, which it returns.
// r.plan is preflight's plan and stays as it is; the report holds the plan
// as carried out (its offsets as committed, with the commit's warnings).
// started is when the restore began (RestoreReport.StartedAt).
func (r *restore) restore(ctx context.Context, started time.Time) (*Report, error) {
	plan := r.plan
	if r.jour == nil {
		r.jour = &journal{BackupID: plan.BackupID, TargetClusterID: plan.TargetClusterID, Strategy: plan.Strategy, ToTime: plan.ToTime, Topics: map[string]string{}}
	}
	// A resumed restore keeps the restore id of the run it resumes (the
	// journal's restore_id): its report has one key, whichever run
	// writes it, and a run killed after the report, before the journal
	// says complete, is finished by the next under the same id. Any other
	// run is a new restore with a new id (issue 15: a fresh cluster with
	// the first target's cluster id adopted the first restore's id).
	resumes, err := r.resumesJournal(ctx)
	if err != nil {
		return nil, err
	}
	if !resumes {
		r.jour.RestoreID = newRestoreID()
		r.jour.Complete = false
	}
	rep := &Report{RestoreID: r.jour.RestoreID, StartedAt: started}

	phase := time.Now()
	if err := r.createTopics(ctx); err != nil {
		return nil, err
	}
	r.o.Observer.PhaseDone("topics", time.Since(phase))

	phase = time.Now()
	reports, err := r.restoreRecords(ctx)
	if err != nil {
		return nil, err
	}
	r.log.Debug("records produced")
	r.o.Observer.PhaseDone("records", time.Since(phase))
	if err := r.checkEnds(ctx, reports); err != nil {
		return nil, err
	}
	// The state each changelog encodes is read back and proven equal to
	// the backup's (restorer/digest.go); a difference is reported after
	// the report is saved.
	digestErr := r.checkStateDigests(ctx, reports)
	if _, ok := errors.AsType[*StateDigestError](digestErr); digestErr != nil && !ok {
		return nil, digestErr
	}
	return r.complete(ctx, rep, reports, digestErr)
}

// resumesJournal reports whether this run resumes the restore r.jour
// records, and so keeps its restore id: the journal has one, some topic it
// created or began to fill is on the target under the topic id it
// recorded (TopicAction "resume", or a resumed fill), and the restore is
// not complete or is complete without its report (a run killed between
// the two). A journal whose topics are not the target's (a fresh cluster
// with the same cluster id) or whose restore is complete with its report
// is an earlier restore: this run is a new one. An error reading the
// report's key other than storage.ErrNotFound is returned.
func (r *restore) resumesJournal(ctx context.Context) (bool, error) {
	if r.jour.RestoreID == "" {
		return false, nil
	}
	onTarget := false
	for _, tp := range r.plan.Topics {
		if tp.Action == format.ActionResume || tp.Resumed {
			onTarget = true
			break
		}
	}
	if !onTarget {
		return false, nil
	}
	if !r.jour.Complete {
		return true, nil
	}
	key := format.RestoreReportKey(r.jour.RestoreID)
	_, err := r.store.Stat(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read restore report %s: %w", key, err)
	}
	return false, nil
}

// newRestoreID is a new restore id: its start time and 4 random bytes.
func newRestoreID() string {
	var rnd [4]byte
	rand.Read(rnd[:])
	return format.NewBackupID(time.Now(), rnd)
}

// complete finishes restore rep once every partition's records are in
// (reports, every partition of the plan): the final configs, the group's
// configs and offsets (none when digestErr: the restored state differs),
// the completed journal and the saved report, which it returns.
func (r *restore) complete(ctx context.Context, rep *Report, reports []PartitionReport, digestErr error) (*Report, error) {
	plan := r.plan
	var phase time.Time
	rep.Partitions = reports
	for _, pr := range reports {
		rep.Records += pr.Records
		if pr.Class == string(topicfilter.Changelog) {
			rep.WipeState = true
		}
	}

	if err := r.setFinalConfigs(ctx); err != nil {
		return nil, err
	}

	done := *plan
	switch {
	case plan.Group != nil && digestErr != nil:
		// The application must not start on a state that differs as if
		// it were restored: no offset is committed.
		done.Warnings = append(slices.Clone(plan.Warnings), fmt.Sprintf("the offsets of group %q were not committed: the restored state differs from the backup's", plan.Group.GroupID))
	case plan.Group != nil:
		phase = time.Now()
		// The group's configs first: the application finds them when it
		// joins (streams.num.standby.replicas, session timeouts).
		if err := r.setGroupConfigs(ctx, plan.Group.GroupID, plan.Group.Configs); err != nil {
			return nil, err
		}
		committed, warnings, err := r.commitOffsets(ctx, plan.Group, reports)
		if err != nil {
			return nil, err
		}
		g := *plan.Group
		g.Offsets = committed
		done.Group = &g
		done.Warnings = append(slices.Clone(plan.Warnings), warnings...)
		rep.Committed = true
		r.o.Observer.PhaseDone("offsets", time.Since(phase))
	}
	// A state that differs leaves the journal incomplete: running the
	// same restore again checks again, and never finds it complete.
	r.jour.Complete = digestErr == nil
	r.jour.Committed = map[string]int64{}
	if done.Group != nil {
		for _, op := range done.Group.Offsets {
			if op.Action == format.OffsetCommit {
				r.jour.Committed[fmt.Sprintf("%s/%d", op.Topic, op.Partition)] = op.Translated
			}
		}
	}
	// The report before the journal that says complete: a run killed
	// between the two is completed again by the next run, which writes
	// the report under the same restore id; the other order left a
	// complete restore without a report for good (the crash loop on S3
	// found it).
	rep.Plan = done
	rep.FinishedAt = time.Now().UTC()
	// A report already stored under the id is this restore's, written
	// by the run this one resumes (a restore whose state check failed,
	// run again): it is kept as it is (a scorecard may be bound to its
	// bytes); this run's report, what this run did, is returned.
	if err := repository.SaveReport(ctx, r.store, rep); err != nil && !errors.Is(err, repository.ErrReportExists) {
		return nil, err
	}
	if err := r.saveJournal(ctx); err != nil {
		return nil, err
	}
	if digestErr != nil {
		r.log.Error("restore failed: the restored state differs from the backup's", "restore_id", rep.RestoreID, "backup_id", rep.BackupID, "err", digestErr)
		return rep, digestErr
	}
	r.log.Info("restore complete", "restore_id", rep.RestoreID, "backup_id", rep.BackupID, "records", rep.Records)
	return rep, nil
}
