package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// lockInfo is the content of the repository lock object.
type lockInfo struct {
	Owner       string    `json:"owner"` // backup id of the holder
	Hostname    string    `json:"hostname"`
	PID         int       `json:"pid"`
	CreatedAt   time.Time `json:"created_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// LockStaleAfter is how old a lock's heartbeat must be before another run
// may take the lock over. The holder rewrites its heartbeat every
// lockHeartbeat.
const (
	LockStaleAfter = 2 * time.Minute
	lockHeartbeat  = 20 * time.Second
)

// ErrLocked is wrapped by the error Run returns when another run holds the
// repository lock.
var ErrLocked = errors.New("repository is locked")

type repoLock struct {
	store storage.Backend
	info  lockInfo
	mu    sync.Mutex
	stop  chan struct{}
	done  chan struct{}
	lost  error
}

func readLock(ctx context.Context, store storage.Backend) (*lockInfo, error) {
	rc, err := store.Get(ctx, format.LockKey)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<16))
	if err != nil {
		return nil, err
	}
	var li lockInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return nil, fmt.Errorf("repository lock %s/%s is not a kafkastreams-dr lock (%v): if no backup is running, delete it", store.Location(), format.LockKey, err)
	}
	return &li, nil
}

// stale reports why a lock may be taken over, or "" when it is live. A lock
// is stale when its heartbeat is older than LockStaleAfter, or when it was
// taken on this host by a process that no longer exists (restic's rule).
func (li *lockInfo) stale(now time.Time, host string) string {
	if now.Sub(li.HeartbeatAt) > LockStaleAfter {
		return fmt.Sprintf("its heartbeat is %s old", now.Sub(li.HeartbeatAt).Round(time.Second))
	}
	if li.Hostname == host && li.PID > 0 && li.PID != os.Getpid() {
		if err := syscall.Kill(li.PID, 0); errors.Is(err, syscall.ESRCH) {
			return fmt.Sprintf("process %d on this host is gone", li.PID)
		}
	}
	return ""
}

// acquireLock takes the repository lock for owner, taking over a stale lock.
func acquireLock(ctx context.Context, store storage.Backend, owner string, logf func(string, ...any)) (*repoLock, error) {
	host, _ := os.Hostname()
	now := time.Now().UTC()
	l := &repoLock{store: store, info: lockInfo{Owner: owner, Hostname: host, PID: os.Getpid(), CreatedAt: now, HeartbeatAt: now}}
	for attempt := 0; attempt < 2; attempt++ {
		b, _ := json.Marshal(l.info)
		err := store.PutIfAbsent(ctx, format.LockKey, b)
		if err == nil {
			l.stop, l.done = make(chan struct{}), make(chan struct{})
			go l.heartbeat(ctx)
			return l, nil
		}
		if !errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("take repository lock %s/%s: %w", store.Location(), format.LockKey, err)
		}
		held, err := readLock(ctx, store)
		if errors.Is(err, storage.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		why := held.stale(time.Now().UTC(), host)
		if why == "" {
			return nil, fmt.Errorf("%w by backup %s (host %s, pid %d, since %s, heartbeat %s): another backup is running against %s; wait for it, or if it is dead, the lock becomes stale %s after its last heartbeat",
				ErrLocked, held.Owner, held.Hostname, held.PID, held.CreatedAt.Format(time.RFC3339), held.HeartbeatAt.Format(time.RFC3339), store.Location(), LockStaleAfter)
		}
		logf("taking over stale repository lock", "holder", held.Owner, "reason", why)
		if err := store.Delete(ctx, format.LockKey); err != nil {
			return nil, fmt.Errorf("remove stale repository lock: %w", err)
		}
	}
	return nil, fmt.Errorf("%w: could not take the lock at %s/%s after removing a stale one (another run took it)", ErrLocked, store.Location(), format.LockKey)
}

// check verifies that the lock object is still ours.
func (l *repoLock) check(ctx context.Context) error {
	held, err := readLock(ctx, l.store)
	if err != nil {
		return fmt.Errorf("repository lock lost: %w", err)
	}
	if held.Owner != l.info.Owner || held.PID != l.info.PID || held.Hostname != l.info.Hostname {
		return fmt.Errorf("%w: repository lock was taken over by backup %s (host %s, pid %d)", ErrLocked, held.Owner, held.Hostname, held.PID)
	}
	return nil
}

func (l *repoLock) heartbeat(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(lockHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.check(ctx); err != nil {
			l.mu.Lock()
			l.lost = err
			l.mu.Unlock()
			return
		}
		l.info.HeartbeatAt = time.Now().UTC()
		b, _ := json.Marshal(l.info)
		_ = l.store.Put(ctx, format.LockKey, bytesReader(b), int64(len(b)))
	}
}

// err returns a non-nil error once the lock is known to be lost.
func (l *repoLock) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// release stops the heartbeat and deletes the lock if it is still ours.
// It uses a fresh context so a cancelled run still releases its lock.
func (l *repoLock) release(ctx context.Context) {
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if l.check(ctx) == nil {
		_ = l.store.Delete(ctx, format.LockKey)
	}
}
