package drill

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// drill is the state one Run carries from phase to phase.
type drill struct {
	o        Options
	rep      *Report
	manifest *format.Manifest
	restored *restorer.Report

	app         *appProcess // the application started by app-running
	appClient   *kgo.Client // its group is read through this client
	appDeadline time.Time   // the start of the application + App.Timeout
}

// tailsIncluded is the clause that says a count of topics includes n
// in-flight tails of repartition topics: "" for none.
func tailsIncluded(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", in-flight tails of %s included", plural(int64(n), "repartition topic", "repartition topics"))
}

// interrupted is the Error of the phase a cancelled drill was in.
const interrupted = "interrupted"

// phaseFunc runs one phase: an error fails it, and so does any problem it
// adds to p.
type phaseFunc func(ctx context.Context, p *Phase) error

func run(ctx context.Context, o Options) (*Report, error) {
	d := &drill{o: o, rep: &Report{
		Repository: o.Store.Location(), ApplicationID: o.Restore.ApplicationID,
		Strategy: o.Restore.Strategy, ToTime: o.Restore.ToTime, Phases: []Phase{},
	}}
	if d.rep.ApplicationID == "" {
		d.rep.ApplicationID = o.Backup.ApplicationID
	}
	if d.rep.Strategy == "" {
		d.rep.Strategy = restorer.StrategyChangelog
	}
	type step struct {
		name string
		fn   phaseFunc
	}
	var steps []step
	if o.BackupID == "" {
		steps = append(steps, step{PhaseBackup, d.backup})
	}
	steps = append(steps,
		step{PhasePlan, d.restorePlan},
		step{PhaseVerifyRepository, d.verifyRepository},
		step{PhaseRestore, d.restore},
		step{PhaseVerifyCluster, d.verifyCluster},
		step{PhaseVerifyOffsets, d.verifyOffsets},
	)
	if o.App != nil {
		steps = append(steps, step{PhaseAppRunning, d.appRunning}, step{PhaseAppCaughtUp, d.appCaughtUp})
	}
	// The application is stopped whatever happens: a failed phase, a
	// cancelled ctx (SIGINT of the drill), a panic.
	defer d.stopApp()

	d.rep.StartedAt = time.Now()
	d.rep.LostAt = d.rep.StartedAt
	failed := false
	for _, s := range steps {
		p := Phase{Name: s.name, Status: StatusSkipped}
		if !failed {
			p.StartedAt = time.Now()
			o.Logger.Info("drill phase starting", "phase", s.name)
			err := s.fn(ctx, &p)
			p.Duration = Duration(time.Since(p.StartedAt))
			if err != nil {
				p.Error = err.Error()
				if ctx.Err() != nil {
					p.Error = interrupted
				}
				p.Locked = errors.Is(err, backup.ErrLocked) || errors.Is(err, restorer.ErrLocked)
				p.Transient = storage.IsTransient(err)
				_, damagedSegments := errors.AsType[*restorer.DamageError](err)
				p.Damaged = errors.Is(err, repository.ErrDamaged) || damagedSegments
				p.OtherApplication = errors.Is(err, repository.ErrOtherApplication)
				p.NoBackup = errors.Is(err, repository.ErrNoBackup)
			}
			if err != nil || len(p.Problems) > 0 {
				p.Status, failed = StatusFailed, true
			} else {
				p.Status = StatusPassed
			}
			attrs := []any{"phase", s.name, "status", p.Status, "duration", time.Duration(p.Duration).Round(time.Millisecond).String()}
			if p.Status == StatusFailed {
				attrs = append(attrs, "error", p.Error, "problems", p.Problems)
			}
			o.Logger.Info("drill phase finished", attrs...)
		}
		end := p.StartedAt.Add(time.Duration(p.Duration))
		switch {
		case s.name == PhaseBackup && p.OK():
			d.rep.LostAt = end
		case s.name == PhaseVerifyCluster && p.OK():
			d.rep.RTO = Duration(end.Sub(d.rep.StartedAt))
			d.rep.RTODataRestored = Duration(end.Sub(d.rep.LostAt))
		case s.name == PhaseAppRunning && p.OK():
			d.rep.RTOAppRunning = Duration(d.rep.App.RunningAt.Sub(d.rep.LostAt))
		case s.name == PhaseAppCaughtUp && p.OK():
			d.rep.RTOAppCaughtUp = Duration(d.rep.App.CaughtUpAt.Sub(d.rep.LostAt))
		}
		if !d.rep.CutAt.IsZero() {
			d.rep.RPO = Duration(max(0, d.rep.LostAt.Sub(d.rep.CutAt)))
		}
		d.rep.Phases = append(d.rep.Phases, p)
		if o.OnPhase != nil {
			o.OnPhase(p)
		}
	}
	d.stopApp()
	d.app, d.appClient = nil, nil
	d.rep.FinishedAt = time.Now()
	d.rep.OK = !failed
	if err := ctx.Err(); err != nil {
		d.rep.Interrupted, d.rep.OK = true, false
		return d.rep, err
	}
	d.record(ctx)
	return d.rep, nil
}

