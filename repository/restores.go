package repository

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file reads and writes the objects restores keep under restores/
// (docs/FORMAT.md, "Restore reports" and "Restore journals"): the report
// of each finished restore and the journal of the restores of one backup
// into one target cluster. The restorer writes them; estimate, verify
// --against-cluster, state check and prune read them.

// SaveReport stores rep as restores/<rep.RestoreID>/report.json
// (format.RestoreReportKey), indented JSON, only if no report is there
// (read first, then Put): a restore report is never overwritten
// (issue 15: a second restore that reused the first's restore id
// overwrote its report, and the first drill's scorecard, bound to that
// report's SHA-256, no longer verified). A report already there with other
// bytes is returned as an error wrapping ErrReportExists (the same bytes:
// nil); a storage error as "write restore report <key>: ..."
// (storage.ErrTransient stays testable).
func SaveReport(ctx context.Context, store storage.Backend, rep *format.RestoreReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	key := format.RestoreReportKey(rep.RestoreID)
	// Read, then Put: not PutIfAbsent, which stores its bytes as they
	// are, so an encrypted repository (storage.Encrypt) would hold the
	// report in plaintext. Two writers between the read and the Put (the
	// shards of one sharded restore ending together) both write, the
	// later's report kept: they differ in their times only.
	was, err := readWhole(ctx, store, key)
	switch {
	case err == nil && bytes.Equal(was, b):
		return nil
	case err == nil:
		return fmt.Errorf("write restore report %s: %w", key, ErrReportExists)
	case !errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("write restore report %s: %w", key, err)
	}
	if err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write restore report %s: %w", key, err)
	}
	return nil
}

// ErrReportExists is wrapped by SaveReport's error when a report with
// other bytes is already stored under the restore id: that report is the
// restore's, and is kept. Test with errors.Is.
var ErrReportExists = errors.New("a report of this restore is already stored; it is kept as it is")

// ErrUnreadableReport is wrapped by LoadReport's error when the report was
// read in full but does not decode (truncated, overwritten): damage to that
// object, which no re-run repairs; and when it is encrypted with a key the
// keyring does not hold (storage.ErrNoKey, wrapped too: a key dropped after
// a rotation). Test with errors.Is. A storage failure reading it never
// wraps it.
var ErrUnreadableReport = errors.New("unreadable restore report")

// unreadableReportError keeps the decoder's (or the keyring's) error and
// ErrUnreadableReport; msg, when set, is its text instead of err's.
type unreadableReportError struct {
	err error
	msg string
}

func (e *unreadableReportError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}
func (e *unreadableReportError) Unwrap() []error { return []error{e.err, ErrUnreadableReport} }

// LoadReport reads the report of the restore restoreID. A storage error is
// returned as "read <key>: ..." (storage.ErrNotFound and
// storage.ErrTransient stay testable), a report that does not decode as
// "restore report <key> is damaged: ..." wrapping ErrUnreadableReport,
// and so is a report that is not a regular file (storage.ErrNotRegular: a
// FIFO or directory in a local repository), never "no report". The report
// is read in full before it is decoded, so that the two never mix. A
// report encrypted with a key storage.encryption does not hold is
// "restore report <key> is encrypted with key id <id>, ...", wrapping
// ErrUnreadableReport and storage.ErrNoKey (the readers that skip an
// unreadable report skip it: estimate).
func LoadReport(ctx context.Context, store storage.Backend, restoreID string) (*format.RestoreReport, error) {
	key := format.RestoreReportKey(restoreID)
	b, err := readWhole(ctx, store, key)
	if errors.Is(err, storage.ErrNotRegular) || errors.Is(err, ErrObjectTooLarge) {
		return nil, fmt.Errorf("restore report %s is damaged: %w; the backups are not affected (list, describe, verify and restore of a backup still work), only this record of restore %s is lost: remove %s, and a new restore writes a new report",
			key, &unreadableReportError{err: err}, restoreID, key)
	}
	if ke, ok := errors.AsType[*storage.KeyError](err); ok {
		// A key dropped after a rotation: the backups need it no more,
		// this record of a restore still does.
		return nil, &unreadableReportError{err: err, msg: fmt.Sprintf("restore report %s is encrypted with key id %s, which storage.encryption does not hold (configured key ids: %s); the backups are not affected, only this record of restore %s cannot be read: add the key to storage.encryption.previous_keys to read it, or remove %s",
			key, ke.KeyID, keyIDsOrNone(ke.Configured), restoreID, key)}
	}
	if err != nil {
		return nil, err
	}
	var rep format.RestoreReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("restore report %s is damaged: %w; the backups are not affected (list, describe, verify and restore of a backup still work), only this record of restore %s is lost: a new restore writes a new report",
			key, &unreadableReportError{err: format.JSONError(err)}, restoreID)
	}
	return &rep, nil
}

