package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the rusage wrapper (as kdrbench is) and a child
// that allocates KDRBENCH_TEST_ALLOC_MIB MiB, touches it and exits.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WrapperArg {
		os.Exit(RunWrapper(os.Args[2:]))
	}
	if v := os.Getenv("KDRBENCH_TEST_ALLOC_MIB"); v != "" {
		var mib int
		for _, c := range v {
			mib = mib*10 + int(c-'0')
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		if os.Getenv("KDRBENCH_TEST_FAIL") != "" {
			os.Stderr.WriteString("child failed on purpose\n")
			os.Exit(3)
		}
		os.Exit(int(b[len(b)-4096]) - 1)
	}
	os.Exit(m.Run())
}

func TestFromRusage(t *testing.T) {
	ru := &syscall.Rusage{
		Utime:  syscall.Timeval{Sec: 1, Usec: 500_000},
		Stime:  syscall.Timeval{Sec: 0, Usec: 250_000},
		Maxrss: 2048, // KiB on Linux
	}
	got := fromRusage(3*time.Second, ru)
	want := Sample{Wall: 3 * time.Second, CPU: 1750 * time.Millisecond, MaxRSS: 2 << 20}
	if got != want {
		t.Errorf("fromRusage = %+v, want %+v", got, want)
	}
}

func TestChildUsageRoundTrip(t *testing.T) {
	s := Sample{Wall: 1234 * time.Millisecond, CPU: 987 * time.Millisecond, MaxRSS: 150 << 20}
	got, err := parseChildUsage(formatChildUsage(s))
	if err != nil || got != s {
		t.Fatalf("parseChildUsage(formatChildUsage(%+v)) = %+v, %v", s, got, err)
	}
	for _, bad := range []string{"", "1 2", "a b c", "1 -2 3\n"} {
		if _, err := parseChildUsage(bad); err == nil {
			t.Errorf("parseChildUsage(%q) succeeded, want an error", bad)
		}
	}
}

// Measure reads a real child's peak RSS and CPU: through the wrapper the
// child's 96 MiB are seen, without the test binary's own heap added.
func TestMeasureChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, wrapper := range []string{"", self} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "KDRBENCH_TEST_ALLOC_MIB=96")
		s, err := Measure(context.Background(), wrapper, cmd)
		if err != nil {
			t.Fatalf("wrapper %q: %v", wrapper, err)
		}
		if s.MaxRSS < 96<<20 || s.MaxRSS > 200<<20 {
			t.Errorf("wrapper %q: peak RSS %d MiB, want 96 MiB and the runtime's few", wrapper, s.MaxRSS>>20)
		}
		if s.Wall <= 0 || s.CPU <= 0 {
			t.Errorf("wrapper %q: wall %v, CPU %v, want both above 0", wrapper, s.Wall, s.CPU)
		}
	}
}

func TestMeasureFailedChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "KDRBENCH_TEST_ALLOC_MIB=1", "KDRBENCH_TEST_FAIL=1")
	_, err = Measure(context.Background(), self, cmd)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "child failed on purpose") {
		t.Fatalf("Measure of a failing child: %v, want its exit status and stderr", err)
	}
}

// A cancelled context kills the measured process group and says so.
func TestMeasureCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := Measure(ctx, "", exec.Command("bash", "-c", "sleep 30 | cat"))
	if err != context.DeadlineExceeded {
		t.Fatalf("Measure after the deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Fatalf("Measure returned after %v: the pipeline was not killed", d)
	}
}
