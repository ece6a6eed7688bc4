package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCLIWithin is runCLI that fails the test when the command has not
// returned after a generous bound (a FIFO no writer opens blocks a read
// forever).
func runCLIWithin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		c, o, e := runCLI(t, args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still running after 20s: the config file was read instead of refused", strings.Join(args, " "))
		return 0, "", ""
	}
}

// TestConfigFileNotARegularFileExits2: -c naming a FIFO, a directory or a
// file over the 1 MiB limit is refused at once with exit 2 naming the file,
// by config validate and by a command that loads the config (new-user pass:
// `config validate -c /dev/zero` was OOM-killed at ~23 GB; -c a FIFO hung
// and ignored SIGTERM).
func TestConfigFileNotARegularFileExits2(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "app.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Replace(goodConfig, "path: /tmp/backups", "path: "+filepath.Join(dir, "repo"), 1)+"#"+strings.Repeat("x", 1<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, file, want string }{
		{"a FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a directory", dir, "is a directory, not a regular file"},
		{"over the limit", big, "1 MiB"},
	} {
		for _, cmd := range [][]string{{"config", "validate"}, {"list"}} {
			t.Run(tt.name+" "+cmd[0], func(t *testing.T) {
				code, stdout, stderr := runCLIWithin(t, append(cmd, "-c", tt.file)...)
				if code != exitUsage {
					t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
				}
				if !strings.Contains(stderr, tt.file) || !strings.Contains(stderr, tt.want) {
					t.Errorf("stderr does not name %s and say %q:\n%s", tt.file, tt.want, stderr)
				}
			})
		}
	}
}

// TestConfigValidateRefusesEmptyVariableInStoragePath: storage.path
// "${EV}/r" with EV set but empty resolved to "/r", a directory under the
// root, that backup and prune would write and delete in; config validate
// only warned. It is an error naming the key and the variable, exit 2.
func TestConfigValidateRefusesEmptyVariableInStoragePath(t *testing.T) {
	t.Setenv("KDR_TEST_EV", "")
	// ${KDR_TEST_EV} in front of a scratch directory: whatever the code
	// does with it, it stays under t.TempDir().
	repo := filepath.Join(t.TempDir(), "r")
	cfg := writeFile(t, "app.yaml", strings.Replace(goodConfig, "path: /tmp/backups", `path: "${KDR_TEST_EV}`+repo+`"`, 1))
	code, stdout, stderr := runCLI(t, "config", "validate", "-c", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
	}
	for _, want := range []string{"storage.path", "KDR_TEST_EV is set but empty", "line 9"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(repo); !os.IsNotExist(err) {
		t.Errorf("config validate created %s (err %v)", repo, err)
	}
}

// TestConfigFIFOInTheRealProcess runs kafkastreams-dr, main and all (its
// signal handling included), with -c naming a FIFO no one writes: it exits
// 2 naming the file on its own, without a signal. Before, it blocked in
// the read and ignored SIGTERM (the test then sends SIGTERM to report
// that, and kills it).
func TestConfigFIFOInTheRealProcess(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "app.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"config", "validate", "-c", fifo})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KDR_HELPER_MAIN_ARGS="+string(args))
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			t.Fatalf("still reading the FIFO after 20s; SIGTERM then: exit %d", cmd.ProcessState.ExitCode())
		case <-time.After(10 * time.Second):
			t.Fatal("still reading the FIFO after 20s, and SIGTERM did not stop it within 10s")
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != exitUsage {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), fifo+" is a named pipe (FIFO), not a regular file") {
		t.Errorf("stderr does not name the FIFO:\n%s", stderr.String())
	}
}
