package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Exit codes of every command. They are listed once, here, and shown
// under EXIT STATUS in every command's --help.
const (
	exitOK        = 0   // success
	exitError     = 1   // the run failed (cluster or storage error, bug)
	exitUsage     = 2   // bad flags or arguments, invalid config, the run was refused, or the backup is damaged
	exitPartial   = 3   // the run finished but not everything was done (see the summary)
	exitUndecided = 4   // state check: some stores could not be judged (unknown), none must be wiped
	exitLocked    = 11  // another run holds the repository lock (restic's code for "already locked")
	exitCancelled = 130 // interrupted by SIGINT or SIGTERM
)

// exitStatusHelp is the EXIT STATUS section of every command's help.
const exitStatusHelp = `EXIT STATUS
  0    success
  1    error: the run failed (cluster, storage or network error), or a restore
       failed its state check (restored changelogs hold another state than the
       backup's), or a drill phase failed
  2    usage error, invalid config file, or the run was refused (also: the backup
       it reads is damaged, found before anything was written; a re-run cannot help;
       a storage.path or an S3 storage.bucket that does not exist)
  3    partial: the run finished but not everything was done (see the summary);
       state check: a store must be wiped
  4    state check: no store must be wiped, but some could not be judged (unknown)
  11   locked: another backup, prune or restore holds the repository lock (or the
       target cluster's restore lock); nothing was done, try again later
  130  interrupted (SIGINT or SIGTERM)
`

// exitErr attaches an exit code and, optionally, the next command to run.
type exitErr struct {
	code int
	err  error
	hint string // printed after the error, e.g. "check the file with: ..."
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// withCode wraps err so that the process exits with code; hint, if not
// empty, tells the user what to run next.
func withCode(code int, err error, hint string) error {
	if err == nil {
		return nil
	}
	return &exitErr{code: code, err: err, hint: hint}
}

// usageError is a problem with the command line: the usage is printed and
// the exit code is 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitCode maps the error returned by a command to the process exit code.
// A cancelled root context (a signal) wins over everything else.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return exitCancelled
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	if errors.Is(err, storage.ErrNoKey) {
		// An object encrypted with a key not configured: a
		// configuration error, whatever the command wrapped it in.
		return exitUsage
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitError
}

// errorHint returns the next-command hint attached to err, if any.
func errorHint(err error) string {
	// An object encrypted with a key not configured: the fix is the
	// config, whatever the command that met it would advise (a re-run
	// meets it again).
	var ke *storage.KeyError
	if errors.As(err, &ke) {
		return keyHint(ke)
	}
	if mk, ok := errors.AsType[*restorer.MissingKeysError](err); ok {
		return keyHint(&storage.KeyError{KeyID: strings.Join(mk.Missing, ", "), Configured: mk.Configured})
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		return ee.hint
	}
	return ""
}

// keyHint is what to do about an object encrypted with a key that is not
// configured (docs/OPERATIONS.md, "Encryption").
func keyHint(ke *storage.KeyError) string {
	if len(ke.Configured) == 0 {
		return fmt.Sprintf("the repository is encrypted: set storage.encryption.key_file (or key_env) in the config file (-c FILE) to the key with id %s", ke.KeyID)
	}
	return fmt.Sprintf("add the key with id %s to storage.encryption.previous_keys in the config file (-c FILE); a key is dropped only once no kept backup lists it and no restore or drill report needs it (kafkastreams-dr list -c FILE shows both)", ke.KeyID)
}
