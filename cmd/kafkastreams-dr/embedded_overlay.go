package main

import (
	"context"
	"errors"
	"io"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// overlayStore is the embedded restore's view of the repository it reads:
// reads come from scratch when it holds the key, else from base; every
// write (the restore's lock, journal and report) goes to scratch, a
// temporary directory thrown away with the embedded cluster, so that
// `restore --embedded` never writes into the repository (its report would
// describe a cluster that is gone, and estimate would take it for a
// measured restore throughput). PutIfAbsent also fails with
// storage.ErrExists when base holds the key: a lock held on the repository
// by a running backup is respected. Delete removes only scratch's object.
type overlayStore struct {
	base, scratch storage.Backend
}

func (o *overlayStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return o.scratch.Put(ctx, key, r, size)
}

func (o *overlayStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if _, err := o.base.Stat(ctx, key); err == nil {
		return storage.ErrExists
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return o.scratch.PutIfAbsent(ctx, key, data)
}

func (o *overlayStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := o.scratch.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return o.base.Get(ctx, key)
	}
	return rc, err
}

func (o *overlayStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	fi, err := o.scratch.Stat(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return o.base.Stat(ctx, key)
	}
	return fi, err
}

// List merges both listings in key order, scratch's object first where
// both hold a key.
func (o *overlayStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	var top, below []storage.ObjectInfo
	if err := o.scratch.List(ctx, prefix, func(fi storage.ObjectInfo) error { top = append(top, fi); return nil }); err != nil {
		return err
	}
	if err := o.base.List(ctx, prefix, func(fi storage.ObjectInfo) error { below = append(below, fi); return nil }); err != nil {
		return err
	}
	for len(top) > 0 || len(below) > 0 {
		var next storage.ObjectInfo
		switch {
		case len(below) == 0 || len(top) > 0 && top[0].Key <= below[0].Key:
			next = top[0]
			if len(below) > 0 && below[0].Key == next.Key {
				below = below[1:]
			}
			top = top[1:]
		default:
			next, below = below[0], below[1:]
		}
		if err := fn(next); err != nil {
			return err
		}
	}
	return nil
}

func (o *overlayStore) Delete(ctx context.Context, key string) error {
	return o.scratch.Delete(ctx, key)
}

func (o *overlayStore) Location() string { return o.base.Location() }
