package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgolog"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Defaults of Options.
const (
	DefaultSegmentMaxBytes = 64 << 20
	DefaultConcurrency     = 4
	DefaultRetryTimeout    = 2 * time.Minute
	// DefaultToolVersion is the tool_version a manifest records when
	// Options.ToolVersion is empty: a build without a version.
	DefaultToolVersion = "dev"
)

// alwaysKeptConfigs are recorded in the manifest even when they have their
// default value: a restore must reproduce them (docs/DOMAIN.md#field-case-08).
var alwaysKeptConfigs = []string{"cleanup.policy", "retention.ms", "min.insync.replicas", "max.message.bytes", "message.timestamp.type"}

type runner struct {
	o     Options
	log   *slog.Logger
	cl    *kgo.Client
	adm   *kadm.Client
	store storage.Backend
	lock  *repository.Lock

	mu       sync.Mutex // guards m and result counters
	m        *format.Manifest
	warnings []string // warnings that are not about the manifest's backup
	// topologyWarning is appTopology's warning ("" when none): a
	// selection warning, in the manifest and the result.
	topologyWarning string
	// previous is the latest complete backup of the application (the
	// parent, also of a full backup); nil when there is none.
	previous *format.Manifest
	// unrestorable counts, per topic, the records this run copied that a
	// restore will refuse: timestamps outside what the restore's producer
	// can send, and null keys (refused on compacted topics). See
	// warnUnrestorable.
	unrestorable map[string]*unrestorable
	// undigested holds the changelog partitions ("topic/partition") whose
	// state digest is not recorded: a segment of their chain is damaged.
	undigested map[string]bool
	progress   chan struct{}
	result     Result
	// dirSyncs holds the directory fsyncs the segment puts left pending
	// (a directory backend): done before a progress manifest or the
	// manifest names the segments (syncSegments).
	dirSyncs *storage.DirSyncs

	metaMu  sync.Mutex
	leader  map[string]map[int32]int32
	ids     map[string]kadm.TopicID
	brokers map[int32]string // node id -> host:port, from the latest metadata

	// tailTopics names the in-flight topics of the cut, whose tails end at
	// the high watermark (set before takeCut; see hiddenCommit).
	tailTopics map[string]bool
}

// cutHook, when set by a test (SetCutHook), is called at each step of
// taking the cut.
var cutHook func(step string)

// progressInterval is the least time between the starts of two progress
// manifest writes during the copy; a write also waits progressCostFactor
// times as long as the previous one took, so that progress takes at most
// about a tenth of the writer's time however large the manifest or slow
// the store. Segments completed meanwhile are named by the next write
// (docs/DESIGN.md invariant 6; a kill loses at most that much copying,
// never a record: resume reads unnamed segments' records again).
var progressInterval = 250 * time.Millisecond

const progressCostFactor = 9

type work struct {
	topic     string
	partition int32
	cut       *format.Partition // inside r.m; guarded by r.mu
	from, end int64
	inFlight  bool // the partition is an in-flight tail (r.m.InFlight)
	// digest accumulates the partition's state digest, for changelog
	// partitions (nil otherwise); only the goroutine copying w uses it.
	digest *statedigest.Digester
}

func run(ctx context.Context, o Options) (*Result, error) {
	res, phase, err := runPhases(ctx, o)
	if err != nil && phase != "" && !errors.Is(err, context.Canceled) {
		err = &PhaseError{Phase: phase, Err: err}
	}
	return res, err
}

