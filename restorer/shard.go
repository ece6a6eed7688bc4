package restorer

// A sharded restore (Options.Shard; docs/DESIGN.md "Sharded restore",
// docs/FORMAT.md "Sharded restores"): N processes, one restore. Shard 0
// resolves the backup, plans, assigns the partitions and writes the run
// object (format.RestoreShardRun), creates the topics and marks them
// ready; the others wait for that, then each restores only its
// partitions, with the restore's per-partition resume. Each shard records
// its partitions' reports (format.RestoreShardPart); the shard that finds
// every part written commits the group's offsets from all of them and
// writes the one restore report. Until then no offset is committed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Shard is one shard of a sharded restore (restore --shard I/N): shard
// Index of Count, of the run Run. Shards 1..Count-1 wait up to Wait
// (default DefaultShardWait) for shard 0's run object with its topics
// ready.
type Shard struct {
	Index, Count int
	Run          string
	Wait         time.Duration
}

// DefaultShardWait is how long shards 1..N-1 wait for shard 0 by default.
const DefaultShardWait = 10 * time.Minute

// ErrShardRunMissing is wrapped when shard 0's run object (with its
// topics ready) did not appear within Shard.Wait.
var ErrShardRunMissing = errors.New("shard 0 of the sharded restore did not create the topics in time")

// ErrShardMismatch is wrapped when a shard's --shard N or --backup-id
// differs from its run's.
var ErrShardMismatch = errors.New("this shard does not match its run")

// shardPoll is how often shards 1..N-1 look for shard 0's run object.
var shardPoll = time.Second

func readShardRun(ctx context.Context, store storage.Backend, run string) (*format.RestoreShardRun, error) {
	var sr format.RestoreShardRun
	if err := readJSON(ctx, store, format.RestoreShardRunKey(run), &sr); err != nil {
		return nil, err
	}
	return &sr, nil
}

func readJSON(ctx context.Context, store storage.Backend, key string, v any) error {
	// Within the repository's read bounds (repository.ReadObject): an
	// object of a million "{}" would allocate hundreds of MB decoding.
	b, err := repository.ReadObject(ctx, store, key)
	var why error
	switch {
	case errors.Is(err, repository.ErrObjectTooLarge):
		why = err
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, v); err != nil {
			why = format.JSONError(err)
		}
	}
	if why == nil {
		return nil
	}
	// The same bytes are read again by every shard and every re-run.
	run := path.Dir(key)
	return &RefusedError{
		Reasons: []string{fmt.Sprintf("the sharded restore's object %s does not decode: %v", key, why)},
		Hint: fmt.Sprintf("no shard can continue this run: start the sharded restore again with a new --shard-run (the objects under %s/ can be deleted); "+
			"the target may hold what this run's shards restored: delete its restored topics first (or restore into an empty cluster)", run),
	}
}

