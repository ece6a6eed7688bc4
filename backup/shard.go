package backup

// A sharded backup (Options.Shard; docs/DESIGN.md "Sharded backup",
// docs/FORMAT.md "Sharded backups"): N processes, one backup. Shard 0 takes
// the one cut (group offsets, then ends: newCut) and assigns the partitions,
// writing both into the backup's progress.json (Manifest.ShardRun); the
// others wait for it. Each shard copies its own partitions with a progress
// of its own (format.ShardProgressKey), so that a killed shard resumes
// alone; the shard that finds every shard's progress done merges them into
// the manifest. Until then the backup is an interrupted run, never listed
// as restorable.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// shardPoll is how often shards 1..N-1 look for shard 0's cut.
var shardPoll = time.Second

// shardRun is what a shard finds of its run in the repository.
type shardRun struct {
	cut      *format.Manifest // the run's progress.json (its cut), nil when not written yet
	complete string           // the id of the run's complete backup, "" when not complete
}

// ValidateShard checks s: 0 <= Index < Count, a Run. Its errors name the
// flag and the fix.
func ValidateShard(s *Shard) error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("--shard %d/%d: N must be at least 1", s.Index, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("--shard %d/%d: I must be 0 to %d (0 <= I < N)", s.Index, s.Count, s.Count-1)
	case s.Run == "":
		return errors.New("a sharded backup needs a run identifier shared by its shards: --shard-run ID (in a Kubernetes Indexed Job, KAFKASTREAMS_DR_SHARD_RUN from the pod label batch.kubernetes.io/controller-uid)")
	}
	return nil
}

// findShardRun reads the repository for the run of shard s: its cut (the
// interrupted run's progress.json whose shard_run.run is s.Run) or its
// complete backup: the latest, or with everyComplete any complete backup
// of app (a run id names one run: a shard of a run completed before later
// backups is answered with its backup, not with a new cut).
func findShardRun(ctx context.Context, store storage.Backend, s *Shard, app string, everyComplete bool) (shardRun, error) {
	x, err := repository.ReadIndex(ctx, store)
	if err != nil {
		return shardRun{}, err
	}
	parentID, parent, _, err := x.Parent(ctx, app)
	if err != nil {
		return shardRun{}, err
	}
	if parent != nil && parent.ShardRun != nil && parent.ShardRun.Run == s.Run {
		return shardRun{complete: parent.BackupID}, nil
	}
	if everyComplete {
		for _, id := range x.CompleteIDs() {
			if id == parentID {
				continue
			}
			m, err := repository.LoadManifest(ctx, store, format.ManifestKey(id))
			if err != nil {
				if ctx.Err() != nil {
					return shardRun{}, ctx.Err()
				}
				continue // damaged or another version: Parent reported it, not this run's
			}
			if m.ApplicationID == app && m.ShardRun != nil && m.ShardRun.Run == s.Run {
				return shardRun{complete: id}, nil
			}
		}
	}
	_, resume, err := x.Resumable(ctx, parentID, app)
	if err != nil {
		return shardRun{}, err
	}
	if resume != nil && resume.ShardRun != nil && resume.ShardRun.Run == s.Run {
		return shardRun{cut: resume}, nil
	}
	return shardRun{}, nil
}

