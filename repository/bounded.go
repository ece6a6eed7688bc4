package repository

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// MaxObjectBytes is the size in bytes of the largest JSON object the
// repository layer reads (manifests, progress, restore reports and
// journals, drill reports): 1 GiB. A manifest names every segment of its
// backup chain in about 700 bytes each, so 1 GiB holds about 1.5 million
// segments (50,000 partitions of 30 segments); the benchmarks' 2,000
// partitions weigh 2.2 MB (docs/RELIABILITY.md, "Manifest size"). Reading
// and decoding a manifest the backup wrote allocates about 7 times its
// size.
const MaxObjectBytes = 1 << 30

// maxObjectBytes is MaxObjectBytes, lowered by tests.
var maxObjectBytes int64 = MaxObjectBytes

// Go's encoding/json allocates for each JSON object or array it decodes
// into a struct or slice, whatever its size in the input: about 670 bytes
// for an empty object in the manifest's topics (a format.Topic and the
// slice's growth), so a 1.2 MB manifest of 300,000 "{}" allocated 240 MB.
// The backup writes one object or array per 270 bytes or more (a segment,
// a partition, a config, a group offset). readBounded refuses an object
// holding more than freeContainers of them at fewer than
// minBytesPerContainer bytes each, before it is decoded: reading and
// decoding then allocate at most about 27 x its size and 3 MB (measured by
// TestReadsOfJSONObjectsAreBoundedBySize).
const (
	minBytesPerContainer = 32
	freeContainers       = 4096
)

// ErrObjectTooLarge is wrapped by the error of a read of a repository JSON
// object that is above MaxObjectBytes, or that holds more JSON objects and
// arrays than its size allows (one per 32 bytes): damage, or an object the
// tool did not write, which no re-run repairs. Test with errors.Is.
var ErrObjectTooLarge = errors.New("repository object above the read bounds")

// boundError is readBounded's refusal: its message and ErrObjectTooLarge.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }
func (e *boundError) Unwrap() error { return ErrObjectTooLarge }

// readBounded reads the JSON object key in full, at most maxObjectBytes
// bytes of it, and checks that decoding it allocates in proportion to its
// size (containers). A storage error is returned as "read <key>: ..."
// (storage.ErrNotFound, storage.ErrTransient, storage.ErrCorrupt and
// storage.ErrNotRegular stay testable); an object above the bounds as a
// *boundError naming the key, its size and the bound.
func readBounded(ctx context.Context, store storage.Backend, key string) ([]byte, error) {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(b)) > maxObjectBytes {
		size := "more than that"
		if oi, err := store.Stat(ctx, key); err == nil {
			size = fmt.Sprintf("%d bytes", oi.Size)
		}
		return nil, &boundError{fmt.Sprintf("%s is %s, above the %d bytes (%s) kafkastreams-dr reads of one repository object: the backup writes no manifest, report or journal this large (1 GiB holds about 1.5 million segments); it was not read",
			key, size, maxObjectBytes, bytesString(maxObjectBytes))}
	}
	if n := containers(b); n > freeContainers && n*minBytesPerContainer > int64(len(b)) {
		return nil, &boundError{fmt.Sprintf("%s holds %d JSON objects and arrays in %d bytes, one per %.1f bytes, above the one per %d bytes kafkastreams-dr decodes (the backup writes one per 270 bytes or more; each decoded one allocates hundreds of bytes): it was not decoded",
			key, n, len(b), float64(len(b))/float64(n), minBytesPerContainer)}
	}
	return b, nil
}

// ReadObject reads the JSON object key of the repository within the read
// bounds every reader of the repository layer uses (MaxObjectBytes, one
// JSON object or array per 32 bytes at most), for the objects other
// packages keep (a sharded restore's run objects). Errors as readBounded:
// "read <key>: ..." for a storage error, ErrObjectTooLarge naming the key,
// its size and the bound.
func ReadObject(ctx context.Context, store storage.Backend, key string) ([]byte, error) {
	return readBounded(ctx, store, key)
}

// containers counts the JSON objects and arrays in b: the '{' and '['
// outside strings. Malformed JSON is counted all the same; the decoder
// refuses it afterwards.
func containers(b []byte) int64 {
	var n int64
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == '{' || c == '['):
			n++
		}
	}
	return n
}

// bytesString shows n bytes in the largest binary unit that divides it.
func bytesString(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