// ReportIDs returns the ids of the repository's restore reports, newest
// (greatest) first: restore ids sort by start time. It lists restores/ and
// reads nothing; journals, locks and keys that are not a report
// (format.ParseRestoreReportKey) are left out. A listing error is returned
// as "list restore reports in <location>: ...".
func ReportIDs(ctx context.Context, store storage.Backend) ([]string, error) {
	return listIDs(ctx, store, format.RestoresPrefix(), format.ParseRestoreReportKey, "restore reports")
}

// readWhole reads the object key in full (readBounded): a storage error
// is returned as "read <key>: ..." (storage.ErrNotFound and
// storage.ErrTransient stay testable), an object above the read bounds
// wrapping ErrObjectTooLarge.
func readWhole(ctx context.Context, store storage.Backend, key string) ([]byte, error) {
	return readBounded(ctx, store, key)
}

// listIDs lists prefix and returns the ids parse finds in its keys,
// greatest (newest) first; a listing error is returned as
// "list <what> in <location>: ...".
func listIDs(ctx context.Context, store storage.Backend, prefix string, parse func(key string) (string, bool), what string) ([]string, error) {
	var ids []string
	err := store.List(ctx, prefix, func(oi storage.ObjectInfo) error {
		if id, ok := parse(oi.Key); ok {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", what, store.Location(), err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// LatestReport returns the report of the latest finished restore of
// applicationID into the cluster with id targetClusterID ("" matches any,
// for either), or nil with a nil error when there is none. It reads the
// reports newest first until one matches; any error of ReportIDs or
// LoadReport is returned (a report that cannot be read is never skipped).
func LatestReport(ctx context.Context, store storage.Backend, applicationID, targetClusterID string) (*format.RestoreReport, error) {
	ids, err := ReportIDs(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		rep, err := LoadReport(ctx, store, id)
		if err != nil {
			return nil, err
		}
		if (applicationID == "" || rep.ApplicationID == applicationID) && (targetClusterID == "" || rep.TargetClusterID == targetClusterID) {
			return rep, nil
		}
	}
	return nil, nil
}

// LoadJournal reads the journal of the restores of backupID into the
// cluster with id clusterID (format.RestoreJournalKey), or returns nil
// with a nil error when there is none. A storage error is returned as
// "read restore journal: ...", a journal that does not decode, is not a
// regular file (storage.ErrNotRegular) or is not what was stored
// (storage.ErrCorrupt: an encrypted one that does not authenticate), as a
// *JournalError ("restore journal <key>: ...").
func LoadJournal(ctx context.Context, store storage.Backend, backupID, clusterID string) (*format.RestoreJournal, error) {
	key := format.RestoreJournalKey(backupID, clusterID)
	b, err := readBounded(ctx, store, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case errors.Is(err, storage.ErrNotRegular):
		return nil, &JournalError{Key: key, Err: errors.Unwrap(err)}
	case errors.Is(err, ErrObjectTooLarge):
		return nil, &JournalError{Key: key, Err: err}
	case storage.IsCorrupt(err) && !storage.IsTransient(err) && ctx.Err() == nil:
		// Not what was stored (an encrypted journal that does not
		// authenticate): damage, with the journal's own fix.
		return nil, &JournalError{Key: key, Err: errors.Unwrap(err)}
	case err != nil:
		return nil, fmt.Errorf("read restore journal: %w", err)
	}
	var j format.RestoreJournal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, &JournalError{Key: key, Err: format.JSONError(err)}
	}
	return &j, nil
}

// JournalError is LoadJournal's error for a restore journal that was read
// and does not decode as JSON (format.RestoreJournal): running the restore
// again reads the same bytes. Deleting the journal is the way out; the
// restore then no longer knows which target topics it created, so it
// treats them as existing topics, not its own. Its message is "restore
// journal <key>: <decode error>". Test with errors.As.
type JournalError struct {
	Key string // format.RestoreJournalKey
	Err error  // the JSON decode error
}

func (e *JournalError) Error() string { return fmt.Sprintf("restore journal %s: %v", e.Key, e.Err) }
func (e *JournalError) Unwrap() error { return e.Err }

// SaveJournal stores j, indented JSON, as the journal of j.BackupID's
// restores into j.TargetClusterID (format.RestoreJournalKey), replacing
// the one there. The caller sets j.UpdatedAt. A storage error is returned
// as "write restore journal <key>: ...".
func SaveJournal(ctx context.Context, store storage.Backend, j *format.RestoreJournal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	key := format.RestoreJournalKey(j.BackupID, j.TargetClusterID)
	if err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write restore journal %s: %w", key, err)
	}
	return nil
}

// JournalKey is one stored restore journal (format.RestoreJournalKey):
// its key, and the id of the backup whose restores it records.
type JournalKey struct {
	Key      string
	BackupID string
}

// JournalKeys lists restores/journals/ and returns every key under it, in
// key order, each with the backup id its first path element names ("" when
// that is not a backup id: such a key is no journal this tool wrote). It
// reads nothing. A listing error is returned as "list restore journals in
// <location>: ...".
func JournalKeys(ctx context.Context, store storage.Backend) ([]JournalKey, error) {
	var out []JournalKey
	err := store.List(ctx, format.RestoreJournalsPrefix(), func(oi storage.ObjectInfo) error {
		id, _, _ := strings.Cut(strings.TrimPrefix(oi.Key, format.RestoreJournalsPrefix()), "/")
		if !format.ValidBackupID(id) {
			id = ""
		}
		out = append(out, JournalKey{Key: oi.Key, BackupID: id})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list restore journals in %s: %w", store.Location(), err)
	}
	return out, nil
}

// RestoreLockKeys lists restores/locks/ and returns the key of every
// restore lock there (format.RestoreLockKey), held or stale, in key order.
// It reads nothing. A listing error is returned as "list restore locks in
// <location>: ...".
func RestoreLockKeys(ctx context.Context, store storage.Backend) ([]string, error) {
	var keys []string
	err := store.List(ctx, format.RestoreLocksPrefix(), func(oi storage.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list restore locks in %s: %w", store.Location(), err)
	}
	return keys, nil
}

// UnfinishedRestore is a restore journal (format.RestoreJournal) that is
// not complete: a restore of its backup into its cluster was interrupted
// or failed, and the target's topics may be partly written.
type UnfinishedRestore struct {
	Key     string // format.RestoreJournalKey
	Journal *format.RestoreJournal
}

// UnfinishedRestores returns the restore journals into the cluster with id
// clusterID whose restore is not complete (format.RestoreJournal.Complete
// false), in key order. It lists restores/journals/ and reads each journal
// of that cluster; a journal that cannot be read or does not decode is
// returned as LoadJournal's error (never skipped: the restore it records
// cannot be known).
func UnfinishedRestores(ctx context.Context, store storage.Backend, clusterID string) ([]UnfinishedRestore, error) {
	keys, err := JournalKeys(ctx, store)
	if err != nil {
		return nil, err
	}
	var out []UnfinishedRestore
	for _, k := range keys {
		if k.BackupID == "" || k.Key != format.RestoreJournalKey(k.BackupID, clusterID) {
			continue
		}
		j, err := LoadJournal(ctx, store, k.BackupID, clusterID)
		if err != nil {
			return nil, err
		}
		if j != nil && !j.Complete {
			out = append(out, UnfinishedRestore{Key: k.Key, Journal: j})
		}
	}
	return out, nil
}

// keyIDsOrNone is ids joined with ", ", "none" when there are none.
func keyIDsOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// ReportKey is a key id the repository's restore and drill reports are
// encrypted with, and how many of each kind it seals (ReportKeyIDs).
type ReportKey struct {
	KeyID    string `json:"key_id"`
	Restores int    `json:"restore_reports"`
	Drills   int    `json:"drill_reports"`
}

// ReportKeyIDs returns the key ids the restore reports (restores/) and
// drill reports (drills/) are encrypted with, sorted by id: what a key
// rotation must keep configured for estimate, drill history and state
// check to read them, after no kept backup lists the old key any more
// (docs/OPERATIONS.md "Encryption"). None when store cannot tell
// (not a storage.KeyInspector) or every report is plaintext. It lists both
// prefixes and reads each report's envelope header only (one read per
// report). A report deleted meanwhile is left out; any other storage
// error is returned naming the report.
func ReportKeyIDs(ctx context.Context, store storage.Backend) ([]ReportKey, error) {
	ki, ok := store.(storage.KeyInspector)
	if !ok {
		return nil, nil
	}
	restores, err := ReportIDs(ctx, store)
	if err != nil {
		return nil, err
	}
	drills, err := DrillReportIDs(ctx, store)
	if err != nil {
		return nil, err
	}
	byID := map[string]*ReportKey{}
	count := func(key string, drill bool) error {
		id, err := ki.ObjectKeyID(ctx, key)
		if errors.Is(err, storage.ErrNotFound) || err == nil && id == "" {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the envelope header of %s: %w", key, err)
		}
		rk := byID[id]
		if rk == nil {
			rk = &ReportKey{KeyID: id}
			byID[id] = rk
		}
		if drill {
			rk.Drills++
		} else {
			rk.Restores++
		}
		return nil
	}
	for _, id := range restores {
		if err := count(format.RestoreReportKey(id), false); err != nil {
			return nil, err
		}
	}
	for _, id := range drills {
		if err := count(format.DrillReportKey(id), true); err != nil {
			return nil, err
		}
	}
	out := make([]ReportKey, 0, len(byID))
	for _, rk := range byID {
		out = append(out, *rk)
	}
	slices.SortFunc(out, func(a, b ReportKey) int { return strings.Compare(a.KeyID, b.KeyID) })
	return out, nil
}