// locateShardRun is findShardRun before any write: shards 1..N-1 wait for
// shard 0's cut (up to s.Wait), and a cut of N other than s.Count or of
// another selection is refused (ErrShardMismatch).
func locateShardRun(ctx context.Context, store storage.Backend, s *Shard, app string, selection *format.Selection, log func(string, ...any)) (shardRun, error) {
	wait := s.Wait
	if wait <= 0 {
		wait = DefaultShardWait
	}
	deadline := time.Now().Add(wait)
	logged := false
	for first := true; ; first = false {
		sr, err := findShardRun(ctx, store, s, app, first)
		if err != nil || sr.complete != "" {
			return sr, err
		}
		if sr.cut != nil {
			return sr, checkShardCut(sr.cut, s, selection)
		}
		if s.Index == 0 {
			return sr, nil // it takes the cut
		}
		if !time.Now().Before(deadline) {
			return sr, fmt.Errorf("%w: shard %d/%d waited %s for shard 0 of run %q to take the cut (a backups/<id>/progress.json with shard_run.run %q in %s): check that shard 0 (JOB_COMPLETION_INDEX 0) runs with the same --shard-run and config, and its log; wait longer with --shard-wait",
				ErrShardCutMissing, s.Index, s.Count, wait, s.Run, s.Run, store.Location())
		}
		if !logged {
			log("waiting for shard 0 to take the cut", "run", s.Run, "shard", s.Index, "shards", s.Count, "wait", wait.String())
			logged = true
		}
		select {
		case <-ctx.Done():
			return sr, ctx.Err()
		case <-time.After(min(shardPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// checkShardCut refuses a cut taken for another N or another selection
// than shard s's.
func checkShardCut(cut *format.Manifest, s *Shard, selection *format.Selection) error {
	if n := cut.ShardRun.Shards; n != s.Count {
		return fmt.Errorf("%w: backup %s of run %q is split into %d shards, this shard says --shard %d/%d: give every shard of a run the same N (the Job's completions)",
			ErrShardMismatch, cut.BackupID, s.Run, n, s.Index, s.Count)
	}
	if !cut.Selection.Equal(selection) {
		return fmt.Errorf("%w: backup %s of run %q was cut by shard 0 with another selection than this shard's config (shard 0's vs this shard's: %s): give every shard of a run the same config",
			ErrShardMismatch, cut.BackupID, s.Run, strings.Join(cut.Selection.Differences(selection), "; "))
	}
	return nil
}

// assignShards splits todo's partitions, and every other partition of m,
// into n disjoint sets balanced by the offsets each has to copy (end minus
// first offset to copy): largest first, each into the least-loaded shard
// (ties: the lower shard; format.AssignShards). Partitions with nothing
// to copy weigh 0.
func assignShards(m *format.Manifest, todo []*work, n int) []format.ShardAssignment {
	load := map[string]int64{}
	for _, w := range todo {
		load[partitionKey(w.topic, w.partition)] = w.end - w.from
	}
	var items []format.ShardLoad
	for _, t := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range t.PartitionCuts {
			items = append(items, format.ShardLoad{Topic: t.Name, Partition: p.Partition, Load: load[partitionKey(t.Name, p.Partition)]})
		}
	}
	return format.AssignShards(items, n)
}

// ownWork keeps the work of todo that shard index owns in r.m.
func (r *runner) ownWork(todo []*work) []*work {
	return slices.DeleteFunc(todo, func(w *work) bool { return !r.m.ShardRun.Owns(r.o.Shard.Index, w.topic, w.partition) })
}

// owns reports whether this run copies topic's partition p: always, unless
// it is a shard that does not own it.
func (r *runner) owns(topic string, p int32) bool {
	return r.o.Shard == nil || r.m.ShardRun == nil || r.m.ShardRun.Owns(r.o.Shard.Index, topic, p)
}

// shardCut takes the cut of a new sharded backup (shard 0): newCut, the
// assignment, then progress.json, the run's cut, before any shard copies.
// It returns shard 0's work.
func (r *runner) shardCut(ctx context.Context, id string, parent *format.Manifest, selection *format.Selection) ([]*work, error) {
	todo, err := r.newCut(ctx, id, parent, selection)
	if err != nil {
		return nil, err
	}
	s := r.o.Shard
	r.m.ShardRun = &format.ShardRun{Run: s.Run, Shards: s.Count, Assignment: assignShards(r.m, todo, s.Count)}
	r.m.Encryption = r.encryption()
	b, err := r.m.Marshal()
	if err != nil {
		return nil, err
	}
	key := format.ProgressKey(id)
	if err := r.store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return nil, fmt.Errorf("write the cut of sharded run %q, %s: %w", s.Run, key, err)
	}
	r.log.Info("took the cut of a sharded backup", "backup_id", id, "run", s.Run, "shards", s.Count)
	r.bindWork(todo) // Marshal sorted r.m
	return r.ownWork(todo), nil
}

// joinShardCut continues shard r.o.Shard of the run whose cut is cut: from
// the shard's own progress when it has one (a shard run again after a
// kill), else from the cut. done: the shard's progress says it finished.
func (r *runner) joinShardCut(ctx context.Context, cut *format.Manifest) (todo []*work, done bool, err error) {
	s := r.o.Shard
	key := format.ShardProgressKey(cut.BackupID, s.Index)
	r.m = cut
	own, err := repository.LoadManifest(ctx, r.store, key)
	switch {
	case err == nil:
		if own.ShardRun == nil || own.ShardRun.Run != s.Run || own.BackupID != cut.BackupID {
			return nil, false, fmt.Errorf("%s is not the progress of shard %d of run %q: delete it to copy this shard's partitions again", key, s.Index, s.Run)
		}
		r.m = own
		r.result.Resumed = true
		if own.ShardRun.Done {
			return nil, true, nil
		}
		r.log.Info("resuming shard of interrupted sharded backup", "backup_id", cut.BackupID, "run", s.Run, "shard", s.Index)
	case errors.Is(err, storage.ErrNotFound):
	default:
		return nil, false, fmt.Errorf("read the progress of shard %d, %s: %w (delete it to copy this shard's partitions again)", s.Index, key, err)
	}
	if todo, err = r.resumeWork(ctx); err != nil {
		return nil, false, err
	}
	return r.ownWork(todo), false, nil
}

// finishShard records that this shard copied every partition of its
// assignment (its progress, Done) and, when every shard's progress is
// done, completes the backup (commitShards). It fills r.result.Manifest
// when the backup is complete, r.result.ShardsPending otherwise.
// already: the shard's progress said so when it started.
func (r *runner) finishShard(ctx context.Context, already bool) error {
	if !already {
		r.mu.Lock()
		r.m.ShardRun.Done = true
		r.m.FinishedAt = time.Now().UTC()
		r.mu.Unlock()
		if err := r.writeProgress(ctx); err != nil {
			return err
		}
	}
	pending, err := r.commitShards(ctx)
	if err != nil {
		return err
	}
	r.result.ShardsPending = pending
	if len(pending) == 0 {
		r.result.Manifest = format.ManifestKey(r.m.BackupID)
	}
	return nil
}

// commitShards writes the manifest of the sharded backup r.m.BackupID once
// every shard's progress is done: the cut (progress.json) with each
// partition as its shard copied it, the shards' warnings, the latest
// shard's finished_at; then removes progress.json and the shards'
// progress. Two shards committing at once write the same manifest. It
// returns the shards not done yet (nothing written then).
func (r *runner) commitShards(ctx context.Context) (pending []int, err error) {
	id, s := r.m.BackupID, r.o.Shard
	mkey := format.ManifestKey(id)
	committed := func() bool {
		_, err := r.store.Stat(ctx, mkey)
		return err == nil
	}
	cut, err := repository.LoadManifest(ctx, r.store, format.ProgressKey(id))
	if errors.Is(err, storage.ErrNotFound) && committed() {
		return nil, nil // another shard completed it
	}
	if err != nil {
		return nil, fmt.Errorf("read the cut of sharded backup %s: %w", id, err)
	}
	parts := make([]*format.Manifest, s.Count)
	for i := range s.Count {
		if i == s.Index {
			parts[i] = r.m
			continue
		}
		p, err := repository.LoadManifest(ctx, r.store, format.ShardProgressKey(id, i))
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if committed() {
				return nil, nil
			}
			pending = append(pending, i)
			continue
		case err != nil:
			return nil, fmt.Errorf("read the progress of shard %d of backup %s: %w", i, id, err)
		}
		if p.ShardRun == nil || !p.ShardRun.Done {
			pending = append(pending, i)
		}
		parts[i] = p
	}
	if len(pending) > 0 {
		return pending, nil
	}
	m := format.MergeShards(cut, parts)
	m.State = format.StateComplete
	m.Encryption = r.encryption() // the shard that writes it: its own key
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	if err := r.store.Put(ctx, mkey, bytes.NewReader(b), int64(len(b))); err != nil {
		// Another shard committing at the same moment wrote this very
		// manifest first, and a store with Object Lock and no versioning
		// refuses to replace the retained object: it is written.
		if !errors.Is(err, storage.ErrRetained) || !holds(ctx, r.store, mkey, b) {
			return nil, fmt.Errorf("write manifest %s: %w", mkey, err)
		}
		r.log.Info("another shard wrote the same manifest first", "backup_id", id, "key", mkey)
	}
	r.lock.Finish()
	r.log.Info("every shard finished: sharded backup complete", "backup_id", id, "run", s.Run, "shards", s.Count)
	for i := range s.Count {
		if err := r.store.Delete(ctx, format.ShardProgressKey(id, i)); err != nil && !errors.Is(err, storage.ErrNotFound) {
			r.log.Warn("could not delete a shard's progress", "key", format.ShardProgressKey(id, i), "err", err)
		}
	}
	if err := r.store.Delete(ctx, format.ProgressKey(id)); err != nil && !errors.Is(err, storage.ErrNotFound) {
		r.log.Warn("could not delete progress manifest", "key", format.ProgressKey(id), "err", err)
	}
	return nil, nil
}

// holds reports whether the object under key holds exactly b.
func holds(ctx context.Context, store storage.Backend, key string, b []byte) bool {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return false
	}
	defer rc.Close()
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(b))+1))
	return err == nil && bytes.Equal(got, b)
}
