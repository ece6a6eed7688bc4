package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Sample is what one measured process used.
type Sample struct {
	// Wall is the elapsed time from start to exit.
	Wall time.Duration
	// CPU is user + system CPU time, the process's reaped children
	// included (wait4's rusage: a shell pipeline's processes add up).
	CPU time.Duration
	// MaxRSS is the peak resident set size in bytes of the largest single
	// process (wait4's ru_maxrss, which Linux gives in KiB).
	MaxRSS int64
}

// fromRusage converts a wait4 rusage (Linux: ru_maxrss in KiB) and the
// wall time into a Sample.
func fromRusage(wall time.Duration, ru *syscall.Rusage) Sample {
	return Sample{
		Wall:   wall,
		CPU:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		MaxRSS: ru.Maxrss * 1024,
	}
}

// WrapperArg is the first argument that makes kdrbench the rusage wrapper
// (RunWrapper): `kdrbench -rusage-child FILE -- PROG ARGS...`.
const WrapperArg = "-rusage-child"

// Measure runs cmd to its end and returns its Sample from the child's
// rusage. With wrapper (kdrbench's own path), cmd runs under
// `wrapper -rusage-child FILE --`, a small fresh process that reads the
// rusage and writes it to FILE: Go starts children with CLONE_VM, so a
// child's ru_maxrss counts the peak RSS of the process that started it
// (Linux exec_mmap keeps the old mm's high-water mark), and the harness
// grows as it generates data; the wrapper's own few MiB are the floor of
// every peak RSS then. Without wrapper the harness's peak is that floor.
//
// The process gets a process group of its own, which is killed when ctx
// ends (a pipeline run by bash dies whole) and by the kernel if the
// harness dies (parent-death signal). A non-zero exit is an error quoting
// the end of stderr when cmd.Stderr was left nil.
func Measure(ctx context.Context, wrapper string, cmd *exec.Cmd) (Sample, error) {
	var usageFile string
	if wrapper != "" {
		f, err := os.CreateTemp("", "kdrbench-rusage-*")
		if err != nil {
			return Sample{}, err
		}
		usageFile = f.Name()
		f.Close()
		defer os.Remove(usageFile)
		cmd.Args = append([]string{wrapper, WrapperArg, usageFile, "--", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = wrapper
	}
	var stderr tailBuffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return Sample{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	begin := time.Now()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	wall := time.Since(begin)
	close(done)
	if err != nil {
		if ctx.Err() != nil {
			return Sample{}, ctx.Err()
		}
		return Sample{}, fmt.Errorf("%s: %w; stderr ends:\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	if wrapper != "" {
		b, err := os.ReadFile(usageFile)
		if err != nil {
			return Sample{}, fmt.Errorf("read the rusage the wrapper wrote: %w", err)
		}
		return parseChildUsage(string(b))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Sample{}, errors.New("no rusage for " + cmd.Path + " (Linux only)")
	}
	return fromRusage(wall, ru), nil
}

// RunWrapper is the rusage wrapper's main: args are FILE -- PROG ARGS...
// It runs PROG with the wrapper's stdin, stdout and stderr, writes
// formatChildUsage of its rusage to FILE, and returns PROG's exit code
// (1 when it could not start; 2 for bad arguments).
func RunWrapper(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "kdrbench "+WrapperArg+": usage: "+WrapperArg+" FILE -- PROG [ARGS...]")
		return 2
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench "+WrapperArg+":", err)
		return 1
	}
	_ = cmd.Wait()
	wall := time.Since(begin)
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		fmt.Fprintln(os.Stderr, "kdrbench "+WrapperArg+": no rusage (Linux only)")
		return 1
	}
	if err := os.WriteFile(args[0], []byte(formatChildUsage(fromRusage(wall, ru))), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench "+WrapperArg+":", err)
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// formatChildUsage is the wrapper's file: "wall_ns cpu_ns maxrss_bytes\n".
func formatChildUsage(s Sample) string {
	return fmt.Sprintf("%d %d %d\n", s.Wall.Nanoseconds(), s.CPU.Nanoseconds(), s.MaxRSS)
}

// parseChildUsage reads formatChildUsage's text.
func parseChildUsage(text string) (Sample, error) {
	var wall, cpu, rss int64
	if n, err := fmt.Sscanf(text, "%d %d %d\n", &wall, &cpu, &rss); err != nil || n != 3 || wall < 0 || cpu < 0 || rss < 0 {
		return Sample{}, fmt.Errorf("the wrapper's rusage %q is not \"wall_ns cpu_ns maxrss_bytes\"", text)
	}
	return Sample{Wall: time.Duration(wall), CPU: time.Duration(cpu), MaxRSS: rss}, nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
