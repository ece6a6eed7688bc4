package statedir

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// newLockHolder starts a python3 process that takes a POSIX write lock on
// path (fcntl.lockf, as Java's FileChannel.tryLock does on Linux) and holds
// it until the returned function kills it.
func newLockHolder(t *testing.T, path string) func() {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: needed to hold a lock from another process")
	}
	cmd := exec.Command(py, "-c", `import fcntl,sys,time
f=open(sys.argv[1],"r+")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)`, path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "locked") {
		cmd.Process.Kill()
		t.Fatalf("lock holder said %q", line)
	}
	return func() { cmd.Process.Kill(); cmd.Wait() }
}
