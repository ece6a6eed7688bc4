package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// ErrLocked is wrapped by the error Prune returns when a backup or a
// restore holds a live lock on the repository.
var ErrLocked = repository.ErrLocked

// ErrNoPolicy is returned by Prune when PruneOptions keeps nothing
// explicitly: no rule of its Policy is set.
var ErrNoPolicy = errors.New("no retention policy: set keep-last, keep-hourly, keep-daily, keep-weekly, keep-monthly, keep-yearly or keep-within")

// ErrUnreadableKept is wrapped by the error Prune returns when a manifest
// it would keep does not decode: it cannot know which segments that backup
// needs, so it deletes nothing.
var ErrUnreadableKept = errors.New("a kept manifest is unreadable")

// UnreadableKeptError is the error Prune returns, wrapping
// ErrUnreadableKept, when manifests (or progress.json files) of backups it
// would keep do not decode or disappeared while it read them. Nothing was
// deleted.
type UnreadableKeptError struct {
	BackupIDs []string // the backups concerned, in the index's order (oldest first)
	Problems  []string // one per backup: "<key>: <error>"
}

func (e *UnreadableKeptError) Error() string {
	return fmt.Sprintf("%s, so prune cannot know which segments it needs; nothing was deleted: %s (run verify; delete that backup's manifest by hand if it cannot be repaired)",
		ErrUnreadableKept, strings.Join(e.Problems, "; "))
}

func (e *UnreadableKeptError) Unwrap() error { return ErrUnreadableKept }

// PruneOptions is a retention policy (see Policy) and how to apply it.
// Complete backups are kept when any rule keeps them (the union); the
// latest complete backup is always kept.
type PruneOptions struct {
	Policy
	// DryRun computes what would be deleted and deletes nothing. It takes
	// no lock, so a backup running meanwhile may change the figures.
	DryRun bool
	// Now is the present: a backup whose time is after it (a skewed clock)
	// is not taken as the newest that keep-within counts back from (restic's
	// rule). Zero: time.Now().
	Now    time.Time
	Logger *slog.Logger // nil: discard
}

// Decision is what Prune does with one backup id.
type Decision struct {
	Summary
	Keep bool `json:"keep"`
	// Rules are the policy rules that keep a complete backup, in restic's
	// order: "keep-within 30d", "keep-last", "keep-hourly", "keep-daily",
	// "keep-weekly", "keep-monthly", "keep-yearly", or "oldest for
	// keep-daily" (the oldest backup, kept while the count lasts).
	Rules  []string `json:"rules,omitempty"`
	Reason string   `json:"reason"` // why it is kept or forgotten, for people
	// RetainUntil is set on a complete backup the policy does not keep but
	// whose manifest.json is under S3 Object Lock retention until then
	// (storage.RetentionReader): the store refuses to delete it, so prune
	// keeps the backup, and every segment it names, whole. A prune after
	// that date forgets it.
	RetainUntil *time.Time `json:"retain_until,omitempty"`
}

// PruneResult says what Prune deleted, or with DryRun would delete.
type PruneResult struct {
	DryRun bool `json:"dry_run"`
	// Backups holds every backup id of the repository, newest first.
	Backups []Decision `json:"backups"`
	// Forgotten counts the manifest.json objects deleted (complete
	// backups the policy does not keep).
	Forgotten int `json:"forgotten"`
	// Progress counts the progress.json objects deleted: runs no backup
	// will resume, and leftovers next to a manifest.json.
	Progress int `json:"progress_deleted"`
	// Segments and SegmentBytes count the segment objects deleted: those
	// no kept manifest names.
	Segments     int   `json:"segments_deleted"`
	SegmentBytes int64 `json:"segment_bytes_deleted"`
	// KeptSegments and KeptBytes count the segment objects that stay.
	KeptSegments int   `json:"segments_kept"`
	KeptBytes    int64 `json:"segment_bytes_kept"`
	// RetainedSegments counts the unreferenced segments prune did not
	// delete because the store refused under Object Lock retention (the
	// segments of an interrupted run, written with a retention): a prune
	// after RetainedUntil deletes them.
	RetainedSegments int        `json:"segments_retained,omitempty"`
	RetainedUntil    *time.Time `json:"segments_retained_until,omitempty"`
	// Journals counts the restore journals deleted: those of backups that
	// are no longer complete (a restore can only resume a restorable backup).
	Journals int `json:"restore_journals_deleted"`
	// Missing lists segments a kept manifest names that the repository
	// does not hold (damage prune did not cause: run verify).
	Missing []string `json:"missing_segments,omitempty"`
}

