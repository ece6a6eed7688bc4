package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrReadOnly is wrapped by every write through a ReadOnly backend (Put,
// PutIfAbsent, Delete, and the maintenance writes AbortStaleUploads,
// RemoveStaleTemps and CheckConditionalWrites). Test with errors.Is. It
// means a command that only reads the repository tried to change it: a bug
// in that command, never a property of the stored data.
var ErrReadOnly = errors.New("storage is read-only")

// ReadOnly returns b for a command that only reads the repository: Get,
// Stat, List and Location pass through to b unchanged (same results, same
// errors); every write is refused before it reaches b, with an error that
// wraps ErrReadOnly and names the operation, the key, b's location and
// command (e.g. "verify"), so nothing under b is ever created, replaced or
// deleted through it. The reader given to a refused Put is not read.
//
// The multipart and temporary-file clean-ups that a backup runs through
// optional methods (AbortStaleUploads, RemoveStaleTemps; S3's
// CheckConditionalWrites probe) are refused the same way, so a caller's type
// assertion for them finds a refusal rather than silently skipping them.
//
// Safe for concurrent use when b is. The readers of docs/DESIGN.md's
// "Shape" (list, describe, verify, estimate, offsets, state check, the
// dry runs) open their store through it.
func ReadOnly(b Backend, command string) Backend {
	return &readOnly{b: b, command: command}
}

type readOnly struct {
	b       Backend
	command string
}

// refuse is the error of a write through r: what names the operation and
// its object, e.g. `put "backups/x/manifest.json"`.
func (r *readOnly) refuse(what string) error {
	return fmt.Errorf("%s in %s refused: %s only reads the repository, so it opens it read-only (a write is a bug in %s: report it): %w",
		what, r.b.Location(), r.command, r.command, ErrReadOnly)
}

func (r *readOnly) Put(ctx context.Context, key string, _ io.Reader, _ int64) error {
	return r.refuse(fmt.Sprintf("put %q", key))
}

func (r *readOnly) PutIfAbsent(ctx context.Context, key string, _ []byte) error {
	return r.refuse(fmt.Sprintf("put-if-absent %q", key))
}

func (r *readOnly) Delete(ctx context.Context, key string) error {
	return r.refuse(fmt.Sprintf("delete %q", key))
}

func (r *readOnly) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return r.b.Get(ctx, key)
}

func (r *readOnly) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return r.b.Stat(ctx, key)
}

func (r *readOnly) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	return r.b.List(ctx, prefix, fn)
}

func (r *readOnly) Location() string { return r.b.Location() }

// AbortStaleUploads refuses: aborting multipart uploads is a write.
func (r *readOnly) AbortStaleUploads(ctx context.Context, _ time.Duration) (int, error) {
	return 0, r.refuse("abort the incomplete multipart uploads")
}

// RemoveStaleTemps refuses: removing temporary files is a write.
func (r *readOnly) RemoveStaleTemps(ctx context.Context, dir string, _ time.Duration) (int, error) {
	return 0, r.refuse(fmt.Sprintf("remove the temporary files under %q", dir))
}

// CheckConditionalWrites refuses: the probe writes an object.
func (r *readOnly) CheckConditionalWrites(ctx context.Context, key string) error {
	return r.refuse(fmt.Sprintf("conditional-write probe %q", key))
}

// Retention passes through to b when b is a RetentionReader (reading an
// object's retention is no write), and is the zero Retention otherwise.
func (r *readOnly) Retention(ctx context.Context, key string) (Retention, error) {
	if rr, ok := r.b.(RetentionReader); ok {
		return rr.Retention(ctx, key)
	}
	return Retention{}, nil
}

// ObjectKeyID passes through to b when b is a KeyInspector (reading an
// envelope header is no write), and is "" (plaintext) otherwise.
func (r *readOnly) ObjectKeyID(ctx context.Context, key string) (string, error) {
	if ki, ok := r.b.(KeyInspector); ok {
		return ki.ObjectKeyID(ctx, key)
	}
	return "", nil
}

// ConfiguredKeyIDs passes through to b when b is a KeyInspector, and is
// none otherwise.
func (r *readOnly) ConfiguredKeyIDs() []string {
	if ki, ok := r.b.(KeyInspector); ok {
		return ki.ConfiguredKeyIDs()
	}
	return nil
}
