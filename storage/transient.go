package storage

import (
	"errors"
	"fmt"
	"io"
)

// ErrTransient marks (wrapped, test with errors.Is or IsTransient) a
// storage failure that says nothing about the stored data and may succeed
// when the command is run again: the store could not be reached or did not
// answer in time, it answered HTTP 5xx, 429 or an S3 throttling or timeout
// code (InternalError, SlowDown, RequestTimeout, ...), the connection was
// reset, or a download ended before the Content-Length the store announced
// — each after the backend's retries were used up (S3Options.RetryTimeout).
//
// An error without it is not necessarily damage: it may be a refusal
// (access denied, missing bucket) or, above this package, the decoding of
// an object that was read in full (a manifest that does not decode, a
// segment whose checksum differs), which is damage to the stored data.
// Backends never mark an error of a complete read as transient, so that
// callers can tell "re-run" from "this object is damaged".
var ErrTransient = errors.New("transient storage error")

// IsTransient reports whether err is, or wraps, a transient storage error
// (see ErrTransient).
func IsTransient(err error) bool { return errors.Is(err, ErrTransient) }

// transientError wraps an error as transient, keeping both the cause
// (errors.As on SDK and net errors still works) and ErrTransient.
type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() []error { return []error{e.err, ErrTransient} }

// markTransient returns err marked as transient; nil stays nil.
func markTransient(err error) error {
	if err == nil || IsTransient(err) {
		return err
	}
	return &transientError{err}
}

// ErrCorrupt marks (wrapped, test with errors.Is or IsCorrupt) a read whose
// bytes differ from the checksum the store keeps with the object (the S3
// SDK's whole-object response checksum validation, CRC32 here) on two
// reads in a row: the stored object is damaged, and no re-run helps. A
// mismatch that a re-read does not repeat was a corruption in transit and
// is ErrTransient instead. Readers report an ErrCorrupt read as damage to
// the object (restorer.DamageError, repository.ErrDamaged, a verify
// problem), never as a storage failure. The filesystem backend keeps no
// checksum of its own and never returns it: there the readers' own
// checks (segment SHA-256, manifest decoding) find the same damage.
var ErrCorrupt = errors.New("stored object does not match its stored checksum")

// IsCorrupt reports whether err is, or wraps, ErrCorrupt.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

// corruptError wraps an error as ErrCorrupt, keeping the cause.
type corruptError struct{ err error }

func (e *corruptError) Error() string   { return e.err.Error() }
func (e *corruptError) Unwrap() []error { return []error{e.err, ErrCorrupt} }

// TransientHint is the advice that goes with a transient storage error, for
// commands to print after it.
func TransientHint(location string) string {
	return fmt.Sprintf("this is a storage or network failure, not damage to the backups: run the command again once %s answers (the storage retries and timeouts are storage.request_timeout and storage.retry_timeout)", location)
}

// ReadTracker wraps the body of a Get and keeps its first read error other
// than io.EOF. A decoder reading a body that failed reports the failure as
// its own verdict (a zstd or segment decoder says "corrupt", a JSON decoder
// "unexpected EOF"); the caller checks Err first and reports the storage
// failure it was (transient or not) instead of damage.
type ReadTracker struct {
	R   io.Reader
	Err error
}

func (t *ReadTracker) Read(p []byte) (int, error) {
	n, err := t.R.Read(p)
	if err != nil && err != io.EOF && t.Err == nil {
		t.Err = err
	}
	return n, err
}
