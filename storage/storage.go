// Package storage is the object store a backup repository lives in: one small
// interface (Backend) with a local-directory backend (NewFilesystem) and an
// S3 backend (NewS3), and two wrappers around the same interface: ReadOnly,
// through which the commands that only read the repository open it (a write
// through it fails with ErrReadOnly), and Encrypt, the client-side
// encryption of every object (docs/FORMAT.md, "Encryption"), through which
// every command opens it. Retries are not a wrapper: the
// S3 backend retries each request itself within S3Options.RetryTimeout (a
// local directory has nothing to retry), and marks what is left after the
// budget ErrTransient. A dry run (restore --dry-run, prune --dry-run) is the
// command opening its store with ReadOnly, not a backend that pretends to
// write.
//
// storage knows nothing of Kafka: keys are opaque slash-separated strings
// relative to the backend's root (a directory, or an S3 bucket and prefix).
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (possibly wrapped) by Get, Stat and Delete-free
// lookups when no object exists under the key. Test with errors.Is.
var ErrNotFound = errors.New("object not found")

// ErrExists is returned by PutIfAbsent when an object already exists under
// the key.
var ErrExists = errors.New("object already exists")

// ErrNotRegular is returned (wrapped, naming the key) by the filesystem
// backend's Get and Stat when the key names something that is not a
// regular file: a FIFO, socket or device, or an empty directory. Such an
// entry cannot be an object this tool wrote (Put writes regular files),
// so it is damage in the repository, never an absent object; List reports
// it so that readers meet it. Get checks the type before it opens, so a
// FIFO never blocks. S3 never returns it.
var ErrNotRegular = errors.New("not a regular file")

// ErrNoSuchBucket is wrapped by an S3 backend's error when the bucket does
// not exist (S3 404 NoSuchBucket, or a bare 404 to HeadBucket): a
// configuration error (the bucket name, the endpoint, path-style
// addressing), never transient. Test with errors.Is.
var ErrNoSuchBucket = errors.New("no such bucket")

// ErrNoCredentials is wrapped by an S3 backend's error when the AWS SDK's
// default credential chain found no credentials (environment, shared
// config/credentials file, web identity/IRSA, ECS container or EC2
// instance role): a configuration error, never transient. The error's
// text is the project's own; the SDK's chain is logged at debug level
// (S3Options.Logger). Test with errors.Is.
var ErrNoCredentials = errors.New("no AWS credentials found")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string    // key relative to the backend root, slash-separated
	Size    int64     // size in bytes
	ModTime time.Time // last modification time as reported by the store
}

// Backend is a flat key/value object store. All methods take the caller's
// context first and are safe for concurrent use.
//
// Contract (checked by the conformance suite in storage/storagetest):
//   - Put is atomic: a reader sees the whole new object or the old state,
//     never a prefix. A failed or cancelled Put leaves no object and no
//     partial data (S3: the multipart upload is aborted).
//   - Read-after-write: once Put returns nil, Get, Stat and List see the object.
//   - List calls fn once per object whose key starts with prefix, in
//     lexicographic key order, across every page; a non-nil error from fn
//     stops the listing and is returned.
//   - Delete of an absent key returns nil.
//   - Keys must be non-empty, must not start or end with '/', and must not
//     contain "." or ".." path elements; others are rejected with an error.
//     The full rules (also: no empty elements, backslashes, NUL bytes or
//     elements starting with TempPrefix; at most 1024 bytes) are in
//     ValidateKey, and the error wraps ErrInvalidKey and names the key.
//   - A List prefix is a plain string prefix, not a directory: "seg-1"
//     matches "seg-1" and "seg-10"; use "dir/" to list one "directory".
type Backend interface {
	// Put stores the bytes read from r under key, replacing any object there.
	// size is the length in bytes, or -1 when unknown (the object is then
	// streamed; S3 uses a multipart upload for large objects). Memory use is
	// bounded and independent of the object's size.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// PutIfAbsent stores data under key only if no object exists there,
	// atomically with respect to other PutIfAbsent calls; otherwise it
	// returns ErrExists. Used for the repository lock. A backend that
	// retries may return nil when the object found holds exactly data (its
	// own earlier attempt stored it), so data must be unique to the caller.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Get opens the object for reading. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat returns the object's size and modification time.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List calls fn for every object whose key starts with prefix.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Delete removes the object; deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error
	// Location names the backend root for messages, e.g.
	// "s3://bucket/prefix" or "/var/backups/kafka". It never contains secrets.
	Location() string
}
