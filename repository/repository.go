// Package repository reads and writes the objects of a backup repository
// the way every command must agree on, each rule written once: which
// backup is the latest, the parent and the resumable run of a new backup
// (the index, ReadIndex), whether a manifest that cannot be read is
// damaged (re-running will not help) or was not read because the store
// failed (re-running will), the restore reports and journals, and the
// repository's locks. It is the floor between the commands' readers and
// writers (backup, restorer, catalog, verify, estimate) and the format and
// storage packages, which know only bytes and objects.
//
// The rule for "latest" (docs/FORMAT.md, "Write order"): the latest backup
// is the newest complete one, the greatest backup id with a manifest.json,
// whether or not that manifest reads. An older backup is never put in its
// place silently: a reader that cannot read it fails naming its key, and an
// older backup is used only when asked for by id.
package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// ErrDamaged is wrapped by LoadManifest's error when the manifest was read
// in full but does not decode or validate (truncated, overwritten, of a
// newer format_version): damage to the stored object, which no re-run
// repairs. Test with errors.Is. A storage failure reading it wraps
// storage.ErrTransient (or storage.ErrNotFound) instead.
var ErrDamaged = errors.New("damaged manifest")

// damagedError keeps the decoder's error and ErrDamaged.
type damagedError struct{ err error }

func (e *damagedError) Error() string   { return e.err.Error() }
func (e *damagedError) Unwrap() []error { return []error{e.err, ErrDamaged} }

// LoadManifest reads and validates the manifest (manifest.json or
// progress.json) at key. Errors name the key: a storage error is returned
// wrapped as "read manifest <key>: ..." (storage.ErrNotFound and
// storage.ErrTransient stay testable), a manifest that does not decode or
// validate, whose backup_id is not the backup its key names, or that is
// above the read bounds (MaxObjectBytes, ErrObjectTooLarge: refused before
// it is decoded), as "manifest <key>: ..." wrapping ErrDamaged. A
// cancelled ctx is never reported as damage. The manifest is read in full
// before it is decoded, at most MaxObjectBytes of it: memory follows its
// size, within the bounds, never a count it claims.
func LoadManifest(ctx context.Context, store storage.Backend, key string) (*format.Manifest, error) {
	// The store checks its checksum of the object (S3: storage.ErrCorrupt)
	// at the end of the body, which readBounded reads to: a flipped byte
	// that still decodes (in a SHA-256, an offset) is damage to this
	// manifest, not to the segment it names.
	b, err := readBounded(ctx, store, key)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, fmt.Errorf("read manifest %s: %w", key, ctx.Err())
	case errors.Is(err, ErrObjectTooLarge):
		return nil, &damagedError{fmt.Errorf("manifest %w", err)}
	case storage.IsCorrupt(err):
		// The store's own checksum of the object failed twice, or the
		// object is not what was stored: an encrypted envelope whose
		// header is cut or changed (storage.Encrypt fails at Get).
		return nil, &damagedError{fmt.Errorf("manifest %s: %w", key, errors.Unwrap(err))}
	default:
		return nil, fmt.Errorf("read manifest %s: %w", key, errors.Unwrap(err))
	}
	m, err := format.ReadManifest(bytes.NewReader(b))
	if err == nil {
		// A manifest names its backup, and its key does too: one stored
		// under another backup's key (swapped, copied) would restore that
		// other backup's data as this one's, exit 0.
		if id, _, ok := format.ParseManifestKey(key); ok && m.BackupID != id {
			err = fmt.Errorf("it holds the manifest of backup %s, not of backup %s (a manifest swapped or copied under another backup's key)", m.BackupID, id)
		}
	}
	if err != nil {
		return nil, &damagedError{fmt.Errorf("manifest %s: %w", key, err)}
	}
	return m, nil
}

// LatestError is Latest's error when the newest complete backup exists but
// its manifest cannot be read. It wraps the read error, so
// storage.IsTransient and errors.Is(err, ErrDamaged) tell the two kinds
// apart, and its message names the manifest's key, the newest older
// backup, and, for a store that failed, that running the command again may
// do. The ways out of a
// damaged manifest are commands of the CLI (verify the backup, restore
// Older by id, take a new full backup): the CLI spells them from BackupID
// and Older with its own config file, so that they run as printed.
type LatestError struct {
	BackupID string // the newest complete backup
	Key      string // its manifest
	Older    string // the newest older complete backup, "" if none
	Err      error
}

func (e *LatestError) Error() string {
	var fix string
	switch {
	case storage.IsTransient(e.Err):
		fix = "the storage failed, the backup may be intact: run the command again"
	case errors.Is(e.Err, storage.ErrNoKey):
		fix = "its encryption key is not configured (storage.encryption)"
	case errors.Is(e.Err, storage.ErrNotFound):
		fix = "it was deleted while it was read (is a prune running?): run the command again"
	default:
		fix = "the manifest is damaged"
		if e.Older != "" {
			fix += fmt.Sprintf("; an older complete backup is restored by naming it (--backup-id %s)", e.Older)
		}
	}
	return fmt.Sprintf("the latest backup %s cannot be read, and no older backup is used in its place: %v; %s", e.BackupID, e.Err, fix)
}

func (e *LatestError) Unwrap() error { return e.Err }

// Latest lists the repository (ReadIndex) and returns the manifest of its
// latest backup (Index.Latest): nil with a nil error when it holds no
// complete backup, a *LatestError when the newest manifest cannot be read.
func Latest(ctx context.Context, store storage.Backend) (*format.Manifest, error) {
	x, err := ReadIndex(ctx, store)
	if err != nil {
		return nil, err
	}
	return x.Latest(ctx)
}