// record stores the drill's measurements in the repository
// (format.DrillReport) once it has read its backup's manifest; a write
// that fails is a warning, not a failed drill.
func (d *drill) record(ctx context.Context) {
	if d.o.NoRecord || d.manifest == nil {
		return
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	d.rep.DrillID = format.NewBackupID(d.rep.StartedAt, rnd)
	fr := &format.DrillReport{
		DrillID: d.rep.DrillID, ApplicationID: d.rep.ApplicationID, BackupID: d.rep.BackupID, RestoreID: d.rep.RestoreID,
		Strategy: d.rep.Strategy, StartedAt: d.rep.StartedAt, LostAt: d.rep.LostAt, FinishedAt: d.rep.FinishedAt, OK: d.rep.OK,
		RecordsRestored: d.rep.Volume.RecordsRestored,
	}
	seconds := func(reached bool, v Duration) *float64 {
		if !reached {
			return nil
		}
		s := recordedSeconds(v)
		return &s
	}
	fr.RTODataRestored = seconds(d.rep.RTODataRestoredReached(), d.rep.RTODataRestored)
	fr.RTOAppRunning = seconds(d.rep.RTOAppRunningReached(), d.rep.RTOAppRunning)
	fr.RTOAppCaughtUp = seconds(d.rep.RTOAppCaughtUpReached(), d.rep.RTOAppCaughtUp)
	fr.RPO = seconds(d.rep.RPOKnown(), d.rep.RPO)
	fr.Topics, fr.Partitions, fr.Bytes = d.rep.Volume.Topics, d.rep.Volume.Partitions, d.rep.Volume.Bytes
	if d.rep.App != nil {
		fr.GroupType = d.rep.App.GroupType
	}
	if d.restored != nil {
		for _, pr := range d.restored.Partitions {
			if pr.Class == string(topicfilter.Changelog) {
				fr.ChangelogRecords += pr.Records
			}
		}
		fr.InputRecords = fr.RecordsRestored - fr.ChangelogRecords
	}
	if err := repository.SaveDrillReport(ctx, d.o.Store, fr); err != nil {
		d.rep.Warnings = append(d.rep.Warnings, fmt.Sprintf("drill: its measurements are not recorded in the repository (estimate will not use them): %v", err))
		return
	}
	d.rep.DrillReportKey = format.DrillReportKey(fr.DrillID)
}

// backup takes a new backup of the source into the repository.
func (d *drill) backup(ctx context.Context, p *Phase) error {
	bo := d.o.Backup
	bo.Store = d.o.Store
	if bo.Logger == nil {
		bo.Logger = d.o.Logger
	}
	res, err := backup.Run(ctx, bo)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	d.rep.SourceKafkaVersion = kafkaVersion(ctx, bo.Source)
	d.rep.BackupID, d.rep.BackupTaken = res.BackupID, true
	d.rep.Volume.BackupRecords, d.rep.Volume.BackupBytes = res.Records, res.Bytes
	d.addWarnings("backup", res.Warnings)
	// Records count the in-flight tails' records, so the topics and
	// partitions count the tails too, as the report's Volume does.
	p.Detail = fmt.Sprintf("%s copied from %s (%s)%s, %d bytes stored",
		plural(res.Records, "record", "records"), plural(int64(res.Topics+res.InFlightTopics), "topic", "topics"),
		plural(int64(res.Partitions+res.InFlightPartitions), "partition", "partitions"), tailsIncluded(res.InFlightTopics), res.Bytes)
	if res.ParentID != "" {
		p.Detail += fmt.Sprintf("; incremental after backup %s", res.ParentID)
	}
	return nil
}

// load reads the backup's manifest.
func (d *drill) load(ctx context.Context) error {
	id := d.rep.BackupID
	if id == "" {
		id = d.o.BackupID
	}
	m, err := repository.Manifest(ctx, d.o.Store, id)
	if err != nil {
		// The report names the backup whose manifest does not read: the
		// latest one resolved from the index, or the id asked for.
		if le, ok := errors.AsType[*repository.LatestError](err); ok {
			d.rep.BackupID = le.BackupID
		} else if errors.Is(err, repository.ErrDamaged) && format.ValidBackupID(id) {
			d.rep.BackupID = id
		}
		return err
	}
	d.manifest = m
	d.rep.BackupID, d.rep.CutAt = m.BackupID, m.CutAt
	if d.rep.ApplicationID == "" {
		d.rep.ApplicationID = m.ApplicationID
	}
	if !d.rep.BackupTaken {
		d.addWarnings("backup", m.Warnings)
	}
	v := &d.rep.Volume
	// The backup's in-flight tails are restored like its topics
	// (docs/DOMAIN.md#in-flight): they count in its volume.
	all := slices.Concat(m.Topics, m.InFlight)
	v.Topics, v.InFlightTopics = len(all), len(m.InFlight)
	for _, t := range all {
		v.Partitions += len(t.PartitionCuts)
		for _, pc := range t.PartitionCuts {
			v.Records += pc.Records
			v.Segments += len(pc.Segments)
			for _, s := range pc.Segments {
				v.Bytes += s.Size
			}
		}
	}
	return nil
}

// restorePlan loads the manifest and runs the restore's preflight on the
// drill target (a dry run), so a target that cannot take the restore, or
// conflicting flags, fail before verify-repository and the restore's
// pre-check read every segment in full. The dry run decodes only the
// segments whose statistics say a record may break a target limit.
func (d *drill) restorePlan(ctx context.Context, p *Phase) error {
	if err := d.load(ctx); err != nil {
		return err
	}
	ro := d.o.Restore
	ro.Store, ro.BackupID, ro.DryRun = d.o.Store, d.manifest.BackupID, true
	if ro.Logger == nil {
		ro.Logger = d.o.Logger
	}
	plan, err := restorer.Run(ctx, ro)
	var re *restorer.RefusedError
	if errors.As(err, &re) {
		p.Refused, p.Problems, p.RefusalHint = true, re.Reasons, re.Hint
		p.TargetNotNew = d.targetHoldsApplication(ctx)
		return errors.New("restore refused: nothing was written to the drill target")
	}
	if err != nil {
		return fmt.Errorf("restore plan: %w", err)
	}
	if reasons := notEmpty(&plan.Plan); len(reasons) > 0 {
		p.Refused, p.TargetNotNew, p.Problems = true, true, reasons
		return errors.New("restore refused: nothing was written to the drill target")
	}
	d.rep.TargetKafkaVersion = kafkaVersion(ctx, d.o.Restore.Target)
	var recs int64
	for _, t := range plan.Topics {
		for _, pp := range t.PartitionPlans {
			recs += pp.Records
		}
	}
	p.Detail = fmt.Sprintf("the drill target can take %s into %s", plural(recs, "record", "records"), plural(int64(len(plan.Topics)), "topic", "topics"))
	return nil
}

// verifyRepository checks every segment the backup's manifest names.
func (d *drill) verifyRepository(ctx context.Context, p *Phase) error {
	m := d.manifest
	res, err := verify.Repository(ctx, d.o.Store, m, !d.o.Shallow)
	if err != nil {
		return fmt.Errorf("verify backup %s: %w", m.BackupID, err)
	}
	for _, pr := range res.Problems {
		p.Problems = append(p.Problems, pr.String())
	}
	p.Detail = fmt.Sprintf("%s, %d bytes: sizes and SHA-256", plural(int64(res.Segments), "segment", "segments"), res.Bytes)
	if res.Deep {
		p.Detail += fmt.Sprintf(", %s decoded", plural(res.Records, "record", "records"))
	}
	return nil
}

// restore checks that the drill target does not hold the application yet
// (a dry run), then restores into it.
func (d *drill) restore(ctx context.Context, p *Phase) error {
	ro := d.o.Restore
	ro.Store, ro.BackupID = d.o.Store, d.manifest.BackupID
	if ro.Logger == nil {
		ro.Logger = d.o.Logger
	}
	var re *restorer.RefusedError
	ro.DryRun = false
	smp := newSampler(ro.Observer, p.StartedAt)
	ro.Observer = smp
	rep, err := restorer.Run(ctx, ro)
	samples, restoredBytes := smp.finish(time.Now())
	if len(samples) > 1 {
		d.rep.RestoreProgress = samples
	}
	if errors.As(err, &re) {
		p.Refused, p.Problems, p.RefusalHint = true, re.Reasons, re.Hint
		p.TargetNotNew = d.targetHoldsApplication(ctx)
		return errors.New("restore refused: nothing was written to the drill target")
	}
	if _, ok := errors.AsType[*restorer.StateDigestError](err); ok && rep != nil {
		d.rep.RestoreID = rep.RestoreID
		d.rep.States = reportStates(rep)
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	d.restored = rep
	d.rep.RestoreID, d.rep.WipeState, d.rep.Strategy = rep.RestoreID, rep.WipeState, rep.Strategy
	d.addWarnings("restore", rep.Warnings)
	var parts int
	for _, t := range rep.Topics {
		parts += len(t.PartitionPlans)
		for _, pp := range t.PartitionPlans {
			d.rep.Volume.RecordsRestored += pp.Records
		}
	}
	d.rep.Partitions = d.restoredPartitions(rep, restoredBytes)
	if g := rep.Group; g != nil {
		d.rep.GroupID = g.GroupID
		for _, op := range g.Offsets {
			d.rep.Offsets = append(d.rep.Offsets, Offset{Topic: op.Topic, Partition: op.Partition, Committed: op.Committed,
				Translated: op.Translated, OnTarget: -1, Action: op.Action, Note: op.Note, NeverCommitted: op.NeverCommitted})
		}
	}
	p.Detail = fmt.Sprintf("%s into %s (%s)", plural(d.rep.Volume.RecordsRestored, "record", "records"),
		plural(int64(len(rep.Topics)), "topic", "topics"), plural(int64(parts), "partition", "partitions"))
	if len(rep.Skipped) > 0 {
		p.Detail += fmt.Sprintf("; %s not restored", plural(int64(len(rep.Skipped)), "topic", "topics"))
	}
	return nil
}

// notEmpty lists what the drill target already holds of the application:
// topics the restore would fill or resume instead of create, and committed
// offsets of its group. A drill restores into a new cluster; anything
// already there would be verified instead of the restore.
func notEmpty(plan *restorer.Plan) []string {
	var reasons []string
	if plan.Complete {
		reasons = append(reasons, fmt.Sprintf("backup %s was already restored into the drill target by an earlier run", plan.BackupID))
	}
	for _, t := range plan.Topics {
		switch t.Action {
		case format.ActionCreate:
		case format.ActionResume:
			reasons = append(reasons, fmt.Sprintf("topic %q was created on the drill target by an earlier restore of this backup: a drill restores into a new cluster", t.Topic))
		default:
			reasons = append(reasons, fmt.Sprintf("topic %q already exists on the drill target (the restore would %s it): a drill restores into a new cluster", t.Topic, t.Action))
		}
	}
	if g := plan.Group; g != nil {
		var held []string
		for _, op := range g.Offsets {
			if op.Current >= 0 {
				held = append(held, fmt.Sprintf("%s/%d", op.Topic, op.Partition))
			}
		}
		if len(held) > 0 {
			reasons = append(reasons, fmt.Sprintf("group %q already has offsets committed on the drill target (%s)", g.GroupID, strings.Join(held, ", ")))
		}
	}
	return reasons
}

// targetHoldsApplication reports whether the drill target holds one of
// the backup's topics or committed offsets of its group: a restorer's
// refusal on such a target is that the target is not new, and any other
// (KAFKA-20254, --to-time, a strategy) is not. A target that cannot be
// asked is not said to hold it.
func (d *drill) targetHoldsApplication(ctx context.Context) bool {
	if d.manifest == nil {
		return false
	}
	cl, err := kgo.NewClient(d.o.Restore.Target...)
	if err != nil {
		return false
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := make([]string, 0, len(d.manifest.Topics))
	for _, t := range d.manifest.Topics {
		names = append(names, t.Name)
	}
	if len(names) > 0 {
		if td, err := adm.ListTopics(ctx, names...); err == nil {
			for _, t := range td {
				if t.Err == nil {
					return true
				}
			}
		}
	}
	if g := d.manifest.Group; g != nil {
		if fetched, err := adm.FetchOffsets(ctx, g.GroupID); err == nil && fetched.Error() == nil {
			held := false
			fetched.Each(func(o kadm.OffsetResponse) { held = held || (o.Err == nil && o.At >= 0) })
			return held
		}
	}
	return false
}

// verifyCluster compares every restored partition on the target with the
// backup, up to the restore's cut.
func (d *drill) verifyCluster(ctx context.Context, p *Phase) error {
	topics := make([]string, 0, len(d.restored.Topics))
	cuts := map[string]map[int32]int64{}
	for _, t := range d.restored.Topics {
		topics = append(topics, t.Topic)
		cuts[t.Topic] = map[int32]int64{}
		for _, pp := range t.PartitionPlans {
			cuts[t.Topic][pp.Partition] = pp.CutAt
		}
	}
	cut := func(topic string, partition int32) int64 {
		if c, ok := cuts[topic][partition]; ok {
			return c
		}
		return -1
	}
	res, err := verify.AgainstCluster(ctx, d.o.Store, d.manifest, d.o.Restore.Target, topics, cut)
	if err != nil {
		return fmt.Errorf("compare the drill target with backup %s: %w", d.manifest.BackupID, err)
	}
	d.rep.Volume.RecordsVerified = res.Records
	d.rep.States = verify.Stores(res.States)
	for _, pr := range res.Problems {
		p.Problems = append(p.Problems, pr.String())
	}
	if len(p.Problems) == 0 && res.Records != d.rep.Volume.RecordsRestored {
		p.Problems = append(p.Problems, fmt.Sprintf("compared %s on the target, the restore reports %s",
			plural(res.Records, "record", "records"), plural(d.rep.Volume.RecordsRestored, "record", "records")))
	}
	p.Detail = fmt.Sprintf("%s in %s equal to the backup, field for field", plural(res.Records, "record", "records"), plural(int64(len(topics)), "topic", "topics"))
	return nil
}

// verifyOffsets reads the group's committed offsets back from the target
// and compares them with the restore's plan.
func (d *drill) verifyOffsets(ctx context.Context, p *Phase) error {
	g := d.restored.Group
	if g == nil {
		p.Detail = "the backup holds no group offsets"
		return nil
	}
	cl, err := kgo.NewClient(d.o.Restore.Target...)
	if err != nil {
		return err
	}
	defer cl.Close()
	fetched, err := kadm.NewClient(cl).FetchOffsets(ctx, g.GroupID)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return fmt.Errorf("read the committed offsets of group %q from the drill target: %w", g.GroupID, err)
	}
	commits := 0
	for i := range d.rep.Offsets {
		op := &d.rep.Offsets[i]
		got, ok := fetched.Lookup(op.Topic, op.Partition)
		if ok && got.Err == nil && got.At >= 0 {
			op.OnTarget = got.At
		}
		tp := fmt.Sprintf("group %q %s/%d", g.GroupID, op.Topic, op.Partition)
		switch {
		case op.Action == format.OffsetCommit && op.OnTarget < 0:
			p.Problems = append(p.Problems, fmt.Sprintf("%s: not committed on the target; the restore's plan says %d", tp, op.Translated))
		case op.Action == format.OffsetCommit && op.OnTarget != op.Translated:
			p.Problems = append(p.Problems, fmt.Sprintf("%s: committed %d on the target; the restore's plan says %d", tp, op.OnTarget, op.Translated))
		case op.Action != format.OffsetCommit && op.OnTarget >= 0:
			p.Problems = append(p.Problems, fmt.Sprintf("%s: committed %d on the target; the restore's plan drops it", tp, op.OnTarget))
		}
		if op.Action == format.OffsetCommit {
			commits++
		}
	}
	if commits > 0 && !d.restored.Committed {
		p.Problems = append(p.Problems, fmt.Sprintf("group %q: the restore did not commit its offsets (see the restore's warnings)", g.GroupID))
	}
	p.Detail = fmt.Sprintf("%s of group %s equal to the plan", plural(int64(commits), "offset", "offsets"), g.GroupID)
	if dropped := len(d.rep.Offsets) - commits; dropped > 0 {
		p.Detail += fmt.Sprintf(", %d dropped as planned", dropped)
	}
	return nil
}

func (d *drill) addWarnings(from string, ws []string) {
	for _, w := range ws {
		d.rep.Warnings = append(d.rep.Warnings, from+": "+w)
	}
}

// plural returns "1 record" or "2 records".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// reportStates is the per store state check of a restore's report (its
// partitions' state_digest_result), for a drill whose restore found a state
// that differs.
func reportStates(rep *restorer.Report) []verify.StoreSummary {
	source := map[string]bool{}
	for _, t := range rep.Topics {
		source[t.Topic] = t.SourceChangelog
	}
	var states []verify.StoreState
	for _, pr := range rep.Partitions {
		if pr.StateDigestResult == "" || pr.StateDigestResult == format.StateDigestCut {
			continue
		}
		states = append(states, verify.StoreState{Store: verify.StoreName(rep.ApplicationID, pr.Topic, source[pr.Topic]),
			Topic: pr.Topic, Partition: pr.Partition, Result: pr.StateDigestResult, Target: pr.StateDigest})
	}
	return verify.Stores(states)
}

// restoredPartitions are the restore's partitions with the backup's
// offsets and stored bytes of each, and the bytes the sampler counted.
func (d *drill) restoredPartitions(rep *restorer.Report, restoredBytes map[topicPartition]int64) []RestoredPartition {
	backed := map[topicPartition]*format.Partition{}
	for _, t := range slices.Concat(d.manifest.Topics, d.manifest.InFlight) {
		for i := range t.PartitionCuts {
			backed[topicPartition{t.Name, t.PartitionCuts[i].Partition}] = &t.PartitionCuts[i]
		}
	}
	out := make([]RestoredPartition, 0, len(rep.Partitions))
	for _, pr := range rep.Partitions {
		tp := topicPartition{pr.Topic, pr.Partition}
		rp := RestoredPartition{Topic: pr.Topic, Partition: pr.Partition, Class: pr.Class, Records: pr.Records,
			Bytes: restoredBytes[tp], OldEnd: pr.SourceEnd, NewStart: pr.NewEnd, NewEnd: pr.NewEnd, State: pr.StateDigestResult}
		if pr.Map != nil && len(pr.Map.Runs) > 0 {
			rp.NewStart = pr.Map.Runs[0].New
		}
		if bp := backed[tp]; bp != nil {
			rp.OldStart = bp.StartOffset
			for _, s := range bp.Segments {
				rp.StoredBytes += s.Size
			}
		}
		out = append(out, rp)
	}
	return out
}

// kafkaVersion is the Kafka version of the cluster opts reach, as franz-go
// guesses it from the first broker's ApiVersions that answers within 10
// seconds; "" when none does. Best effort: a report field, never a failure.
func kafkaVersion(ctx context.Context, opts []kgo.Opt) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return ""
	}
	defer cl.Close()
	vs, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		return ""
	}
	for _, v := range vs.Sorted() {
		if v.Err == nil {
			return v.VersionGuess()
		}
	}
	return ""
}