func writeJSON(ctx context.Context, store storage.Backend, key string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// locateShardRun returns the run object of o.Shard's run: nil for shard 0
// when it is not written yet (it writes it); shards 1..N-1 wait for it
// with its topics ready, up to the shard's Wait. A run of another N, or
// of another backup than o.BackupID (when given), is refused.
func locateShardRun(ctx context.Context, o *Options, log func(string, ...any)) (*format.RestoreShardRun, error) {
	s := o.Shard
	wait := s.Wait
	if wait <= 0 {
		wait = DefaultShardWait
	}
	deadline := time.Now().Add(wait)
	logged := false
	for {
		sr, err := readShardRun(ctx, o.Store, s.Run)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			sr = nil
		case err != nil:
			return nil, err
		}
		if sr != nil && sr.Shards != s.Count {
			return nil, fmt.Errorf("%w: restore run %q is split into %d shards, this shard says --shard %d/%d: give every shard of a run the same N (the Job's completions)", ErrShardMismatch, s.Run, sr.Shards, s.Index, s.Count)
		}
		if sr != nil && o.BackupID != "" && o.BackupID != "latest" && o.BackupID != sr.BackupID {
			return nil, fmt.Errorf("%w: restore run %q restores backup %s (shard 0 chose it), this shard says --backup-id %s: give every shard of a run the same --backup-id", ErrShardMismatch, s.Run, sr.BackupID, o.BackupID)
		}
		if s.Index == 0 || (sr != nil && sr.TopicsReady) {
			return sr, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: shard %d/%d waited %s for shard 0 of run %q to create the topics (%s in %s with topics_ready): check that shard 0 (JOB_COMPLETION_INDEX 0) runs with the same --shard-run and config, and its log; wait longer with --shard-wait",
				ErrShardRunMissing, s.Index, s.Count, wait, s.Run, format.RestoreShardRunKey(s.Run), o.Store.Location())
		}
		if !logged {
			log("waiting for shard 0 to create the topics", "run", s.Run, "shard", s.Index, "shards", s.Count, "wait", wait.String())
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(shardPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// shardOwns is what a shard prechecks before its first write (precheck's
// owns): nil (every segment the restore reads) when not sharded, or for a
// run whose topics are not created yet, whose shard 0 creates every topic
// (its first write is for every partition); else only the partitions the
// run assigns to the shard, the only ones it writes to (each shard read
// every segment of the backup before: N times the reads).
func shardOwns(s *Shard, run *format.RestoreShardRun) func(topic string, partition int32) bool {
	if s == nil || run == nil || !run.TopicsReady {
		return nil
	}
	return func(topic string, partition int32) bool { return run.Owns(s.Index, topic, partition) }
}

// newShardRun is shard 0's run object for r.plan: every planned
// partition assigned, balanced by the records to restore.
func (r *restore) newShardRun() *format.RestoreShardRun {
	s := r.o.Shard
	var items []format.ShardLoad
	for _, tp := range r.plan.Topics {
		for _, pp := range tp.PartitionPlans {
			items = append(items, format.ShardLoad{Topic: tp.Topic, Partition: pp.Partition, Load: max(pp.Records-pp.AlreadyThere, 0)})
		}
	}
	return &format.RestoreShardRun{Run: s.Run, Shards: s.Count, BackupID: r.plan.BackupID, RestoreID: newRestoreID(),
		Assignment: format.AssignShards(items, s.Count), StartedAt: time.Now().UTC()}
}

// restoreShard is restore for one shard: shard 0 creates the topics and
// marks them ready in the run object; every shard restores its own
// partitions, checks their ends and state digests and records its part;
// then finishShards.
func (r *restore) restoreShard(ctx context.Context, started time.Time) (*Report, error) {
	plan, s, run := r.plan, r.o.Shard, r.shardRun
	if r.jour == nil {
		r.jour = &journal{BackupID: plan.BackupID, TargetClusterID: plan.TargetClusterID, Strategy: plan.Strategy, ToTime: plan.ToTime, Topics: map[string]string{}}
	}
	if s.Index == 0 && !run.TopicsReady {
		phase := time.Now()
		if err := r.createTopics(ctx); err != nil {
			return nil, err
		}
		r.o.Observer.PhaseDone("topics", time.Since(phase))
		run.TopicsReady = true
		if err := writeJSON(ctx, r.store, format.RestoreShardRunKey(s.Run), run); err != nil {
			return nil, err
		}
		r.log.Info("topics of the sharded restore ready", "run", s.Run, "restore_id", run.RestoreID)
	}
	phase := time.Now()
	reports, err := r.restoreRecords(ctx)
	if err != nil {
		return nil, err
	}
	r.o.Observer.PhaseDone("records", time.Since(phase))
	if err := r.checkEnds(ctx, reports); err != nil {
		return nil, err
	}
	if err := r.checkStateDigests(ctx, reports); err != nil {
		return nil, fmt.Errorf("shard %d/%d: %w: no offset is committed", s.Index, s.Count, err)
	}
	part := format.RestoreShardPart{Run: s.Run, Shard: s.Index, Partitions: reports, FinishedAt: time.Now().UTC()}
	if err := writeJSON(ctx, r.store, format.RestoreShardPartKey(s.Run, s.Index), &part); err != nil {
		return nil, err
	}
	r.log.Info("shard of the sharded restore produced its partitions", "run", s.Run, "shard", s.Index, "partitions", len(reports))
	return r.finishShards(ctx, started)
}

// finishShards completes the sharded restore when every shard's part is
// written: the final topic configs, the group's configs and offsets
// (translated with every part's offset maps), the journal and the one
// report (RestoreShardRun.RestoreID). Two shards finishing at once commit
// the same offsets and write the same report. Otherwise it returns a
// report of this shard's partitions with ShardsPending set and commits
// nothing.
func (r *restore) finishShards(ctx context.Context, started time.Time) (*Report, error) {
	plan, s, run := r.plan, r.o.Shard, r.shardRun
	var pending []int
	var reports []PartitionReport
	for i := range s.Count {
		var part format.RestoreShardPart
		err := readJSON(ctx, r.store, format.RestoreShardPartKey(s.Run, i), &part)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			pending = append(pending, i)
			continue
		case err != nil:
			return nil, err
		}
		reports = append(reports, part.Partitions...)
	}
	if len(pending) > 0 {
		var own format.RestoreShardPart
		if err := readJSON(ctx, r.store, format.RestoreShardPartKey(s.Run, s.Index), &own); err != nil {
			return nil, err
		}
		rep := &Report{RestoreID: run.RestoreID, Plan: *plan, StartedAt: started, Partitions: own.Partitions, ShardsPending: pending}
		for _, pr := range own.Partitions {
			rep.Records += pr.Records
		}
		r.log.Info("sharded restore not complete yet: other shards have not finished; the last to finish commits the offsets", "run", s.Run, "shard", s.Index, "pending", pending)
		return rep, nil
	}
	slices.SortFunc(reports, func(a, b PartitionReport) int {
		if a.Topic != b.Topic {
			return cmpString(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	rep := &Report{RestoreID: run.RestoreID, StartedAt: run.StartedAt}
	rep, err := r.complete(ctx, rep, reports, nil)
	if err != nil {
		return nil, err
	}
	r.lock.Finish()
	r.log.Info("every shard finished: sharded restore complete", "run", s.Run, "restore_id", rep.RestoreID)
	return rep, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
