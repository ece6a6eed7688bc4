package storage

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
)

// DirSyncs collects the directory fsyncs that Filesystem puts leave
// pending under a context made by WithDeferredDirSyncs, so that a writer
// of many objects (a backup of thousands of partitions, one segment
// directory each) fsyncs each directory once per Sync instead of once or
// twice per object. Create it with NewDirSyncs; it is safe for concurrent
// use.
//
// Durability under deferral: a deferred Put still writes and fsyncs the
// object's file before renaming it into place, and the object is visible
// to readers at once (read-after-write holds), but its directory entry
// (and those of directories the Put created) may be lost in a crash until
// Sync returns nil. A caller must therefore Sync before it writes anything
// that names such an object (the backup's progress manifest and manifest:
// docs/DESIGN.md invariant 6). Backends other than Filesystem have nothing
// to defer and ignore it.
type DirSyncs struct {
	mu      sync.Mutex
	pending map[string]struct{}
}

// NewDirSyncs returns an empty DirSyncs.
func NewDirSyncs() *DirSyncs { return &DirSyncs{pending: map[string]struct{}{}} }

type dirSyncsKey struct{}

// WithDeferredDirSyncs returns a context under which Filesystem.Put
// records the directories it would fsync in d instead of fsyncing them
// (PutIfAbsent and Delete still fsync at once: locks and deletions are
// never deferred).
func WithDeferredDirSyncs(ctx context.Context, d *DirSyncs) context.Context {
	return context.WithValue(ctx, dirSyncsKey{}, d)
}

// deferredDirSyncs is the DirSyncs of ctx, or nil.
func deferredDirSyncs(ctx context.Context) *DirSyncs {
	d, _ := ctx.Value(dirSyncsKey{}).(*DirSyncs)
	return d
}

func (d *DirSyncs) add(dir string) {
	d.mu.Lock()
	d.pending[dir] = struct{}{}
	d.mu.Unlock()
}

// Pending returns the directories whose fsync is pending, sorted.
func (d *DirSyncs) Pending() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.pending))
	for dir := range d.pending {
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// Sync fsyncs every pending directory once. On return nil, every object
// put under d before the call began is durable. A directory that no longer
// exists (removed by a Delete) is skipped; one whose fsync fails stays
// pending, and the error (the first, naming the directory) is returned.
// A directory added while Sync runs stays pending for the next call.
func (d *DirSyncs) Sync() error {
	d.mu.Lock()
	dirs := d.pending
	d.pending = map[string]struct{}{}
	d.mu.Unlock()
	var first error
	for dir := range dirs {
		// Taken out of pending before its fsync: a Put that renames into
		// dir during the fsync adds it again, for the next Sync.
		if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if first == nil {
				first = err
			}
			d.add(dir)
		}
	}
	return first
}