// afterForget, when set (tests), runs between the two phases of Prune; an
// error stops Prune there, as a crash would.
var afterForget func() error

// Prune forgets the complete backups the policy does not keep and deletes
// the objects no kept backup needs. Order (docs/FORMAT.md, "Write order"):
//
//  1. Take the backup lock (key "lock") and every restore lock found under
//     restores/locks/ (a restore reads segments); a live holder refuses the
//     prune with an error wrapping ErrLocked, before anything is deleted.
//  2. Forget: delete the manifest.json of each forgotten backup and every
//     progress.json no run will resume (abandoned, or left next to a
//     manifest.json).
//  3. Sweep: list segments/ and delete every segment that no kept
//     manifest.json and no resumable progress.json names, then the restore
//     journals of backups that are no longer complete.
//
// A crash between or during the phases leaves unreferenced objects
// (garbage, removed by the next prune), never a manifest that names a
// missing segment. Segments under the id of a running or interrupted
// backup, or of an id newer than every backup seen, are never deleted,
// named or not: a backup that runs despite the lock (one that lost it)
// writes only there.
//
// Prune needs a policy (ErrNoPolicy), and refuses when a manifest it
// would keep cannot be read (ErrUnreadableKept). A storage error stops it
// and is returned alone (no result); its message says how far it got. The
// caller's ctx cancels it between deletions.
func Prune(ctx context.Context, store storage.Backend, o PruneOptions) (*PruneResult, error) {
	if err := o.Policy.validate(); err != nil {
		return nil, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	logf := func(msg string, args ...any) { log.Warn(msg, args...) }

	if o.DryRun {
		p, err := plan(ctx, store, o)
		if err != nil {
			return nil, err
		}
		return p.res, nil
	}
	locks := map[string]*repository.Lock{}
	defer func() {
		for _, l := range locks {
			l.Release(ctx)
		}
	}()
	if err := takeLocks(ctx, store, locks, logf); err != nil {
		return nil, err
	}
	p, err := plan(ctx, store, o)
	if err != nil {
		return nil, err
	}
	res := p.res
	if err := p.forget(ctx, store, log); err != nil {
		return nil, err
	}
	if afterForget != nil {
		if err := afterForget(); err != nil {
			return nil, err
		}
	}
	// A restore that started meanwhile on another target cluster took a
	// new lock: take it too, or stop here, leaving only garbage.
	if err := takeLocks(ctx, store, locks, logf); err != nil {
		return nil, fmt.Errorf("forgot %s but deleted none of their segments: %w", plural(res.Forgotten, "backup", "backups"), err)
	}
	for _, l := range locks {
		if err := l.Err(); err != nil {
			return nil, fmt.Errorf("forgot %s but deleted none of their segments: %w", plural(res.Forgotten, "backup", "backups"), err)
		}
	}
	if err := p.sweep(ctx, store, log); err != nil {
		return nil, fmt.Errorf("forgot %s: %w", plural(res.Forgotten, "backup", "backups"), err)
	}
	removeStaleTemps(ctx, store, log)
	return res, nil
}

// staleTempAge is the age above which prune removes a temporary file: well
// above the longest put (storage.Filesystem.RemoveStaleTemps), so a live
// writer's is kept.
const staleTempAge = time.Hour

// removeStaleTemps removes the temporary files that runs killed inside a
// put left anywhere in the repository (a lock attempt or heartbeat at the
// root, a restore's journal or report under restores/): a backup removes
// those under segments/ and backups/ only, no other run removes the rest.
// A failure is logged, not returned: the prune itself is done.
func removeStaleTemps(ctx context.Context, store storage.Backend, log *slog.Logger) {
	c, ok := store.(interface {
		RemoveStaleTemps(context.Context, string, time.Duration) (int, error)
	})
	if !ok {
		return
	}
	if n, err := c.RemoveStaleTemps(ctx, "", staleTempAge); err != nil {
		log.Warn("could not remove leftover temporary files", "err", err)
	} else if n > 0 {
		log.Info("removed temporary files of killed runs", "files", n, "older_than", staleTempAge.String())
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// takeLocks takes the backup lock (when held has none) and every restore
// lock under restores/locks/ that held lacks, adding them to held.
func takeLocks(ctx context.Context, store storage.Backend, held map[string]*repository.Lock, logf func(string, ...any)) error {
	const owner = "prune"
	if held[format.LockKey] == nil {
		l, err := repository.AcquireLock(ctx, store, format.LockKey, owner, logf)
		if err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		held[format.LockKey] = l
	}
	keys, err := repository.RestoreLockKeys(ctx, store)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if held[k] != nil {
			continue
		}
		l, err := repository.AcquireLock(ctx, store, k, owner, logf)
		if errors.Is(err, repository.ErrLocked) {
			return fmt.Errorf("prune: a restore is running (it reads segments prune could delete): %w", err)
		}
		if err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		held[k] = l
	}
	return nil
}

func (e *UnreadableKeptError) add(b *entry) {
	e.BackupIDs = append(e.BackupIDs, b.BackupID)
	e.Problems = append(e.Problems, b.ManifestKey+": "+b.Error)
}

// prunePlan is what Prune decided, with the object keys to delete.
type prunePlan struct {
	res       *PruneResult
	manifests []string         // manifest.json and progress.json keys to delete (phase 1)
	segments  []string         // segment keys to delete (phase 2)
	sizes     map[string]int64 // the size of each of segments
	journals  []string         // restore journal keys to delete (phase 2)
}

// plan reads the repository and decides. It deletes nothing.
func plan(ctx context.Context, store storage.Backend, o PruneOptions) (*prunePlan, error) {
	x, es, err := scan(ctx, store)
	if err != nil {
		return nil, err
	}
	p := &prunePlan{res: &PruneResult{DryRun: o.DryRun}, sizes: map[string]int64{}}
	referenced := map[string]bool{}
	protected := map[string]bool{} // backup ids whose segments are never deleted
	keptComplete := map[string]bool{}
	var greatest string
	latest := x.LatestCompleteID()
	// The policy sees the complete backups, newest (greatest id) first.
	var times []time.Time
	for _, e := range es {
		if e.HasManifest {
			times = append(times, e.Time())
		}
	}
	rules := applyPolicy(times, o.Policy, o.Now)
	nComplete := 0
	unreadable := &UnreadableKeptError{}
	for _, e := range es {
		greatest = max(greatest, e.BackupID)
		d := Decision{Summary: e.Summary}
		switch {
		case e.HasManifest:
			d.Rules = rules[nComplete]
			nComplete++
			switch {
			case len(d.Rules) > 0:
				d.Keep, d.Reason = true, strings.Join(d.Rules, ", ")
				if nComplete == 1 {
					d.Reason = "latest complete backup; " + d.Reason
				}
			case nComplete == 1:
				d.Keep, d.Reason = true, "latest complete backup (always kept)"
			default:
				d.Reason = "not kept by the policy (" + o.Policy.String() + ")"
				r, err := retention(ctx, store, format.ManifestKey(e.BackupID))
				if err != nil {
					return nil, fmt.Errorf("prune: %w", err)
				}
				if r.Active(o.Now) {
					// The store refuses to delete it: keep the backup
					// whole rather than delete part of it.
					until := r.Until.UTC()
					d.Keep, d.RetainUntil = true, &until
					d.Reason = fmt.Sprintf("under S3 Object Lock retention (%s) until %s, %s", r.Mode, until.Format(time.RFC3339), d.Reason)
					break
				}
				p.manifests = append(p.manifests, format.ManifestKey(e.BackupID))
				p.res.Forgotten++
			}
			if e.HasProgress {
				p.manifests = append(p.manifests, format.ProgressKey(e.BackupID))
				p.res.Progress++
			}
			if d.Keep {
				keptComplete[e.BackupID] = true
				if e.m == nil {
					unreadable.add(e)
				}
				addSegments(referenced, e.m)
			}
		case e.BackupID > latest:
			// Running now, or interrupted: the next backup resumes it.
			d.Keep, d.Reason = true, "running or interrupted: the next backup resumes it"
			protected[e.BackupID] = true
			if e.m == nil {
				unreadable.add(e)
			}
			addSegments(referenced, e.m)
		default:
			d.Reason = "abandoned: no backup will resume it"
			p.manifests = append(p.manifests, format.ProgressKey(e.BackupID))
			p.res.Progress++
		}
		p.res.Backups = append(p.res.Backups, d)
	}
	if len(unreadable.BackupIDs) > 0 {
		return nil, unreadable
	}

	// Segments: the listing is for garbage collection only; readers never list.
	seen := map[string]bool{}
	err = store.List(ctx, format.SegmentsPrefix(), func(oi storage.ObjectInfo) error {
		id, _, _ := strings.Cut(strings.TrimPrefix(oi.Key, format.SegmentsPrefix()), "/")
		switch {
		case referenced[oi.Key]:
			seen[oi.Key] = true
			p.res.KeptSegments++
			p.res.KeptBytes += oi.Size
		case !format.ValidBackupID(id) || protected[id] || id > greatest:
			// Not a segment of the format, or of a run that may be writing.
			p.res.KeptSegments++
			p.res.KeptBytes += oi.Size
		default:
			p.segments = append(p.segments, oi.Key)
			p.sizes[oi.Key] = oi.Size
			p.res.Segments++
			p.res.SegmentBytes += oi.Size
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list segments in %s: %w", store.Location(), err)
	}
	for k := range referenced {
		if !seen[k] {
			p.res.Missing = append(p.res.Missing, k)
		}
	}
	slices.Sort(p.res.Missing)

	journals, err := repository.JournalKeys(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, j := range journals {
		if j.BackupID != "" && !keptComplete[j.BackupID] && j.BackupID < greatest {
			p.journals = append(p.journals, j.Key)
			p.res.Journals++
		}
	}
	return p, nil
}

// retention is the Object Lock retention of key when store can tell it
// (storage.RetentionReader: S3), else none.
func retention(ctx context.Context, store storage.Backend, key string) (storage.Retention, error) {
	rr, ok := store.(storage.RetentionReader)
	if !ok {
		return storage.Retention{}, nil
	}
	r, err := rr.Retention(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Retention{}, nil // deleted meanwhile: nothing to keep
	}
	return r, err
}

func addSegments(set map[string]bool, m *format.Manifest) {
	if m == nil {
		return
	}
	// In-flight tails are this backup's segments too (Manifest.InFlight).
	for _, t := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range t.PartitionCuts {
			for _, s := range p.Segments {
				set[s.Key] = true
			}
		}
	}
}

// forget is phase 1: delete manifests. After it, no manifest names a
// segment that phase 2 deletes.
func (p *prunePlan) forget(ctx context.Context, store storage.Backend, log *slog.Logger) error {
	n, _, err := deleteAll(ctx, store, p.manifests, false)
	log.Info("prune: forgot backups", "manifests", n)
	if err != nil {
		return fmt.Errorf("forget backups: deleted %d of %d manifests: %w", n, len(p.manifests), err)
	}
	return nil
}

// sweep is phase 2: delete the unreferenced segments, then stale journals.
func (p *prunePlan) sweep(ctx context.Context, store storage.Backend, log *slog.Logger) error {
	n, retained, err := deleteAll(ctx, store, p.segments, true)
	log.Info("prune: deleted unreferenced segments", "segments", n)
	if len(retained) > 0 {
		var last time.Time
		for _, r := range retained {
			last = maxTime(last, r.Retention.Until.UTC())
			p.res.SegmentBytes -= p.sizes[r.Key]
			p.res.KeptBytes += p.sizes[r.Key]
		}
		p.res.KeptSegments += len(retained)
		p.res.Segments -= len(retained)
		p.res.RetainedSegments, p.res.RetainedUntil = len(retained), &last
		log.Warn("prune: unreferenced segments are under S3 Object Lock retention and stay until it ends; a later prune deletes them",
			"segments", len(retained), "until", last.Format(time.RFC3339), "first", retained[0].Object)
	}
	if err != nil {
		return fmt.Errorf("delete unreferenced segments: deleted %d of %d: %w (run prune again to finish)", n, len(p.segments), err)
	}
	n, _, err = deleteAll(ctx, store, p.journals, false)
	if err != nil {
		return fmt.Errorf("delete restore journals: deleted %d of %d: %w", n, len(p.journals), err)
	}
	return nil
}

// deleteConcurrency is how many objects are deleted at once.
const deleteConcurrency = 16

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// deleteAll deletes keys with bounded concurrency and returns how many
// deletions succeeded and the first error. With skipRetained, a deletion
// the store refuses under Object Lock retention (storage.ErrRetained) is
// no error: it is returned in retained.
func deleteAll(ctx context.Context, store storage.Backend, keys []string, skipRetained bool) (int, []*storage.RetainedError, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		n        int
		retained []*storage.RetainedError
		firstErr error
		sem      = make(chan struct{}, deleteConcurrency)
	)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := store.Delete(ctx, k)
			mu.Lock()
			defer mu.Unlock()
			if re := (*storage.RetainedError)(nil); skipRetained && errors.As(err, &re) {
				retained = append(retained, re)
				return
			}
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("delete %s: %w", k, err)
				}
				return
			}
			n++
		}()
	}
	wg.Wait()
	slices.SortFunc(retained, func(a, b *storage.RetainedError) int { return strings.Compare(a.Object, b.Object) })
	return n, retained, firstErr
}
