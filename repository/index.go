package repository

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file is the repository's index: one listing of backups/ and every
// rule that picks a backup from it (docs/FORMAT.md, "Write order" and
// "Resume"), each written once: the latest backup (every reader's
// "latest"), the parent of a new backup, the interrupted run a new backup
// resumes, and the manifest a command names by id or as "latest".

// ErrNoBackup is wrapped when the repository holds no complete backup (or
// not the one asked for): there is nothing to restore or read. Test with
// errors.Is.
var ErrNoBackup = errors.New("no such backup")

// ErrOtherApplication is wrapped (by an *ApplicationError) when a backup
// is of another application.id than the caller's config: one repository
// prefix holds the backups of one Kafka Streams application, as one
// application.id names one consumer group and one set of internal topics
// (StreamsConfig.APPLICATION_ID_CONFIG). Test with errors.Is.
var ErrOtherApplication = errors.New("backup of another application")

// ApplicationError is SameApplication's error: backup BackupID is of
// application.id Backup, the caller's config says Want ("" for either is
// none: no application_id).
type ApplicationError struct {
	BackupID string
	// Interrupted: BackupID is a run that left only a progress.json (the
	// run a new backup would resume), not a complete backup.
	Interrupted bool
	Backup      string // the backup's application.id
	Want        string // the config's application.id
}

func (e *ApplicationError) Error() string {
	what := "backup"
	if e.Interrupted {
		what = "interrupted backup"
	}
	return fmt.Sprintf("%s %s is of application.id %s, the config says %s: one repository prefix holds the backups of one application",
		what, e.BackupID, quoteApplication(e.Backup), quoteApplication(e.Want))
}

func (e *ApplicationError) Unwrap() error { return ErrOtherApplication }

// quoteApplication quotes an application.id for messages, "" as `"" (none)`.
func quoteApplication(id string) string {
	if id == "" {
		return `"" (none)`
	}
	return strconv.Quote(id)
}

// SameApplication is the one rule that a backup and a config are of one
// application: nil when manifest m is of application.id app, an
// *ApplicationError otherwise; "" (no application_id) is an application.id
// like any other here, so a backup without one and a backup of "myapp"
// differ. m is a complete backup's manifest or, with State running, an
// interrupted run's progress manifest.
func SameApplication(m *format.Manifest, app string) error {
	if m.ApplicationID == app {
		return nil
	}
	return &ApplicationError{BackupID: m.BackupID, Interrupted: m.State == format.StateRunning, Backup: m.ApplicationID, Want: app}
}

// Backup is one backup id found under backups/.
type Backup struct {
	ID string
	// HasManifest: backups/<id>/manifest.json exists, the backup is
	// complete (format.ManifestKey).
	HasManifest bool
	// HasProgress: backups/<id>/progress.json exists (format.ProgressKey):
	// the run is going on or was interrupted, or, beside a manifest, died
	// between the two writes (a leftover).
	HasProgress bool
}

// Index is one listing of a repository's backups/: the backup ids with a
// manifest.json or a progress.json, and nothing read. Its methods that
// return manifests read them through the store it was listed from. An
// Index is a snapshot: backups written or deleted since are not in it.
type Index struct {
	store storage.Backend
	// Backups are the ids found, newest (greatest) first: backup ids sort
	// by the time their run started (format.NextBackupID).
	Backups []Backup
}

