package repository

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// lockHelperEnv makes the test binary a lock taker instead of running the
// tests (TestMain): it tries AcquireLock on the directory repository the
// variable names and exits 0 when it took the lock, 3 when it was refused
// with ErrLocked, 4 on any other error.
const lockHelperEnv = "KDR_TEST_LOCK_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		os.Exit(lockHelper(dir))
	}
	os.Exit(m.Run())
}

func lockHelper(dir string) int {
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		fmt.Println(err)
		return 4
	}
	_, err = AcquireLock(context.Background(), store, "lock", "helper", func(msg string, args ...any) { fmt.Println(append([]any{msg}, args...)...) })
	switch {
	case err == nil:
		fmt.Println("took the lock")
		return 0
	case errors.Is(err, ErrLocked):
		fmt.Println(err)
		return 3
	}
	fmt.Println(err)
	return 4
}

// TestLockOfAnotherPIDNamespaceIsNotTakenOver: a run on this host name in
// another PID namespace (two containers of one pod share the host name,
// not their PIDs) does not take over a live lock because the holder's PID
// does not exist in its namespace. It did ("process N on this host is
// gone") and deleted the running backup's files (issue 14). The holder is
// this test; the taker is the test binary under unshare --pid --fork.
func TestLockOfAnotherPIDNamespaceIsNotTakenOver(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		missing(t, "unshare (util-linux) is not on $PATH")
	}
	ctx := context.Background()
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLock(ctx, store, "lock", "holder", func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	if code == 1 && bytes.Contains(out, []byte("unshare")) {
		missing(t, fmt.Sprintf("unshare --pid cannot run here (%s)", bytes.TrimSpace(out)))
	}
	if code != 3 {
		t.Fatalf("a run in another PID namespace on this host: exit %d (%v), output %q; want it refused with ErrLocked (exit 3): the holder, pid %d, is alive", code, err, out, os.Getpid())
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("the holder's lock after the other namespace's try: %v", err)
	}
}

// TestLockIsHeldByItsToken: a lock rewritten by another holder with the
// same owner, host name and PID (PID 1 in two containers of one pod; a
// backup id written twice) is lost to this holder: the lock names its
// holder by a random token, not by host name and PID.
func TestLockIsHeldByItsToken(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLock(ctx, store, "lock", "holder", func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	li := l.info
	li.Token = "another-holders-token"
	b, _ := json.Marshal(li)
	if err := store.Put(ctx, "lock", bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("Check of a lock another holder with the same owner, host and pid rewrote: %v; want ErrLocked", err)
	}
	l.Release(ctx)
	if _, err := store.Stat(ctx, "lock"); err != nil {
		t.Fatalf("Release deleted the other holder's lock: %v", err)
	}
	if l2, err := AcquireLock(ctx, store, "lock", "third", func(string, ...any) {}); !errors.Is(err, ErrLocked) {
		if l2 != nil {
			l2.Release(ctx)
		}
		t.Fatalf("a third run took a live lock: %v", err)
	}
	var got lockInfo
	b, _ = readAll(t, store, "lock")
	if err := json.Unmarshal(b, &got); err != nil || got.Token != "another-holders-token" {
		t.Fatalf("the lock after: %s (%v)", b, err)
	}
	if !strings.Contains(string(b), `"token"`) {
		t.Errorf("lock object %s has no token", b)
	}
}

func readAll(t *testing.T, store storage.Backend, key string) ([]byte, error) {
	t.Helper()
	rc, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	return buf.Bytes(), err
}

// missing fails the test when KDR_REQUIRE_TOOLS=1 (CI), else skips it
// (testkit's rule; testkit imports this package).
func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("KDR_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s (KDR_REQUIRE_TOOLS=1, so this fails instead of skipping)", msg)
	}
	t.Skipf("skipping: %s", msg)
}
