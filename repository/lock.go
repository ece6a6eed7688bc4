package repository

// The repository lock: the lock a run takes in a backup repository before it
// writes: an object created only if absent (storage.Backend.PutIfAbsent),
// whose holder rewrites a heartbeat in it. Its holder is named by a random
// token of its own, never by host name and PID alone. A lock whose
// heartbeat is older than StaleAfter may be taken over; so may one that a
// process that no longer exists took on this machine in this PID namespace
// (restic's rule, narrowed: same host name, boot id and PID namespace, so
// that a container of the same pod, which shares the host name and not
// the PIDs, never takes it). Backups lock the key "lock"; restores lock
// one key per target cluster.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// lockInfo is the content of the repository lock object.
type lockInfo struct {
	Owner       string    `json:"owner"` // backup id of the holder
	Hostname    string    `json:"hostname"`
	PID         int       `json:"pid"`
	CreatedAt   time.Time `json:"created_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Run is set on a lock shared by the shards of one run (backup
	// --shard I/N; AcquireRunLockWait): every process of that run may hold
	// it at once, any other run is kept out. PID is 0 then: the run is
	// many processes, its lock goes stale only by its heartbeat.
	Run string `json:"run,omitempty"`
	// Token names the holder: 16 random bytes in hex, new for each
	// AcquireLock. Check and Release compare it, not the owner, host
	// name and PID (two containers of one pod share the host name, and
	// their main processes are often both PID 1). Absent in locks of
	// versions before it: such a lock is anyone else's.
	Token string `json:"token,omitempty"`
	// BootID (/proc/sys/kernel/random/boot_id) and PIDNamespace (the
	// link /proc/self/ns/pid, e.g. "pid:[4026531836]") say where PID
	// means a process: the "holder process is gone" rule applies only to
	// a lock of the same host name, boot id and PID namespace. Empty when
	// unreadable (not Linux, no /proc): then only the heartbeat makes the
	// lock stale.
	BootID       string `json:"boot_id,omitempty"`
	PIDNamespace string `json:"pid_namespace,omitempty"`
}

// processPlace is this process's boot id and PID namespace (lockInfo),
// "" for what cannot be read.
func processPlace() (bootID, pidNamespace string) {
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		bootID = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		pidNamespace = ns
	}
	return bootID, pidNamespace
}

// newToken is a lock holder's token: 16 random bytes in hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// StaleAfter is how old a lock's heartbeat must be before another run may
// take the lock over. The holder rewrites its heartbeat every heartbeat.
const (
	StaleAfter = 2 * time.Minute
	heartbeat  = 20 * time.Second
)

// ErrLocked is wrapped by the error AcquireLock returns when another run holds
// the lock.
var ErrLocked = errors.New("repository is locked")

// Lock is a held lock. Its methods are safe for concurrent use.
type Lock struct {
	store storage.Backend
	key   string
	info  lockInfo
	mu    sync.Mutex
	stop  chan struct{}
	done  chan struct{}
	lost  error
	// joined: a run lock another process of the same run had taken (it
	// was not created by this one).
	joined bool
	// finished: Release deletes a run lock (Finish); without it a shard
	// leaves the lock to the other shards of its run.
	finished bool
}

func readLock(ctx context.Context, store storage.Backend, key string) (*lockInfo, error) {
	rc, err := store.Get(ctx, key)
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
		return nil, fmt.Errorf("repository lock %s/%s is not a kafkastreams-dr lock (%v): if no backup or restore is running, delete it", store.Location(), key, err)
	}
	return &li, nil
}

// stale reports why a lock may be taken over, or "" when it is live. A lock
// is stale when its heartbeat is older than StaleAfter, or when it was
// taken by a process that no longer exists on this host name, boot and
// PID namespace (restic's rule, which looks at the host name and PID only:
// a container of the same pod has the host name and not the PID, and
// took a live lock over). here is this process's lockInfo.
func (li *lockInfo) stale(now time.Time, here *lockInfo) string {
	if now.Sub(li.HeartbeatAt) > StaleAfter {
		return fmt.Sprintf("its heartbeat is %s old", now.Sub(li.HeartbeatAt).Round(time.Second))
	}
	samePlace := li.Hostname == here.Hostname && li.BootID != "" && li.BootID == here.BootID &&
		li.PIDNamespace != "" && li.PIDNamespace == here.PIDNamespace
	if samePlace && li.PID > 0 && li.PID != os.Getpid() {
		if err := syscall.Kill(li.PID, 0); errors.Is(err, syscall.ESRCH) {
			return fmt.Sprintf("process %d on this host (same boot, same PID namespace) is gone", li.PID)
		}
	}
	return ""
}

// AcquireLock takes the lock at key for owner (a backup or restore id, shown to
// whoever finds the lock taken), taking over a stale lock (logged with
// logf). It returns an error wrapping ErrLocked when a live run holds it.
// The holder must Release it.
func AcquireLock(ctx context.Context, store storage.Backend, key, owner string, logf func(string, ...any)) (*Lock, error) {
	return acquire(ctx, store, key, owner, "", logf)
}

func acquire(ctx context.Context, store storage.Backend, key, owner, run string, logf func(string, ...any)) (*Lock, error) {
	host, _ := os.Hostname()
	now := time.Now().UTC()
	boot, pidns := processPlace()
	l := &Lock{store: store, key: key, info: lockInfo{Owner: owner, Hostname: host, PID: os.Getpid(), CreatedAt: now, HeartbeatAt: now, Run: run,
		Token: newToken(), BootID: boot, PIDNamespace: pidns}}
	if run != "" {
		l.info.PID = 0
	}
	for attempt := 0; attempt < 2; attempt++ {
		b, _ := json.Marshal(l.info)
		err := store.PutIfAbsent(ctx, key, b)
		if err == nil {
			l.stop, l.done = make(chan struct{}), make(chan struct{})
			go l.beat(ctx)
			return l, nil
		}
		if !errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("take repository lock %s/%s: %w", store.Location(), key, err)
		}
		held, err := readLock(ctx, store, key)
		if errors.Is(err, storage.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		if run != "" && held.Run == run {
			// Another shard of this run holds it (or held it and died):
			// share it, with this process's heartbeat too.
			l.info.CreatedAt, l.joined = held.CreatedAt, true
			l.stop, l.done = make(chan struct{}), make(chan struct{})
			go l.beat(ctx)
			return l, nil
		}
		why := held.stale(time.Now().UTC(), &l.info)
		if why == "" {
			return nil, fmt.Errorf("%w: %s/%s is held by %s (host %s, pid %d, since %s, heartbeat %s): wait for it, or if it is dead, the lock becomes stale %s after its last heartbeat",
				ErrLocked, store.Location(), key, held.Owner, held.Hostname, held.PID, held.CreatedAt.Format(time.RFC3339), held.HeartbeatAt.Format(time.RFC3339), StaleAfter)
		}
		logf("taking over stale repository lock", "holder", held.Owner, "reason", why)
		if err := store.Delete(ctx, key); err != nil {
			return nil, fmt.Errorf("remove stale repository lock: %w", err)
		}
	}
	return nil, fmt.Errorf("%w: could not take the lock at %s/%s after removing a stale one (another run took it)", ErrLocked, store.Location(), key)
}

// AcquireLockWait is AcquireLock, but while a live run holds the lock it tries
// again every few seconds for up to wait: until the holder releases it, or
// its heartbeat goes stale (StaleAfter) after the holder died. A scheduled
// backup after a killed one (OOM, node drain, SIGKILL from another host)
// then proceeds instead of failing. wait 0 is AcquireLock.
func AcquireLockWait(ctx context.Context, store storage.Backend, key, owner string, wait time.Duration, logf func(string, ...any)) (*Lock, error) {
	return AcquireRunLockWait(ctx, store, key, owner, "", wait, logf)
}

// AcquireRunLockWait is AcquireLockWait for one process of a run of
// several (the shards of backup --shard I/N, sharing run, the
// --shard-run identifier; "" is AcquireLockWait): a lock held by the same
// run, live or stale, is joined, not waited for; any other holder is kept
// apart as by AcquireLockWait, and the run's lock keeps other runs out.
// Each holder of a run lock rewrites its heartbeat; Release leaves it to
// the run's other processes unless Finish was called (by the process
// that completes the run).
func AcquireRunLockWait(ctx context.Context, store storage.Backend, key, owner, run string, wait time.Duration, logf func(string, ...any)) (*Lock, error) {
	deadline := time.Now().Add(wait)
	logged := false
	for {
		l, err := acquire(ctx, store, key, owner, run, logf)
		if err == nil || !errors.Is(err, ErrLocked) || !time.Now().Before(deadline) {
			return l, err
		}
		if !logged {
			logf("waiting for the repository lock", "key", key, "wait", wait.String(), "holder", err.Error())
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(pollInterval, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// pollInterval is how often AcquireLockWait tries again.
var pollInterval = 5 * time.Second

// Check verifies that the lock object is still this holder's.
func (l *Lock) Check(ctx context.Context) error {
	held, err := readLock(ctx, l.store, l.key)
	if err != nil {
		return fmt.Errorf("repository lock lost: %w", err)
	}
	if l.info.Run != "" && held.Run == l.info.Run {
		return nil // one run's shards share it, each rewriting it
	}
	if held.Token != l.info.Token {
		return fmt.Errorf("%w: repository lock was taken over by %s (host %s, pid %d)", ErrLocked, held.Owner, held.Hostname, held.PID)
	}
	return nil
}

func (l *Lock) beat(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.Check(ctx); err != nil {
			l.mu.Lock()
			l.lost = err
			l.mu.Unlock()
			return
		}
		l.info.HeartbeatAt = time.Now().UTC()
		b, _ := json.Marshal(l.info)
		_ = l.store.Put(ctx, l.key, bytes.NewReader(b), int64(len(b)))
	}
}

// Err returns a non-nil error once the lock is known to be lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Joined reports whether a run lock (AcquireRunLockWait) was already held
// by another process of the run when this one took it.
func (l *Lock) Joined() bool { return l.joined }

// Finish makes Release delete a run lock: the run is over (its last
// process completed it). A lock of one process is deleted by Release
// anyway.
func (l *Lock) Finish() {
	l.mu.Lock()
	l.finished = true
	l.mu.Unlock()
}

// Release stops the heartbeat and deletes the lock if it is still this
// holder's (a run lock only after Finish: the run's other processes may
// still hold it). It uses a fresh context so a cancelled run still
// releases it.
func (l *Lock) Release(ctx context.Context) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	keep := l.info.Run != "" && !l.finished
	l.mu.Unlock()
	if keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if l.Check(ctx) == nil {
		_ = l.store.Delete(ctx, l.key)
	}
}
