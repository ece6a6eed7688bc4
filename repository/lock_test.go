package repository

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func putLock(t *testing.T, store storage.Backend, heartbeat time.Time) {
	t.Helper()
	b, _ := json.Marshal(lockInfo{Owner: "backup run x", Hostname: "other-host", PID: 1, CreatedAt: heartbeat, HeartbeatAt: heartbeat})
	if err := store.PutIfAbsent(context.Background(), "lock", b); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireLockWait is a regression test (review): a backup after a killed
// one on another host was refused at once (exit 2, and the Job failed)
// although the dead holder's lock goes stale two minutes later.
func TestAcquireLockWait(t *testing.T) {
	pollInterval = 50 * time.Millisecond
	logf := func(string, ...any) {}
	ctx := context.Background()

	t.Run("no wait refuses a live lock", func(t *testing.T) {
		store, _ := storage.NewFilesystem(t.TempDir())
		putLock(t, store, time.Now())
		if _, err := AcquireLockWait(ctx, store, "lock", "me", 0, logf); !errors.Is(err, ErrLocked) {
			t.Fatalf("err = %v, want ErrLocked", err)
		}
	})
	t.Run("waits until the holder releases", func(t *testing.T) {
		store, _ := storage.NewFilesystem(t.TempDir())
		putLock(t, store, time.Now())
		go func() { time.Sleep(300 * time.Millisecond); store.Delete(ctx, "lock") }()
		l, err := AcquireLockWait(ctx, store, "lock", "me", 5*time.Second, logf)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	})
	t.Run("waits until a dead holder's lock goes stale", func(t *testing.T) {
		store, _ := storage.NewFilesystem(t.TempDir())
		putLock(t, store, time.Now().Add(-StaleAfter+400*time.Millisecond))
		began := time.Now()
		l, err := AcquireLockWait(ctx, store, "lock", "me", 5*time.Second, logf)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(began) < 300*time.Millisecond {
			t.Fatalf("took the lock after %s, before it went stale", time.Since(began))
		}
		l.Release(ctx)
	})
	t.Run("gives up after the wait", func(t *testing.T) {
		store, _ := storage.NewFilesystem(t.TempDir())
		putLock(t, store, time.Now())
		if _, err := AcquireLockWait(ctx, store, "lock", "me", 200*time.Millisecond, logf); !errors.Is(err, ErrLocked) {
			t.Fatalf("err = %v, want ErrLocked after the wait", err)
		}
	})
}

// TestRunLock: the shards of one run share the lock (each joins it, the
// stale-process rule does not apply to it: PID 0), any other run, sharded
// or not, is kept out; Release leaves it to the run's other shards until
// Finish.
func TestRunLock(t *testing.T) {
	logf := func(string, ...any) {}
	ctx := context.Background()
	store, _ := storage.NewFilesystem(t.TempDir())
	a, err := AcquireRunLockWait(ctx, store, "lock", "sharded backup run r1", "r1", 0, logf)
	if err != nil || a.Joined() {
		t.Fatalf("first shard: %v, joined %v", err, a != nil && a.Joined())
	}
	b, err := AcquireRunLockWait(ctx, store, "lock", "sharded backup run r1", "r1", 0, logf)
	if err != nil || !b.Joined() {
		t.Fatalf("second shard of the run: %v, want it joined", err)
	}
	if _, err := AcquireRunLockWait(ctx, store, "lock", "sharded backup run r2", "r2", 0, logf); !errors.Is(err, ErrLocked) {
		t.Fatalf("another sharded run: %v, want ErrLocked", err)
	}
	if _, err := AcquireLock(ctx, store, "lock", "backup run x", logf); !errors.Is(err, ErrLocked) {
		t.Fatalf("an unsharded run: %v, want ErrLocked", err)
	}
	if err := b.Check(ctx); err != nil {
		t.Fatal(err)
	}
	a.Release(ctx)
	if _, err := store.Stat(ctx, "lock"); err != nil {
		t.Fatalf("a shard's Release removed the run's lock: %v", err)
	}
	b.Finish()
	b.Release(ctx)
	if _, err := store.Stat(ctx, "lock"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after Finish, Release left the lock: %v", err)
	}
}