// ReadIndex lists backups/ of store. Keys that are not a backup's
// manifest.json or progress.json, or whose id does not have the form of a
// backup id (format.ParseManifestKey), are left out. A listing error is
// returned as "list backups in <location>: ..." (storage.ErrTransient
// stays testable).
func ReadIndex(ctx context.Context, store storage.Backend) (*Index, error) {
	byID := map[string]*Backup{}
	err := store.List(ctx, format.BackupsPrefix(), func(oi storage.ObjectInfo) error {
		id, progress, ok := format.ParseManifestKey(oi.Key)
		if !ok {
			return nil
		}
		b := byID[id]
		if b == nil {
			b = &Backup{ID: id}
			byID[id] = b
		}
		if progress {
			b.HasProgress = true
		} else {
			b.HasManifest = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list backups in %s: %w", store.Location(), err)
	}
	x := &Index{store: store, Backups: make([]Backup, 0, len(byID))}
	for _, b := range byID {
		x.Backups = append(x.Backups, *b)
	}
	slices.SortFunc(x.Backups, func(a, b Backup) int { return strings.Compare(b.ID, a.ID) })
	return x, nil
}

// CompleteIDs returns the ids of the complete backups (with a
// manifest.json), newest first.
func (x *Index) CompleteIDs() []string {
	var ids []string
	for _, b := range x.Backups {
		if b.HasManifest {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// LatestID returns the greatest backup id, complete or not, or "" when
// backups/ holds none: a new backup's id sorts after it.
func (x *Index) LatestID() string {
	if len(x.Backups) == 0 {
		return ""
	}
	return x.Backups[0].ID
}

// LatestCompleteID returns the id of the newest complete backup, readable
// or not, or "" when there is none.
func (x *Index) LatestCompleteID() string {
	for _, b := range x.Backups {
		if b.HasManifest {
			return b.ID
		}
	}
	return ""
}

// Abandoned reports whether b is a run that left only a progress.json and
// that no backup will resume: a newer backup completed since (the resume
// rule, docs/FORMAT.md "Resume"). A progress-only run newer than every
// complete backup is running, or interrupted and resumed by the next run.
func (x *Index) Abandoned(b Backup) bool {
	return !b.HasManifest && b.HasProgress && b.ID < x.LatestCompleteID()
}

// Latest returns the manifest of the latest backup: the newest complete
// one (see the package comment). m is nil, with a nil error, when the
// repository holds no complete backup. When the newest manifest cannot be
// read the error is a *LatestError, whatever older backups hold.
func (x *Index) Latest(ctx context.Context) (*format.Manifest, error) {
	ids := x.CompleteIDs()
	if len(ids) == 0 {
		return nil, nil
	}
	key := format.ManifestKey(ids[0])
	m, err := LoadManifest(ctx, x.store, key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		le := &LatestError{BackupID: ids[0], Key: key, Err: err}
		if len(ids) > 1 {
			le.Older = ids[1]
		}
		return nil, le
	}
	return m, nil
}

// Parent returns the parent of a new incremental backup of application.id
// app ("" for none): the newest complete backup whose manifest reads, its
// id as listed and its manifest, or "" and nil when there is none. When
// that backup is of another application.id the error is an
// *ApplicationError (SameApplication; errors.Is ErrOtherApplication): a
// repository prefix holds one application's chain, and a new backup of
// another one is refused before it writes anything, with --full too (a
// new chain in the same prefix would still make "latest" another
// application's backup). A damaged manifest (ErrDamaged: read in
// full, does not decode) makes its backup unusable, not the repository:
// Parent goes on with the next older one and returns, for each damaged
// backup passed over, a warning naming it for the caller to show. A
// manifest the store failed to deliver (transient, not found) fails
// Parent: a chain must not restart from an older backup because of a
// network failure. A cancelled ctx is returned as ctx.Err().
func (x *Index) Parent(ctx context.Context, app string) (id string, parent *format.Manifest, warnings []string, err error) {
	for _, id := range x.CompleteIDs() {
		m, err := LoadManifest(ctx, x.store, format.ManifestKey(id))
		if err != nil {
			if ctx.Err() != nil {
				return "", nil, warnings, ctx.Err()
			}
			if !errors.Is(err, ErrDamaged) {
				return "", nil, warnings, fmt.Errorf("the latest backup %s, the parent of this one, cannot be read: %w", id, err)
			}
			warnings = append(warnings, fmt.Sprintf("backup %s is damaged and cannot be restored (%v): this backup continues from the latest readable one; restore it or an older one by --backup-id, or start a new chain with backup --full", id, err))
			continue
		}
		if err := SameApplication(m, app); err != nil {
			return "", nil, warnings, err
		}
		return id, m, warnings, nil
	}
	return "", nil, warnings, nil
}

// ProgressError is the error for an interrupted backup whose progress
// manifest (format.ProgressKey) was read in full and does not decode
// (ErrDamaged): no backup can resume it, and running the same command again
// reads the same bytes. Deleting Key is the way out: the next backup then
// starts a new run (docs/FORMAT.md "Resume"). Test with errors.As.
type ProgressError struct {
	BackupID string
	Key      string // backups/<id>/progress.json
	Err      error  // LoadManifest's error; wraps ErrDamaged
}

func (e *ProgressError) Error() string {
	return fmt.Sprintf("interrupted backup %s cannot be resumed: %v (delete %s to start a new backup instead)", e.BackupID, e.Err, e.Key)
}

func (e *ProgressError) Unwrap() error { return e.Err }

// Resumable returns the run a new backup resumes, its id as listed and its
// progress manifest: the newest run that left only a progress.json and is
// newer than parentID (Parent's id; "" when there is no parent, and then
// any such run is), or "" and nil when there is none. Its progress.json
// failing to read or validate is an error naming the run and how to start a
// new backup instead (a *ProgressError when it does not decode); a run of another application.id than app is an
// *ApplicationError (SameApplication), as for Parent.
func (x *Index) Resumable(ctx context.Context, parentID, app string) (id string, m *format.Manifest, err error) {
	for _, b := range x.Backups {
		if b.HasProgress && !b.HasManifest && b.ID > parentID {
			id = b.ID // newest first: the first one
			break
		}
	}
	if id == "" {
		return "", nil, nil
	}
	if m, err = LoadManifest(ctx, x.store, format.ProgressKey(id)); err != nil {
		if errors.Is(err, ErrDamaged) && !storage.IsTransient(err) {
			return "", nil, &ProgressError{BackupID: id, Key: format.ProgressKey(id), Err: err}
		}
		return "", nil, fmt.Errorf("interrupted backup %s cannot be resumed: %w (delete %s to start a new backup instead)",
			id, err, format.ProgressKey(id))
	}
	if err := SameApplication(m, app); err != nil {
		return "", nil, err
	}
	return id, m, nil
}

// ManifestOption changes how Manifest resolves "latest".
type ManifestOption func(*manifestOptions)

type manifestOptions struct{ latestAsID bool }

// LatestAsID makes Manifest resolve "latest" to the newest complete
// backup, readable or not, and load it as if its id had been named: a
// manifest that cannot be read is that backup's error ("backup <id>: ...",
// ErrDamaged or the storage error), not a *LatestError. For a reader that
// reports the damage of the latest backup (verify) rather than refusing
// to use it.
func LatestAsID() ManifestOption { return func(o *manifestOptions) { o.latestAsID = true } }

// Manifest loads the manifest of a complete backup: id "" or "latest"
// means the latest backup (Latest: an unreadable newest manifest is a
// *LatestError, never a silent fall-back to an older backup; see
// LatestAsID), any other id that backup. The errors wrap ErrNoBackup when
// the repository holds no complete backup, when id is not a backup id, and
// when the backup has no manifest.json (with a progress.json only, the
// message says it is running, interrupted or abandoned, and names the
// latest complete backup). An explicit id's manifest that cannot be read is
// "backup <id>: ..." wrapping LoadManifest's error. The repository is
// listed for "latest" and when an explicit id has no manifest.json.
func Manifest(ctx context.Context, store storage.Backend, id string, opts ...ManifestOption) (*format.Manifest, error) {
	var o manifestOptions
	for _, opt := range opts {
		opt(&o)
	}
	if id == "" || id == "latest" {
		x, err := ReadIndex(ctx, store)
		if err != nil {
			return nil, err
		}
		if o.latestAsID {
			if latest := x.LatestCompleteID(); latest != "" {
				return backupManifest(ctx, store, latest)
			}
		}
		m, err := x.Latest(ctx)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%w: %s holds no complete backup", ErrNoBackup, store.Location())
		}
		if m.State != format.StateComplete {
			return nil, fmt.Errorf("%w: backup %s is not complete", ErrNoBackup, m.BackupID)
		}
		return m, nil
	} else if !format.ValidBackupID(id) {
		return nil, fmt.Errorf("%w: %q is not a backup id (like 20261129T074512.345Z-9f3a01bc)", ErrNoBackup, id)
	}
	return backupManifest(ctx, store, id)
}

// backupManifest loads the manifest of the complete backup id (a valid
// backup id); see Manifest.
func backupManifest(ctx context.Context, store storage.Backend, id string) (*format.Manifest, error) {
	m, err := LoadManifest(ctx, store, format.ManifestKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		if err := incomplete(ctx, store, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s has no backup %s (no %s)", ErrNoBackup, store.Location(), id, format.ManifestKey(id))
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	if m.State != format.StateComplete {
		return nil, fmt.Errorf("%w: backup %s is not complete", ErrNoBackup, id)
	}
	return m, nil
}

// incompleteError is Manifest's error for a backup id with a progress.json
// and no manifest.json. It wraps ErrNoBackup (nothing to restore) without
// its "no such backup" wording: the backup exists.
// With a progress.json that does not decode it also wraps that
// *ProgressError: no backup resumes the run.
type incompleteError struct {
	msg      string
	progress *ProgressError // nil unless the progress.json does not decode
}

func (e *incompleteError) Error() string { return e.msg }
func (e *incompleteError) Unwrap() []error {
	if e.progress != nil {
		return []error{ErrNoBackup, e.progress}
	}
	return []error{ErrNoBackup}
}

// shardedIncomplete words incomplete's message for a sharded run's cut
// pm: the run, the shards done and pending (each shard's progress,
// format.ShardProgressKey, with shard_run.done), and how to finish it (an
// unsharded backup does not resume a sharded run).
func shardedIncomplete(ctx context.Context, store storage.Backend, pm *format.Manifest) string {
	sr := pm.ShardRun
	var done, pending []string
	for i := range sr.Shards {
		sm, err := LoadManifest(ctx, store, format.ShardProgressKey(pm.BackupID, i))
		if err == nil && sm.ShardRun != nil && sm.ShardRun.Done {
			done = append(done, strconv.Itoa(i))
		} else {
			pending = append(pending, strconv.Itoa(i))
		}
	}
	list := func(l []string) string { return cmp.Or(strings.Join(l, ", "), "none") }
	example := ""
	if len(pending) > 0 {
		example = fmt.Sprintf(", e.g. kafkastreams-dr backup -c CONFIG --shard %s/%d --shard-run %s", pending[0], sr.Shards, sr.Run)
	}
	return fmt.Sprintf("backup %s is not complete: it is sharded run %q of %d shards (shards done: %s; pending: %s) and cannot be restored before every shard has finished: run the pending shards with the run's config and run id%s (in a Kubernetes Indexed Job, its failed indexes are retried)",
		pm.BackupID, sr.Run, sr.Shards, list(done), list(pending), example)
}

// incomplete returns an *incompleteError when backup id has only a
// progress.json: running, or interrupted and resumed by the next backup,
// or abandoned when a newer backup completed since (Index.Abandoned). It
// names the latest complete backup. It returns nil when id has no
// progress.json either, or when the repository cannot tell (the caller's
// "no such backup" stands).
func incomplete(ctx context.Context, store storage.Backend, id string) error {
	if _, err := store.Stat(ctx, format.ProgressKey(id)); err != nil {
		return nil
	}
	x, err := ReadIndex(ctx, store)
	if err != nil {
		return nil
	}
	msg, pe := x.incompleteState(ctx, id)
	latest := x.LatestCompleteID()
	if latest == "" {
		return &incompleteError{msg + "; the repository holds no complete backup yet", pe}
	}
	return &incompleteError{fmt.Sprintf("%s; the latest complete backup is %s (--backup-id %s, or latest)", msg, latest, latest), pe}
}

// incompleteState words the state of backup id, which has a progress.json
// and no manifest.json: "backup <id> is not complete: ..." (running or
// interrupted, abandoned, a progress.json that does not decode, with pe
// set, or a sharded run's shards done and pending).
func (x *Index) incompleteState(ctx context.Context, id string) (msg string, pe *ProgressError) {
	msg = fmt.Sprintf("backup %s is not complete: it is running or interrupted (only %s; the next backup resumes it) and cannot be restored", id, format.ProgressKey(id))
	if x.Abandoned(Backup{ID: id, HasProgress: true}) {
		return fmt.Sprintf("backup %s is not complete: it was interrupted and abandoned (only %s; a newer backup completed since, no backup resumes it) and cannot be restored", id, format.ProgressKey(id)), nil
	}
	pm, err := LoadManifest(ctx, x.store, format.ProgressKey(id))
	switch {
	case errors.Is(err, ErrDamaged) && !storage.IsTransient(err):
		pe = &ProgressError{BackupID: id, Key: format.ProgressKey(id), Err: err}
		msg = fmt.Sprintf("backup %s is not complete: it was interrupted and its %s does not decode (%v): no backup can resume it, and it cannot be restored", id, pe.Key, err)
	case err == nil && pm.ShardRun != nil:
		msg = shardedIncomplete(ctx, x.store, pm)
	}
	return msg, pe
}

// NewerUnfinished returns a warning for a reader of "latest" that resolved
// to the complete backup id while a newer backup has not completed (only a
// progress.json: running, interrupted, or a sharded run with shards
// pending; Manifest skips it): one sentence naming that backup, its state
// (incomplete's wording, the shards done and pending for a sharded run)
// and that id is what is read. It is "" when no backup newer than id lacks
// its manifest.json, and when the repository cannot be listed (the read of
// id stands on its own).
func NewerUnfinished(ctx context.Context, store storage.Backend, id string) string {
	x, err := ReadIndex(ctx, store)
	if err != nil {
		return ""
	}
	for _, b := range x.Backups { // newest first
		if b.ID <= id {
			break
		}
		if b.HasProgress && !b.HasManifest {
			msg, _ := x.incompleteState(ctx, b.ID)
			return fmt.Sprintf("latest is backup %s, the newest complete one; a newer %s", id, strings.TrimPrefix(msg, "backup "))
		}
	}
	return ""
}