func runPhases(ctx context.Context, o Options) (_ *Result, phase Phase, _ error) {
	if o.Store == nil && o.OpenStore == nil {
		return nil, "", errors.New("backup: no storage backend")
	}
	if o.SegmentMaxBytes <= 0 {
		o.SegmentMaxBytes = DefaultSegmentMaxBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	switch o.SegmentKind {
	case "", format.KindRecord, format.KindBatch:
	default:
		return nil, "", fmt.Errorf("backup: segment kind %q is not record or batch (backup.segment_kind)", o.SegmentKind)
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = DefaultRetryTimeout
	}
	if o.ToolVersion == "" {
		o.ToolVersion = DefaultToolVersion
	}
	if _, err := format.ParseCompressionLevel(string(o.CompressionLevel)); err != nil {
		return nil, "", fmt.Errorf("backup: %w", err)
	}
	if o.CutAttempts <= 0 {
		o.CutAttempts = DefaultCutAttempts
	}
	if o.CutTimeout <= 0 {
		o.CutTimeout = DefaultCutTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	// The patterns are checked before any request (SelectTopics uses them).
	if _, err := topicfilter.NewFilter(o.Include, o.Exclude); err != nil {
		return nil, "", err
	}
	cl, err := kgo.NewClient(append(slices.Clone(o.Source), kgolog.Opt(log))...)
	if err != nil {
		return nil, PhaseCluster, fmt.Errorf("source cluster client: %w", err)
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "source cluster"); err != nil {
		return nil, PhaseCluster, err
	}
	r := &runner{o: o, log: log, cl: cl, adm: kadm.NewClient(cl), store: o.Store,
		progress: make(chan struct{}, 1), dirSyncs: storage.NewDirSyncs(), leader: map[string]map[int32]int32{}, ids: map[string]kadm.TopicID{}, brokers: map[int32]string{}}

	if r.o.Topology, r.topologyWarning, err = appTopology(ctx, r.adm, o, log); err != nil {
		return nil, PhaseCluster, err
	}
	r.o.topologyResolved = true // SelectTopics does not describe the group again
	o = r.o
	// The selection is accepted before the first write (the lock, and for
	// a directory backend the directory): a refused backup leaves the
	// repository as it was. newCut selects again under the lock.
	if pre, err := SelectTopics(ctx, r.adm, o, nil); err != nil {
		return nil, PhaseCluster, fmt.Errorf("source cluster %s: %w", seedsOf(cl), err)
	} else if err := acceptSelection(o, pre.Decisions); err != nil {
		return nil, "", err
	}
	if o.Store == nil {
		if o.Store, err = o.OpenStore(ctx); err != nil {
			return nil, PhaseRepository, err
		}
		r.o.Store, r.store = o.Store, o.Store
	}

	selection := &format.Selection{Include: o.Include, Exclude: o.Exclude, SourceChangelogTopics: o.SourceChangelogTopics, AllowMissing: o.AllowMissingTopics,
		DeadLetterQueueTopics: o.DeadLetterTopics, AllowTopologyMismatch: o.AllowTopologyMismatch,
		SchemaRegistryTopic: o.SchemaRegistryTopic}
	if o.Topology != nil {
		selection.TopologyFrom, selection.TopologySHA256 = o.Topology.From, o.Topology.SHA256()
	}
	// A shard finds its run before it writes anything (shards 1..N-1 wait
	// for shard 0's cut): a shard of another N or config is refused with
	// the repository as it was.
	var sr shardRun
	if o.Shard != nil {
		if err := ValidateShard(o.Shard); err != nil {
			return nil, "", err
		}
		if sr, err = locateShardRun(ctx, r.store, o.Shard, o.ApplicationID, selection, func(msg string, args ...any) { log.Info(msg, args...) }); err != nil {
			if errors.Is(err, ErrShardMismatch) || errors.Is(err, ErrShardCutMissing) || errors.Is(err, context.Canceled) {
				return nil, "", err
			}
			return nil, PhaseRepository, err
		}
		if sr.complete != "" {
			log.Info("the sharded run is complete already: nothing to copy", "backup_id", sr.complete, "run", o.Shard.Run, "shard", o.Shard.Index)
			r.result.BackupID, r.result.Manifest, r.result.ShardAlreadyComplete = sr.complete, format.ManifestKey(sr.complete), true
			r.result.Warnings = append(r.result.Warnings, fmt.Sprintf("run %q completed already as backup %s: nothing was copied; a new backup needs a new --shard-run (in a Kubernetes Indexed Job, each Job's controller uid)", o.Shard.Run, sr.complete))
			return &r.result, "", nil
		}
	}

	var rnd [4]byte
	rand.Read(rnd[:])
	runID := format.NewBackupID(time.Now(), rnd)
	owner, shareRun := "backup run "+runID, ""
	if o.Shard != nil {
		owner, shareRun = fmt.Sprintf("sharded backup run %s", o.Shard.Run), o.Shard.Run
	}
	r.lock, err = repository.AcquireRunLockWait(ctx, r.store, format.LockKey, owner, shareRun, o.LockWait, func(msg string, args ...any) { log.Warn(msg, args...) })
	if err != nil {
		return nil, PhaseRepository, err
	}
	defer r.lock.Release(ctx)

	// What is left of runs that died is cleaned up by the lock's first
	// holder only: other shards of a sharded run write beside it, so a
	// shard removes only what is older than any write of a live one
	// (storage.Filesystem.RemoveStaleTemps: "well above the longest Put").
	staleAge := time.Duration(0)
	if o.Shard != nil {
		staleAge = time.Hour
	}
	if a, ok := r.store.(interface {
		AbortStaleUploads(context.Context, time.Duration) (int, error)
	}); ok && !r.lock.Joined() {
		// We hold the lock: every multipart upload in progress under the
		// prefix belongs to a run that died (docs/DOMAIN.md#field-case-24 A3).
		if n, err := a.AbortStaleUploads(ctx, staleAge); err != nil {
			log.Warn("could not abort leftover multipart uploads", "err", err)
		} else if n > 0 {
			log.Info("aborted leftover multipart uploads of an interrupted run", "uploads", n)
		}
	}

	if c, ok := r.store.(interface {
		RemoveStaleTemps(context.Context, string, time.Duration) (int, error)
	}); ok && !r.lock.Joined() {
		// Under the lock, every temporary file below segments/ and
		// backups/ belongs to a run that died (only the lock holder writes
		// there). The root is left alone: other runs write their lock
		// attempts there.
		for _, dir := range []string{"segments", "backups"} {
			if n, err := c.RemoveStaleTemps(ctx, dir, staleAge); err != nil {
				log.Warn("could not remove leftover temporary files", "dir", dir, "err", err)
			} else if n > 0 {
				log.Info("removed temporary files of an interrupted run", "dir", dir, "files", n)
			}
		}
	}

	scan, err := r.scanRepository(ctx)
	if err != nil {
		return nil, PhaseRepository, err
	}
	r.previous = scan.parent // before a full backup forgets it: the selection still reads it (keepPreviousOutputs)
	if o.Full && scan.parent != nil {
		log.Info("full backup: a new chain that names no earlier backup's segments", "previous", scan.parent.BackupID)
		scan.parent = nil
	}
	if scan.resume != nil && !scan.resume.Selection.Equal(selection) {
		what := fmt.Sprintf("other filters than the config's now (then vs now: %s)", strings.Join(scan.resume.Selection.Differences(selection), "; "))
		if rs := scan.resume.Selection; rs != nil && rs.TopologySHA256 != selection.TopologySHA256 {
			what = fmt.Sprintf("another topology (%s) than now (%s)", topologyName(rs), topologyName(selection))
		}
		r.warnings = append(r.warnings, fmt.Sprintf("interrupted backup %s chose its topics with %s; starting a new backup instead of resuming it (its segments are left unreferenced)", scan.resume.BackupID, what))
		log.Warn(r.warnings[len(r.warnings)-1])
		scan.resume = nil
	}
	if scan.resume != nil && scan.resume.ShardRun != nil && (o.Shard == nil || scan.resume.ShardRun.Run != o.Shard.Run) {
		rs := scan.resume.ShardRun
		r.warnings = append(r.warnings, fmt.Sprintf("interrupted backup %s is sharded run %q of %d shards; starting a new backup instead of resuming it (its segments are left unreferenced): to finish it, run its shards again with --shard I/%d --shard-run %s", scan.resume.BackupID, rs.Run, rs.Shards, rs.Shards, rs.Run))
		log.Warn(r.warnings[len(r.warnings)-1])
		scan.resume = nil
	}
	cutStarted := time.Now()
	var todo []*work
	shardDone := false // this shard had finished its partitions before
	switch {
	case o.Shard != nil && sr.cut != nil:
		todo, shardDone, err = r.joinShardCut(ctx, sr.cut)
		if err == nil && r.m.ParentBackupID != "" && (scan.parent == nil || scan.parent.BackupID != r.m.ParentBackupID) {
			// The state digests of unchanged chains come from the cut's parent.
			scan.parent, err = repository.LoadManifest(ctx, r.store, format.ManifestKey(r.m.ParentBackupID))
		}
	case o.Shard != nil:
		todo, err = r.shardCut(ctx, format.NextBackupID(time.Now(), scan.latestID, rnd), scan.parent, selection)
	case scan.resume != nil:
		if r.topologyWarning != "" { // the resumed manifest has its own selection's warnings
			r.warnings = append(r.warnings, r.topologyWarning)
		}
		log.Info("resuming interrupted backup", "backup_id", scan.resume.BackupID)
		r.m = scan.resume
		r.result.Resumed = true
		todo, err = r.resumeWork(ctx)
	default:
		id := format.NextBackupID(time.Now(), scan.latestID, rnd)
		todo, err = r.newCut(ctx, id, scan.parent, selection)
	}
	if err != nil {
		if errors.Is(err, ErrNothingSelected) || errors.Is(err, ErrShardMismatch) {
			return nil, "", err
		}
		return nil, PhaseCluster, fmt.Errorf("source cluster %s: %w", seedsOf(cl), err)
	}
	r.digestWork(todo)
	o.Observer.PhaseDone("cut", time.Since(cutStarted))
	for _, w := range todo {
		o.Observer.Planned(w.topic, w.partition, w.from, w.end)
	}
	r.result.BackupID, r.result.ParentID = r.m.BackupID, r.m.ParentBackupID
	for _, t := range r.m.Topics {
		r.result.Topics++
		r.result.Partitions += len(t.PartitionCuts)
	}
	// The cut is durable before the first record is copied: a resumed run
	// finishes this same cut.
	if err := r.writeProgress(ctx); err != nil {
		return nil, PhaseRepository, err
	}

	// The writer stops when the copy ends, but a write in flight then is
	// finished, not cancelled (only the run's ctx cancels it): S3 may act
	// on a PUT its client gave up on, after the delete of progress.json
	// below, leaving it beside the manifest.
	stopProgress := make(chan struct{})
	progDone := make(chan struct{})
	go func() { defer close(progDone); r.progressWriter(ctx, stopProgress) }()
	copyStarted := time.Now()
	err = r.copyAll(ctx, todo)
	o.Observer.PhaseDone("copy", time.Since(copyStarted))
	close(stopProgress)
	<-progDone
	if err != nil {
		if pe := r.writeProgress(context.WithoutCancel(ctx)); pe != nil {
			log.Warn("could not record progress", "err", pe)
		}
		return &r.result, PhaseCopy, err
	}
	if err := r.lock.Check(ctx); err != nil {
		return &r.result, PhaseManifest, err
	}
	r.warnUnrestorable()
	r.result.InFlightTopics, r.result.InFlightRecords = len(r.m.InFlight), r.m.InFlightRecords()
	for _, t := range r.m.InFlight {
		r.result.InFlightPartitions += len(t.PartitionCuts)
	}
	if !shardDone {
		if err := r.setStateDigests(ctx, todo, parentCuts(scan.parent)); err != nil {
			return &r.result, PhaseManifest, err
		}
	}
	if o.Shard != nil {
		if err := r.finishShard(ctx, shardDone); err != nil {
			return &r.result, PhaseManifest, err
		}
		r.result.Warnings = append(r.warnings, r.m.Warnings...)
		log.Info("shard finished", "backup_id", r.m.BackupID, "run", o.Shard.Run, "shard", o.Shard.Index, "shards", o.Shard.Count,
			"records", r.result.Records, "bytes", r.result.Bytes, "shards_pending", fmt.Sprint(r.result.ShardsPending))
		return &r.result, "", nil
	}
	manifestStarted := time.Now()
	defer func() { o.Observer.PhaseDone("manifest", time.Since(manifestStarted)) }()
	r.m.State = format.StateComplete
	r.m.FinishedAt = time.Now().UTC()
	r.m.Encryption = r.encryption()
	b, err := r.m.Marshal()
	if err != nil {
		return &r.result, PhaseManifest, err
	}
	key := format.ManifestKey(r.m.BackupID)
	if err := r.syncSegments(); err != nil {
		return &r.result, PhaseManifest, fmt.Errorf("write manifest %s: %w", key, err)
	}
	if err := r.store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return &r.result, PhaseManifest, fmt.Errorf("write manifest %s: %w", key, err)
	}
	if err := r.store.Delete(ctx, format.ProgressKey(r.m.BackupID)); err != nil {
		log.Warn("could not delete progress manifest", "key", format.ProgressKey(r.m.BackupID), "err", err)
	}
	r.result.Manifest = key
	r.result.Warnings = append(r.warnings, r.m.Warnings...)
	if n := len(r.result.Unread); n > 0 {
		log.Warn("backup partial: some partitions were not read to the captured end; the next backup reads the rest", "backup_id", r.m.BackupID,
			"unread_partitions", n, "records", r.result.Records, "bytes", r.result.Bytes)
	} else {
		topics, partitions := r.result.Counts()
		log.Info("backup complete", "backup_id", r.m.BackupID, "topics", topics, "partitions", partitions,
			"records", r.result.Records, "bytes", r.result.Bytes, "in_flight_topics", r.result.InFlightTopics,
			"in_flight_partitions", r.result.InFlightPartitions, "in_flight_records", r.result.InFlightRecords)
	}
	return &r.result, "", nil
}

// acceptSelection returns ErrNothingSelected, naming the topology or the
// include patterns (and the excludes that removed included topics), when
// decisions select no topic; nil otherwise.
func acceptSelection(o Options, decisions []topicfilter.Decision) error {
	if slices.ContainsFunc(decisions, func(d topicfilter.Decision) bool { return d.Selected }) {
		return nil
	}
	if len(o.Include) == 0 {
		return fmt.Errorf("%w: the topology (%s) names no topic that exists on the source cluster and can be backed up", ErrNothingSelected, o.Topology.From)
	}
	if ex := topicfilter.DescribeExclusions(decisions); ex != "" {
		return fmt.Errorf("%w: the include patterns %q match no topic that can be backed up on the source cluster; in source.topics.exclude, %s", ErrNothingSelected, o.Include, ex)
	}
	return fmt.Errorf("%w: the include patterns %q match no topic that can be backed up on the source cluster", ErrNothingSelected, o.Include)
}

// keepPreviousOutputs selects, among decisions, the topics that the
// previous backup (r.previous) holds with role output or dead-letter and
// that a topology without outputs (AppTopology.OutputsKnown false: a
// streams group's topology without its KIP-1331 describe() text, as after
// a broker restart without group.streams.topology.description.plugin.class
// or before the members resend it) left unselected, when no include is
// set: they keep their role and are backed up, so that an incremental
// backup does not silently lose the application's outputs. A topic gone
// from the cluster, broker-internal, another application's or removed by
// an exclude pattern is not kept. It returns the warning naming them and
// the previous backup ("" when none was kept).
func (r *runner) keepPreviousOutputs(decisions []topicfilter.Decision) string {
	o, prev := r.o, r.previous
	if prev == nil || o.Topology == nil || o.Topology.OutputsKnown || len(o.Include) > 0 {
		return ""
	}
	roles := map[string]string{}
	for _, t := range prev.Topics {
		if t.Role == topicfilter.RoleOutput || t.Role == topicfilter.RoleDeadLetter {
			roles[t.Name] = t.Role
		}
	}
	excl, err := topicfilter.NewFilter([]string{"*"}, o.Exclude)
	if err != nil || len(roles) == 0 {
		return ""
	}
	var kept []string
	for i := range decisions {
		d := &decisions[i]
		role, ok := roles[d.Topic]
		if !ok || d.Selected || d.BrokerInternal || d.OtherApplicationID != "" || !excl.Match(d.Topic) {
			continue
		}
		what := "an output"
		if role == topicfilter.RoleDeadLetter {
			what = "a dead-letter queue topic"
		}
		d.Selected, d.Role, d.Class = true, role, topicfilter.External
		d.Reason = fmt.Sprintf("selected: %s in backup %s; the streams group's topology names no outputs now (no KIP-1331 description on the brokers)", what, prev.BackupID)
		kept = append(kept, strconv.Quote(d.Topic))
	}
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("the topology (%s) names no outputs now, so %s, which backup %s holds as outputs, are backed up again as outputs: "+
		"set group.streams.topology.description.plugin.class on the brokers (KIP-1331), give a topology file, or include them with source.topics.include",
		o.Topology.From, strings.Join(kept, ", "), prev.BackupID)
}

// seedsOf names the client's seed brokers, host:port joined by commas, for
// errors: a cluster that does not answer is named by the endpoints tried.
func seedsOf(cl *kgo.Client) string {
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	return strings.Join(seeds, ",")
}

// repoScan is what a run finds in the repository.
type repoScan struct {
	parent   *format.Manifest // the latest complete backup
	resume   *format.Manifest // an interrupted run newer than parent
	latestID string           // the greatest backup id, complete or not
}

// scanRepository finds, on one listing of backups/ (repository.Index),
// the latest readable complete backup (the parent: damaged ones are passed
// over with a warning, a storage failure fails the run), the interrupted
// run newer than it (to resume), and the greatest backup id. Either being
// of another application.id fails the run with an
// *repository.ApplicationError (Index.Parent, Index.Resumable), before
// anything is written.
func (r *runner) scanRepository(ctx context.Context) (repoScan, error) {
	var scan repoScan
	x, err := repository.ReadIndex(ctx, r.store)
	if err != nil {
		return scan, err
	}
	scan.latestID = x.LatestID()
	parentID, parent, warnings, err := x.Parent(ctx, r.o.ApplicationID)
	for _, w := range warnings {
		r.warnings = append(r.warnings, w)
		r.log.Warn(w)
	}
	if err != nil {
		return scan, err
	}
	scan.parent = parent
	_, resume, err := x.Resumable(ctx, parentID, r.o.ApplicationID)
	if err != nil {
		return scan, err
	}
	scan.resume = resume
	return scan, nil
}

// kafkaTopicID formats a topic id like Kafka's Uuid.toString (base64url,
// no padding).
func kafkaTopicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// newCut reads the group offsets, then the partitions' start and end offsets
// (in that order, docs/DOMAIN.md#consistent-cut), and builds the manifest of a new run.
func (r *runner) newCut(ctx context.Context, id string, parent *format.Manifest, selection *format.Selection) ([]*work, error) {
	o := r.o
	sel, err := SelectTopics(ctx, r.adm, o, r.log)
	if err != nil {
		return nil, err
	}
	details, configs, groups, classifier := sel.Details, sel.Configs, sel.Groups, sel.Classifier
	decisions, warnings := sel.Decisions, sel.Warnings
	if r.topologyWarning != "" {
		warnings = append([]string{r.topologyWarning}, warnings...)
	}
	if w := r.keepPreviousOutputs(decisions); w != "" {
		// It replaces the warning that no output is backed up.
		warnings = append(slices.DeleteFunc(slices.Clone(warnings), func(s string) bool { return s == noOutputsWarning(o.Topology) }), w)
	}
	for _, w := range warnings {
		r.log.Warn(w)
	}
	r.result.Decisions = decisions
	var selected []topicfilter.Decision
	for _, d := range decisions {
		if d.Selected {
			selected = append(selected, d)
		} else {
			r.log.Debug("topic not backed up", "topic", d.Topic, "class", d.Class, "reason", d.Reason)
		}
	}
	if err := acceptSelection(o, decisions); err != nil {
		return nil, err
	}

	m := &format.Manifest{
		Format: format.FormatName, FormatVersion: format.Version, State: format.StateRunning,
		BackupID: id, SourceClusterID: o.SourceClusterID, ApplicationID: o.ApplicationID,
		ToolVersion: o.ToolVersion, StartedAt: time.Now().UTC(), Warnings: warnings, Selection: selection,
	}
	r.m = m
	if parent != nil {
		m.ParentBackupID = parent.BackupID
	}
	if bm, err := r.adm.BrokerMetadata(ctx); err == nil {
		m.KafkaClusterID = bm.Cluster
		r.setBrokers(bm.Brokers)
	}

	// The cut: the group's committed offsets and every partition's ends,
	// proven consistent with the application's transactions (cut.go).
	var readGroup func(context.Context) (*format.Group, error)
	if o.ApplicationID != "" {
		readGroup = func(ctx context.Context) (*format.Group, error) {
			return r.readGroup(ctx, groups, classifier)
		}
	}
	// The cut also covers the internal topics whose tails are in flight
	// (the application's repartition and foreign-key topics).
	inflight := inFlightTopics(decisions, o.ApplicationID)
	topics := make([]string, 0, len(selected)+len(inflight))
	for _, d := range selected {
		topics = append(topics, d.Topic)
	}
	r.tailTopics = map[string]bool{}
	for _, d := range inflight {
		topics = append(topics, d.Topic)
		r.tailTopics[d.Topic] = true
	}
	for _, t := range topics {
		r.setMeta(details[t]) // the cut reads some partitions from their leaders
	}
	cut, err := r.takeCut(ctx, topics, readGroup)
	if err != nil {
		return nil, err
	}
	m.Group, m.Cut = cut.group, &cut.proof
	switch {
	case m.Group != nil && m.Group.Type == format.GroupTypeShare:
		r.warn(fmt.Sprintf("group %q (the application.id) is a share group (KIP-932), not a Kafka Streams application's: its offsets and configs are not read, and a restore leaves it alone", o.ApplicationID))
	case m.Group != nil:
		if len(m.Group.Offsets) == 0 {
			r.warn(fmt.Sprintf("group %q has no committed offsets: a restore will have no positions to translate", o.ApplicationID))
		}
		m.Group.Configs = r.readGroupConfigs(ctx, o.ApplicationID)
	}
	starts, ends, hws := cut.starts, cut.ends, cut.hws
	m.CutAt = cut.at

	parentTopics := map[string]*format.Topic{}
	if parent != nil {
		for i := range parent.Topics {
			parentTopics[parent.Topics[i].Name] = &parent.Topics[i]
		}
	}
	var todo []*work
	for _, d := range selected {
		det := details[d.Topic]
		t := r.topicOf(d, det, configs[d.Topic])
		pt := parentTopics[d.Topic]
		if pt != nil && pt.TopicID != t.TopicID {
			r.warn(fmt.Sprintf("topic %q was recreated (topic id %s, previously %s): its backup chain starts again at the log start", d.Topic, t.TopicID, pt.TopicID))
			pt = nil
		}
		t.PartitionCuts = make([]format.Partition, 0, len(det.Partitions))
		for _, p := range det.Partitions.Numbers() {
			so, _ := starts.Lookup(d.Topic, p)
			eo, _ := ends.Lookup(d.Topic, p)
			hw, _ := hws.Lookup(d.Topic, p)
			cut := format.Partition{Partition: p, LogStartOffset: so.Offset, HighWatermark: hw.Offset,
				StartOffset: so.Offset, EndOffset: eo.Offset, Segments: []format.Segment{}}
			from := so.Offset
			if pp := findPartition(pt, p); pp != nil {
				cut.StartOffset, cut.Records = pp.StartOffset, pp.Records
				cut.Gaps = slices.Clone(pp.Gaps)
				cut.Segments = slices.Clone(pp.Segments)
				from = pp.EndOffset
				switch {
				case from < so.Offset:
					cut.Gaps = append(cut.Gaps, format.Gap{From: from, To: so.Offset, BackupID: id,
						Reason: "deleted by retention or DeleteRecords before it was backed up"})
					r.warn(fmt.Sprintf("topic %q partition %d: offsets %d..%d were deleted by the broker before a backup read them: back up more often than the topic's retention",
						d.Topic, p, from, so.Offset-1))
					r.result.NewGaps++
					from = so.Offset
				case from > eo.Offset:
					r.warn(fmt.Sprintf("topic %q partition %d: end offset %d is below the previous backup's end %d (log truncated, e.g. by an unclean leader election); the earlier records are kept",
						d.Topic, p, eo.Offset, from))
					cut.EndOffset = from
				}
			}
			t.PartitionCuts = append(t.PartitionCuts, cut)
			if from < cut.EndOffset {
				todo = append(todo, &work{topic: d.Topic, partition: p, from: from, end: cut.EndOffset})
			}
		}
		m.Topics = append(m.Topics, t)
	}
	todo = append(todo, r.inFlightCut(inflight, details, configs, starts, ends, hws)...)
	r.bindWork(todo)
	return todo, nil
}

// readGroup reads the committed offsets of the application.id group, each
// classified (repartition offsets cannot be restored); groups are the
// cluster's listed groups, for the group's state and type.
func (r *runner) readGroup(ctx context.Context, groups kadm.ListedGroups, classifier topicfilter.Classifier) (*format.Group, error) {
	o := r.o
	g := &format.Group{GroupID: o.ApplicationID, ReadAt: time.Now().UTC(), Offsets: []format.GroupOffset{}}
	if lg, ok := groups[o.ApplicationID]; ok {
		g.State, g.Type, g.Protocol = lg.State, lg.GroupType, lg.ProtocolType
	}
	if g.Type == format.GroupTypeShare {
		// A share group's offsets are share-partition state (KIP-932), not
		// positions a Streams application resumes from: never read.
		return g, nil
	}
	var offs kadm.OffsetResponses
	err := retrying(ctx, o.RetryTimeout, func() (err error) {
		// COORDINATOR_NOT_AVAILABLE while a fresh cluster creates
		// __consumer_offsets, COORDINATOR_LOAD_IN_PROGRESS while a
		// new coordinator loads it: retried.
		offs, err = r.adm.FetchOffsets(ctx, o.ApplicationID)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("read committed offsets (OffsetFetch) of group %q (the application.id): %w", o.ApplicationID, err)
		}
		for topic, ps := range offs {
			for p, or := range ps {
				if or.Err != nil {
					return fmt.Errorf("committed offset (OffsetFetch) of group %q topic %q partition %d: %w", o.ApplicationID, topic, p, or.Err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for topic, ps := range offs {
		class, _, _ := classifier.Classify(topic)
		for p, or := range ps {
			if or.At < 0 {
				continue
			}
			g.Offsets = append(g.Offsets, format.GroupOffset{Topic: topic, Partition: p, Offset: or.At,
				LeaderEpoch: or.LeaderEpoch, Metadata: or.Metadata, Class: string(class)})
		}
	}
	return g, nil
}

// readGroupConfigs reads the GROUP-resource configs of group (DescribeConfigs
// with resource type GROUP, KIP-848 / KIP-1071) and keeps those set on it
// (source DYNAMIC_GROUP_CONFIG; kmsg.ConfigSourceGroupConfig). A broker
// that cannot describe them (before Kafka 3.9, or no DESCRIBE_CONFIGS on
// the group) leaves them out with a warning naming the fix: the backup
// goes on, its group has no configs recorded (nil).
func (r *runner) readGroupConfigs(ctx context.Context, group string) map[string]format.TopicConfig {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	var resp *kmsg.DescribeConfigsResponse
	err := retrying(ctx, r.o.RetryTimeout, func() (err error) {
		resp, err = req.RequestWith(ctx, r.cl)
		if err == nil && len(resp.Resources) == 1 {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		return err
	})
	if err == nil && len(resp.Resources) != 1 {
		err = fmt.Errorf("the broker answered for %d resources, not 1", len(resp.Resources))
	}
	if err != nil {
		r.warn(fmt.Sprintf("group %q: its configs (the GROUP config resource, e.g. streams.num.standby.replicas) were not read: %v; a restore will not set them: grant DESCRIBE_CONFIGS on the group (Kafka 3.9 or later describes group configs)", group, err))
		return nil
	}
	configs := map[string]format.TopicConfig{}
	for _, c := range resp.Resources[0].Configs {
		if c.Source == kmsg.ConfigSourceGroupConfig {
			configs[c.Name] = format.TopicConfig{Value: c.Value, Source: format.ConfigSourceDynamicGroup, Sensitive: c.IsSensitive}
		}
	}
	return configs
}

// topicOf is the manifest entry of topic d (partitions, replication
// factor, configs; no cuts yet), and records its metadata for the copy.
// The configs kept are those not at their default, and alwaysKeptConfigs.
func (r *runner) topicOf(d topicfilter.Decision, det kadm.TopicDetail, configs []kadm.Config) format.Topic {
	r.setMeta(det)
	t := format.Topic{Name: d.Topic, TopicID: kafkaTopicID(det.ID), Class: string(d.Class), SourceChangelog: d.SourceChangelog, Role: d.Role,
		SchemaRegistry: d.SchemaRegistry, Partitions: len(det.Partitions), Configs: map[string]format.TopicConfig{}}
	if p0, ok := det.Partitions[0]; ok {
		t.ReplicationFactor = len(p0.Replicas)
	}
	for _, c := range configs {
		if c.Source != kmsg.ConfigSourceDefaultConfig || slices.Contains(alwaysKeptConfigs, c.Key) {
			t.Configs[c.Key] = format.TopicConfig{Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive}
		}
	}
	return t
}

// inFlightTopics are the decisions of the application's repartition and
// foreign-key subscription topics (topicfilter.Repartition: the
// StreamsResetter suffix rule under the application's prefixes), found
// among every topic of the cluster, whether or not the group has offsets
// on them. None without an application.id: no group says where a tail
// starts.
func inFlightTopics(decisions []topicfilter.Decision, applicationID string) []topicfilter.Decision {
	if applicationID == "" {
		return nil
	}
	var out []topicfilter.Decision
	for _, d := range decisions {
		if d.Class == topicfilter.Repartition {
			out = append(out, d)
		}
	}
	return out
}

// inFlightCut adds to the manifest the in-flight tail of every partition
// of the internal topics in inflight (docs/DOMAIN.md#in-flight), and
// returns the work that copies them: from the group's committed offset
// (the log start when the group never committed the partition or
// committed below it) to the high watermark listed with the cut, keeping
// the records of the transactions committed at the cut (tailFilter).
// Tails are never chained to a parent backup. The group's offsets on them
// get end_offset, the tail's end.
func (r *runner) inFlightCut(inflight []topicfilter.Decision, details kadm.TopicDetails, configs map[string][]kadm.Config, starts, ends, hws kadm.ListedOffsets) []*work {
	m := r.m
	committed := map[string]map[int32]*format.GroupOffset{}
	if m.Group != nil {
		for i := range m.Group.Offsets {
			g := &m.Group.Offsets[i]
			if committed[g.Topic] == nil {
				committed[g.Topic] = map[int32]*format.GroupOffset{}
			}
			committed[g.Topic][g.Partition] = g
		}
	}
	var todo []*work
	for _, d := range inflight {
		det := details[d.Topic]
		t := r.topicOf(d, det, configs[d.Topic])
		t.PartitionCuts = make([]format.Partition, 0, len(det.Partitions))
		for _, p := range det.Partitions.Numbers() {
			so, _ := starts.Lookup(d.Topic, p)
			eo, _ := ends.Lookup(d.Topic, p)
			hw, _ := hws.Lookup(d.Topic, p)
			// The tail ends at the high watermark, not the last stable
			// offset: records another producer committed above the
			// first record of a transaction still open at the cut are
			// in it; the open transactions' records are left out
			// (tailFilter).
			end := max(hw.Offset, eo.Offset)
			from := so.Offset
			if g := committed[d.Topic][p]; g != nil {
				from = max(from, g.Offset)
				g.EndOffset = end
			}
			from = min(from, end)
			t.PartitionCuts = append(t.PartitionCuts, format.Partition{Partition: p, LogStartOffset: so.Offset, HighWatermark: hw.Offset,
				StartOffset: from, EndOffset: end, Segments: []format.Segment{}})
			if from < end {
				todo = append(todo, &work{topic: d.Topic, partition: p, from: from, end: end})
			}
		}
		m.InFlight = append(m.InFlight, t)
	}
	return todo
}

// parentCuts indexes the partitions of m (nil: none) by topic and
// partition.
func parentCuts(m *format.Manifest) map[string]*format.Partition {
	out := map[string]*format.Partition{}
	if m == nil {
		return out
	}
	for ti := range m.Topics {
		for pi := range m.Topics[ti].PartitionCuts {
			p := &m.Topics[ti].PartitionCuts[pi]
			out[partitionKey(m.Topics[ti].Name, p.Partition)] = p
		}
	}
	return out
}

func findPartition(t *format.Topic, p int32) *format.Partition {
	if t == nil {
		return nil
	}
	for i := range t.PartitionCuts {
		if t.PartitionCuts[i].Partition == p {
			return &t.PartitionCuts[i]
		}
	}
	return nil
}

// bindWork points each work item at its partition in r.m (a topic or an
// in-flight tail: the classifier keeps their names apart).
func (r *runner) bindWork(todo []*work) {
	for _, w := range todo {
		for k, ts := range [][]format.Topic{r.m.Topics, r.m.InFlight} {
			for i := range ts {
				if ts[i].Name == w.topic {
					w.cut, w.inFlight = findPartition(&ts[i], w.partition), k == 1
				}
			}
		}
	}
}

// resumeWork continues an interrupted run's cut: each partition from the
// end of its last durable segment (or of its last gap, or its start).
func (r *runner) resumeWork(ctx context.Context) ([]*work, error) {
	if err := r.sameCluster(ctx); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range slices.Concat(r.m.Topics, r.m.InFlight) {
		names = append(names, t.Name)
	}
	var details kadm.TopicDetails
	tries := 0
	err := retrying(ctx, r.o.RetryTimeout, func() (err error) {
		tries++
		if details, err = r.adm.ListTopics(uncachedAfterFirst(ctx, tries), names...); err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		for _, d := range details {
			if d.Err != nil && retriable(d.Err) {
				return fmt.Errorf("topic %q metadata (Metadata): %w", d.Topic, d.Err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.setBrokersFromTopics(ctx)
	var todo []*work
	// In-flight tails resume like other partitions: each is its own
	// range of this backup.
	all := make([]*format.Topic, 0, len(r.m.Topics)+len(r.m.InFlight))
	for _, ts := range [][]format.Topic{r.m.Topics, r.m.InFlight} {
		for ti := range ts {
			all = append(all, &ts[ti])
		}
	}
	for _, t := range all {
		det, ok := details[t.Name]
		if !ok || det.Err != nil {
			return nil, fmt.Errorf("topic %q of interrupted backup %s is gone from the source cluster: delete %s to start a new backup",
				t.Name, r.m.BackupID, format.ProgressKey(r.m.BackupID))
		}
		if id := kafkaTopicID(det.ID); id != t.TopicID {
			return nil, fmt.Errorf("topic %q was recreated since interrupted backup %s began (topic id %s, now %s): delete %s to start a new backup",
				t.Name, r.m.BackupID, t.TopicID, id, format.ProgressKey(r.m.BackupID))
		}
		r.setMeta(det)
		for pi := range t.PartitionCuts {
			p := &t.PartitionCuts[pi]
			if p.Unread != nil {
				// The interrupted run gave up on this range; try it again.
				p.EndOffset, p.Unread = p.Unread.To, nil
			}
			from := p.StartOffset
			if n := len(p.Segments); n > 0 {
				from = max(from, p.Segments[n-1].LastOffset+1)
			}
			for _, g := range p.Gaps {
				from = max(from, g.To)
			}
			if from < p.EndOffset {
				todo = append(todo, &work{topic: t.Name, partition: p.Partition, from: from, end: p.EndOffset, cut: p})
			}
		}
	}
	r.bindWork(todo)
	return todo, nil
}

// unrestorable is what one topic's copied records hold that a restore will
// refuse, with the first offset of each kind.
type unrestorable struct {
	farTimes, firstFar     int64
	farPartition           int32
	nullKeys, firstNullKey int64
	nullKeyPartition       int32
}

// noteRecord feeds rec to w's state digest (changelog partitions) and
// counts it toward the unrestorable warnings. Called by the copy goroutine
// of w for every record it copies, in offset order.
func (r *runner) noteRecord(w *work, rec *format.Record) {
	if w.digest != nil {
		w.digest.Add(rec.Key, rec.Value)
	}
	topic, partition := w.topic, w.partition
	far := !kgotime.ProducerCanSend(rec.Timestamp) // the restore refuses these (restorer.producerCanSend)
	if !far && rec.Key != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unrestorable == nil {
		r.unrestorable = map[string]*unrestorable{}
	}
	u := r.unrestorable[topic]
	if u == nil {
		u = &unrestorable{}
		r.unrestorable[topic] = u
	}
	if far {
		if u.farTimes == 0 {
			u.firstFar, u.farPartition = rec.Offset, partition
		}
		u.farTimes++
	}
	if rec.Key == nil {
		if u.nullKeys == 0 {
			u.firstNullKey, u.nullKeyPartition = rec.Offset, partition
		}
		u.nullKeys++
	}
}

// warnUnrestorable warns, per topic, about records this run backed up
// exactly that a restore will refuse, so that the day of the restore is
// not the first time anyone hears of them: timestamps franz-go's producer
// cannot send, and null keys in a topic whose cleanup.policy includes
// compact (the broker rejects them: LogValidator, "Compacted topic cannot
// accept message without key").
func (r *runner) warnUnrestorable() {
	r.mu.Lock()
	topics := make([]string, 0, len(r.unrestorable))
	for t := range r.unrestorable {
		topics = append(topics, t)
	}
	policies := map[string]string{}
	for _, t := range r.m.Topics {
		if c, ok := t.Configs["cleanup.policy"]; ok && c.Value != nil {
			policies[t.Name] = *c.Value
		}
	}
	r.mu.Unlock()
	slices.Sort(topics)
	for _, t := range topics {
		u := r.unrestorable[t]
		if u.farTimes > 0 {
			r.warn(fmt.Sprintf("topic %q: %d records (the first at partition %d offset %d) have timestamps outside 1677-09-21..2262-04-11; they are backed up exactly, but a restore refuses the topic (its Kafka client cannot send such timestamps): restore the other topics with --topics",
				t, u.farTimes, u.farPartition, u.firstFar))
		}
		if u.nullKeys > 0 && strings.Contains(policies[t], "compact") {
			r.warn(fmt.Sprintf("topic %q (cleanup.policy %s): %d records (the first at partition %d offset %d) have a null key, which a compacted topic rejects: a restore refuses the topic (they were written before compaction was turned on, or the broker has not cleaned them yet); restore the other topics with --topics",
				t, policies[t], u.nullKeys, u.nullKeyPartition, u.firstNullKey))
		}
	}
}

// warn records a warning in the manifest and logs it.
func (r *runner) warn(msg string) {
	r.mu.Lock()
	r.m.Warnings = append(r.m.Warnings, msg)
	r.mu.Unlock()
	r.log.Warn(msg)
}

func (r *runner) setMeta(d kadm.TopicDetail) {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	r.ids[d.Topic] = d.ID
	ls := map[int32]int32{}
	for p, pd := range d.Partitions {
		ls[p] = pd.Leader
	}
	r.leader[d.Topic] = ls
}

func (r *runner) leaderOf(topic string, p int32) (int32, kadm.TopicID) {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	l, ok := r.leader[topic][p]
	if !ok {
		l = -1
	}
	return l, r.ids[topic]
}

// ListTopics lists every topic of the cluster, internal ones included, as
// a backup sees them. A retriable error of the listing or of any topic
// (LEADER_NOT_AVAILABLE while a leader is elected, ...) is retried with
// backoff for up to retryTimeout, so that a topic is never taken as missing
// because of one transient answer (issue 9); then, or on any other topic
// error, the error names the topic. SelectTopics lists with it, for backup
// and the topics command alike.
func ListTopics(ctx context.Context, adm *kadm.Client, retryTimeout time.Duration) (kadm.TopicDetails, error) {
	var details kadm.TopicDetails
	tries := 0
	err := retrying(ctx, retryTimeout, func() (err error) {
		tries++
		if details, err = adm.ListTopicsWithInternal(uncachedAfterFirst(ctx, tries)); err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		for _, d := range details.Sorted() {
			if errors.Is(d.Err, kerr.UnknownTopicOrPartition) || errors.Is(d.Err, kerr.UnknownTopicID) {
				// Not in a listing of all topics: a topic asked about by
				// name (franz-go's metadata cache merges the answers).
				delete(details, d.Topic)
				continue
			}
			if d.Err != nil {
				return fmt.Errorf("topic %q metadata (Metadata): %w", d.Topic, d.Err)
			}
		}
		return nil
	})
	return details, err
}

// uncachedAfterFirst returns the context for try number tries of a kadm
// metadata call: from the second try on, one that makes kadm send a fresh
// Metadata request (kadm.WithAuthorizedOps bypasses franz-go's metadata
// cache, which would otherwise hand back the same erroring answer for
// MetadataMinAge, 5s).
func uncachedAfterFirst(ctx context.Context, tries int) context.Context {
	if tries > 1 {
		return kadm.WithAuthorizedOps(ctx)
	}
	return ctx
}

// retriable reports whether err is worth asking again: config.Retriable
// (retriable codes, UNKNOWN_SERVER_ERROR, dropped connections), but not
// the unknown-topic codes (a topic the cluster answers it lacks is
// missing, not transient). Every request a backup makes only reads, so
// asking again is always safe; Options.RetryTimeout bounds it.
func retriable(err error) bool {
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return false
	}
	return config.Retriable(err)
}

// retrying calls fn until it returns nil or an error that is not
// retriable, waiting retryBackoff between tries, for at most budget
// (Options.RetryTimeout); it returns fn's last error. franz-go already
// retries a request that fails as a whole for the client's retry timeout;
// this covers the per-topic, per-partition and per-group error codes inside
// a response, which it hands back as is.
func retrying(ctx context.Context, budget time.Duration, fn func() error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		wait := retryBackoff(attempt)
		if time.Since(start)+wait > budget {
			return fmt.Errorf("%w (still failing after %s; the source's retry_timeout is %s)", err, time.Since(start).Round(time.Millisecond), budget)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// setBrokersFromTopics records the brokers' addresses from a metadata
// request without topics; a failure only leaves errors without addresses.
func (r *runner) setBrokersFromTopics(ctx context.Context) {
	if bm, err := r.adm.BrokerMetadata(ctx); err == nil {
		r.setBrokers(bm.Brokers)
	}
}

// setBrokers records the brokers' addresses, to name them in errors.
func (r *runner) setBrokers(bs kadm.BrokerDetails) {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	for _, b := range bs {
		r.brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
}

// brokerName names a broker for messages: "broker 2 (10.0.0.7:9092)"; for
// -1, the partition's missing leader and the cluster's seed brokers.
func (r *runner) brokerName(node int32) string {
	if node < 0 {
		return fmt.Sprintf("its leader (none in the latest metadata of source cluster %s)", seedsOf(r.cl))
	}
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	if addr, ok := r.brokers[node]; ok {
		return fmt.Sprintf("broker %d (%s)", node, addr)
	}
	return fmt.Sprintf("broker %d", node)
}

func (r *runner) refreshMeta(ctx context.Context, topic string) error {
	md, err := r.adm.Metadata(kadm.WithAuthorizedOps(ctx), topic) // uncached: see uncachedAfterFirst
	if err != nil {
		return err
	}
	r.setBrokers(md.Brokers)
	ds := md.Topics
	d, ok := ds[topic]
	if !ok {
		return fmt.Errorf("topic %q no longer exists", topic)
	}
	if d.Err != nil {
		return d.Err
	}
	r.setMeta(d)
	return nil
}

// writeProgress writes the running manifest (the cut and every durable
// segment so far) as compact JSON. The segments it names are durable
// before it is: their directories' pending fsyncs (r.dirSyncs) are done
// after the snapshot is taken and before it is stored.
func (r *runner) writeProgress(ctx context.Context) error {
	if err := r.lock.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	r.m.Encryption = r.encryption()
	b, err := r.m.MarshalCompact()
	r.mu.Unlock()
	if err != nil {
		return err
	}
	key := format.ProgressKey(r.m.BackupID)
	if r.o.Shard != nil {
		key = format.ShardProgressKey(r.m.BackupID, r.o.Shard.Index) // progress.json is the run's cut
	}
	if err := r.syncSegments(); err != nil {
		return fmt.Errorf("write progress manifest %s: %w", key, err)
	}
	if err := r.store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write progress manifest %s: %w", key, err)
	}
	return nil
}

// progressWriter rewrites the progress manifest after segments complete,
// at most every progressInterval (and progressCostFactor times the last
// write's duration), each write naming every segment completed before it,
// until stop is closed or ctx is done. A write under way when stop closes
// is finished first; completions not yet written then are written by the
// caller (the final progress write of a failed or interrupted copy) or
// named by the manifest.
func (r *runner) progressWriter(ctx context.Context, stop <-chan struct{}) {
	last := time.Now() // the cut's write
	var cost time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-r.progress:
		}
		if wait := max(progressInterval, progressCostFactor*cost) - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select { // completions signalled while waiting are in this write
		case <-r.progress:
		default:
		}
		last = time.Now()
		if err := r.writeProgress(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("could not record progress", "err", err)
		}
		cost = time.Since(last)
	}
}

// syncSegments makes the segments stored so far durable: the directory
// fsyncs their puts left pending (storage.DirSyncs; nothing for S3).
func (r *runner) syncSegments() error {
	if err := r.dirSyncs.Sync(); err != nil {
		return fmt.Errorf("make the stored segments durable: %w", err)
	}
	return nil
}

func (r *runner) segmentDone(w *work, s format.Segment) {
	r.o.Observer.SegmentStored(w.topic, w.partition, s.Size, s.RawSize)
	r.mu.Lock()
	w.cut.Segments = append(w.cut.Segments, s)
	w.cut.Records += s.Records
	r.result.Records += s.Records
	r.result.Bytes += s.Size
	r.mu.Unlock()
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

// stopUnread ends the partition's chain at pos for this run: the broker
// kept answering below the captured end with no records and no progress
// until the retry budget ran out (reason says what it answered). The
// manifest's end_offset becomes pos, so the next backup reads
// [pos, w.end); the range is named in the manifest (unread), the result
// and a warning, and the run is partial.
func (r *runner) stopUnread(w *work, pos int64, reason string) {
	r.mu.Lock()
	w.cut.EndOffset = pos
	w.cut.Unread = &format.Gap{From: pos, To: w.end, BackupID: r.m.BackupID, Reason: reason}
	r.result.Unread = append(r.result.Unread, Unread{Topic: w.topic, Partition: w.partition, From: pos, To: w.end, Reason: reason})
	r.mu.Unlock()
	if w.inFlight {
		// Tails are not chained: no later backup reads this range.
		r.warn(fmt.Sprintf("in-flight tail of topic %q partition %d: offsets %d..%d could not be captured: %s; a changelog restore of this backup cannot bring those records back",
			w.topic, w.partition, pos, w.end-1, reason))
		return
	}
	r.warn(fmt.Sprintf("topic %q partition %d: offsets %d..%d were not read: %s; this backup ends the partition at %d and the next backup reads the rest",
		w.topic, w.partition, pos, w.end-1, reason, pos))
}

func (r *runner) addGap(w *work, g format.Gap) {
	r.mu.Lock()
	w.cut.Gaps = append(w.cut.Gaps, g)
	r.result.NewGaps++
	r.mu.Unlock()
	r.warn(fmt.Sprintf("topic %q partition %d: offsets %d..%d were deleted by the broker while this backup ran: back up more often than the topic's retention",
		w.topic, w.partition, g.From, g.To-1))
}

// copyAll copies every work item, Concurrency partitions at a time. The
// first error cancels the others.
func (r *runner) copyAll(ctx context.Context, todo []*work) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queue := make(chan *work)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(r.o.Concurrency, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range queue {
				if err := r.copyPartition(ctx, w); err != nil {
					once.Do(func() { first = err; cancel(err) })
					return
				}
			}
		}()
	}
feed:
	for _, w := range todo {
		select {
		case queue <- w:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}

// sameCluster refuses to continue r.m, an interrupted backup or a sharded
// run's cut, from another Kafka cluster than the one it was cut from (its
// kafka_cluster_id, the cluster id Metadata answers): the cut's offsets
// are of that cluster's partitions. A cut or cluster with no id recorded
// or answered is not refused (the topic ids checked after catch a
// recreated topic). A shard is refused with ErrShardMismatch.
func (r *runner) sameCluster(ctx context.Context) error {
	if r.m.KafkaClusterID == "" {
		return nil
	}
	bm, err := r.adm.BrokerMetadata(ctx)
	if err != nil || bm.Cluster == "" || bm.Cluster == r.m.KafkaClusterID {
		return nil
	}
	if s := r.o.Shard; s != nil {
		return fmt.Errorf("%w: backup %s of run %q was cut by shard 0 on Kafka cluster %q, this shard's source.bootstrap_servers reach cluster %q: give every shard of a run the same source cluster",
			ErrShardMismatch, r.m.BackupID, s.Run, r.m.KafkaClusterID, bm.Cluster)
	}
	return fmt.Errorf("interrupted backup %s was cut from Kafka cluster %q, source.bootstrap_servers now reach cluster %q: back up each cluster into its own repository (another prefix or directory), or delete %s to start a new backup here",
		r.m.BackupID, r.m.KafkaClusterID, bm.Cluster, format.ProgressKey(r.m.BackupID))
}

// topologyName names the topology of a selection for people: its source
// and the first 12 hex digits of its sha256, or "none".
func topologyName(s *format.Selection) string {
	if s.TopologySHA256 == "" {
		return "none"
	}
	return fmt.Sprintf("%s, sha256 %.12s", s.TopologyFrom, s.TopologySHA256)
}

// encryption is the manifest's "encryption" for this run's objects: nil
// when the store writes them in plaintext (Options.KeyID "").
func (r *runner) encryption() *format.Encryption {
	if r.o.KeyID == "" {
		return nil
	}
	return &format.Encryption{Algorithm: format.EncryptionAlgorithm, KeyID: r.o.KeyID}
}
