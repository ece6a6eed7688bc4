package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// drillAppRepo is a repository holding one backup of the sample
// application (kfake source, seeded), and the config of a drill of it
// with extra appended (a drill: section).
func drillAppRepo(t *testing.T, extra string) (cfg, repo string) {
	t.Helper()
	src := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	repo = t.TempDir()
	cfg = writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
storage:
  backend: filesystem
  path: %s
%s`, strings.Join(src.Addrs(), ", "), repo, extra))
	if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
		t.Fatalf("backup: exit %d\n%s", code, stderr)
	}
	return cfg, repo
}

// drillJSON is the part of drill --json these tests read.
type drillJSON struct {
	OK              bool     `json:"ok"`
	RTO             *float64 `json:"rto_seconds"`
	RTODataRestored *float64 `json:"rto_data_restored_seconds"`
	RTOAppRunning   *float64 `json:"rto_app_running_seconds"`
	RTOAppCaughtUp  *float64 `json:"rto_app_caught_up_seconds"`
	App             *struct {
		GroupType  string `json:"group_type"`
		Lag        int64  `json:"lag"`
		Partitions int    `json:"partitions"`
		ExitStatus string `json:"exit_status"`
		Stopped    string `json:"stopped"`
		ReadyAt    string `json:"ready_at"`
		NotReady   string `json:"not_ready"`
	} `json:"app"`
	DrillReportKey string `json:"drill_report_key"`
}

func decodeDrillJSON(t *testing.T, stdout string) drillJSON {
	t.Helper()
	var d drillJSON
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("--json does not decode: %v\n%s", err, stdout)
	}
	return d
}

// pidIn waits up to 30s for file to hold a process id, and returns it.
func pidIn(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process id in %s after 30s", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gone reports whether no process pid runs: none exists (signal 0 says
// ESRCH), or it is a zombie (killed, waiting for a parent to reap it; an
// orphan's new parent in a container may never do so).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	return procState(pid) == "Z"
}

// procState is the state letter of /proc/<pid>/stat ("R", "S", "Z"), or
// "" when there is no such process.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok || rest == "" {
		return ""
	}
	return rest[:1]
}

// groupRunning lists the processes of process group pgid that are not
// zombies, from /proc.
func groupRunning(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest) // state ppid pgrp ...
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestDrillAppCommand drills the sample application's backup on kfake
// with an application command: kcat as the group's only consumer
// (librdkafka, the consumer protocol), which reads the topics a Kafka
// Streams instance of the sample subscribes to (the input topics, and the
// repartition and FK-subscription topics whose in-flight tails the
// restore brought back, invariant 38) from the committed offsets and
// commits: the drill reports the three RTO figures in order in --json and
// JUnit, stores its measurements in the repository, and the process is
// gone after the drill.
func TestDrillAppCommand(t *testing.T) {
	t.Parallel()
	cfg, repo := drillAppRepo(t, "")
	target := testkit.StartKfake(t, 1)
	junit := filepath.Join(t.TempDir(), "drill.xml")
	pidFile := filepath.Join(t.TempDir(), "pid")
	// A Streams app's consumer subscribes to its source topics, the
	// repartition topics included (StreamThread; its classic-protocol
	// assignment names their partitions): the drill's app-running phase
	// waits for every partition the restore committed on to be assigned.
	subscribed := []string{sample.Orders, sample.Customers, sample.Payments, sample.Repartition, sample.FKTopic}
	app := fmt.Sprintf(`echo $$ > %s; exec %s -q -b "$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS" -G "$KAFKASTREAMS_DR_APPLICATION_ID" -X auto.commit.interval.ms=100 -X auto.offset.reset=earliest -X isolation.level=read_committed %s`,
		pidFile, testkit.KcatPath(t), strings.Join(subscribed, " "))
	code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
		"--target-bootstrap-servers", target.Bootstrap(), "--app-command", app, "--app-timeout", "2m", "--json", "--junit", junit)
	if code != exitOK {
		t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	d := decodeDrillJSON(t, stdout)
	if d.RTODataRestored == nil || d.RTOAppRunning == nil || d.RTOAppCaughtUp == nil || d.RTO == nil {
		t.Fatalf("RTO figures: data %v, running %v, caught up %v, rto %v; want all three\n%s", d.RTODataRestored, d.RTOAppRunning, d.RTOAppCaughtUp, d.RTO, stdout)
	}
	if !(*d.RTODataRestored > 0 && *d.RTODataRestored <= *d.RTOAppRunning && *d.RTOAppRunning <= *d.RTOAppCaughtUp) {
		t.Errorf("want 0 < data restored <= running <= caught up: %.3f, %.3f, %.3f", *d.RTODataRestored, *d.RTOAppRunning, *d.RTOAppCaughtUp)
	}
	// A drill of an existing backup loses the source at its start: the
	// data RTO is today's rto_seconds.
	if *d.RTO != *d.RTODataRestored {
		t.Errorf("rto_seconds %.3f, rto_data_restored_seconds %.3f: want equal for a drill of an existing backup", *d.RTO, *d.RTODataRestored)
	}
	// 6 input partitions (orders 3, customers 2, payments 1) and the 4 of
	// the in-flight topics (repartition 3, FK subscription 1).
	if d.App == nil || d.App.Lag != 0 || d.App.Partitions != 10 || d.App.Stopped != "SIGTERM" || d.App.ExitStatus != "" {
		t.Errorf("app report: %+v, want lag 0 on the 6 input and 4 in-flight partitions, stopped with SIGTERM", d.App)
	}
	props := map[string]string{}
	for _, p := range readJUnit(t, junit).Properties {
		props[p.Name] = p.Value
	}
	for _, name := range []string{"rto_data_restored_seconds", "rto_app_running_seconds", "rto_app_caught_up_seconds"} {
		if v, err := strconv.ParseFloat(props[name], 64); err != nil || v <= 0 {
			t.Errorf("JUnit property %s = %q, want seconds > 0", name, props[name])
		}
	}
	if s := readJUnit(t, junit); s.Tests != 7 || s.Failures != 0 {
		t.Errorf("JUnit: %d test cases, %d failures; want the 7 phases passed", s.Tests, s.Failures)
	}
	var rec format.DrillReport
	b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(d.DrillReportKey)))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("drill report %q in the repository: %v\n%s", d.DrillReportKey, err, b)
	}
	if rec.RTOAppCaughtUp == nil || *rec.RTOAppCaughtUp != *d.RTOAppCaughtUp || rec.Strategy != format.StrategyChangelog || rec.RecordsRestored == 0 || rec.ChangelogRecords == 0 {
		t.Errorf("recorded drill report: %s", b)
	}
	if pid := pidIn(t, pidFile); !gone(pid) {
		t.Errorf("the application (pid %d) still runs after the drill", pid)
	}

	// estimate is calibrated by the drill: its changelog recovery is
	// within the tolerance of the drill's rto_app_caught_up; rebuild,
	// which no drill measured, is uncalibrated.
	code, stdout, stderr = runCLI(t, "estimate", "-c", cfg, "--no-cluster", "--json")
	var e estimate.Estimate
	if err := json.Unmarshal([]byte(stdout), &e); code != exitOK || err != nil {
		t.Fatalf("estimate --json: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	for _, st := range e.Strategies {
		switch {
		case st.Name == "changelog" && (st.Recovery == nil || st.Recovery.Seconds == nil || len(st.Recovery.Drills) != 1):
			t.Errorf("changelog recovery %+v, want calibrated by the drill", st.Recovery)
		case st.Name == "changelog":
			if ratio := *st.Recovery.Seconds / *d.RTOAppCaughtUp; ratio > calibrationTolerance || ratio < 1/calibrationTolerance {
				t.Errorf("estimate projects %.3fs, the drill measured %.3fs", *st.Recovery.Seconds, *d.RTOAppCaughtUp)
			}
		case st.Name == "rebuild" && (st.Recovery == nil || st.Recovery.Calibrated || st.Recovery.Seconds != nil):
			t.Errorf("rebuild recovery %+v, want uncalibrated", st.Recovery)
		}
	}
	code, stdout, _ = runCLI(t, "estimate", "-c", cfg, "--no-cluster")
	if code != exitOK || !strings.Contains(stdout, "recovery to the application caught up") || !regexp.MustCompile(`(?m)^  rebuild +uncalibrated`).MatchString(stdout) {
		t.Errorf("estimate's text: exit %d\n%s", code, stdout)
	}

	t.Run("text report", func(t *testing.T) {
		fresh := testkit.StartKfake(t, 1)
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
			"--target-bootstrap-servers", fresh.Bootstrap(), "--app-command", app)
		if code != exitOK {
			t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"rto_data_restored", "to the restored records verified on the target",
			"rto_app_running", "its group Stable", "rto_app_caught_up", "lag zero", "recorded in the repository as drills/"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the text report does not say %q:\n%s", want, stdout)
			}
		}
	})
}

// TestDrillAppFailures: an application command that exits at once fails
// the drill in app-running naming its exit status and last line; one whose
// group never appears fails it at --app-timeout; one that ignores SIGTERM
// is killed after drill.app.stop_grace, with what it started. No process
// is left after any of them, and the figures not reached are null.
func TestDrillAppFailures(t *testing.T) {
	t.Parallel()
	cfg, _ := drillAppRepo(t, "drill:\n  app:\n    command: \"false\"\n    stop_grace: 1s\n")
	tests := []struct {
		name      string
		command   string // %[1]s is the pid file
		timeout   string
		wantErr   []string
		wantPhase string
		stopped   string
	}{
		{"exits at once", `echo $$ > %[1]s; echo "cannot open state dir /nope" >&2; exit 3`, "1m",
			[]string{"drill FAILED in phase app-running", "exit status 3", "cannot open state dir /nope"}, "app-running", ""},
		{"never running", `echo $$ > %[1]s; exec sleep 300`, "2s",
			[]string{"drill FAILED in phase app-running", "the application was not running within 2s", "--app-timeout"}, "app-running", "SIGTERM"},
		{"ignores SIGTERM", `trap "" TERM; echo $$ > %[1]s; while :; do sleep 1; done`, "2s",
			[]string{"drill FAILED in phase app-running", "not running within 2s"}, "app-running", "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := testkit.StartKfake(t, 1)
			pidFile := filepath.Join(t.TempDir(), "pid")
			code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
				"--target-bootstrap-servers", target.Bootstrap(), "--app-command", fmt.Sprintf(tt.command, pidFile), "--app-timeout", tt.timeout, "--json")
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if !strings.Contains(stderr, "--app-command") {
				t.Errorf("the hint does not name --app-command:\n%s", stderr)
			}
			d := decodeDrillJSON(t, stdout)
			if d.RTODataRestored == nil || d.RTOAppRunning != nil || d.RTOAppCaughtUp != nil {
				t.Errorf("figures: data %v, running %v, caught up %v; want only the data restored", d.RTODataRestored, d.RTOAppRunning, d.RTOAppCaughtUp)
			}
			if d.App == nil || d.App.Stopped != tt.stopped {
				t.Errorf("app report %+v, want stopped %q", d.App, tt.stopped)
			}
			pid := pidIn(t, pidFile)
			if !gone(pid) {
				t.Errorf("the application (pid %d) still runs after the drill", pid)
			}
			// Nothing it started is left in its process group.
			if left := groupRunning(pid); len(left) > 0 {
				t.Errorf("process group %d still has processes %v after the drill", pid, left)
			}
		})
	}
}

// TestDrillInterruptedStopsApp runs drill in a process of its own (main
// and its signal handling), sends it SIGINT while its application runs,
// and expects exit 130, the application stopped by the drill and gone.
// Regression (new-user pass): the interrupted drill printed no report and
// no hint, and the next drill was refused (the target holds the restored
// topics) without saying why; it now prints the report so far, text or
// --json, with the interrupted phase, and says the target is no longer new.
func TestDrillInterruptedStopsApp(t *testing.T) {
	t.Parallel()
	cfg, _ := drillAppRepo(t, "")
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			target := testkit.StartKfake(t, 1)
			pidFile := filepath.Join(t.TempDir(), "pid")
			argv := []string{"--log-level", "info", "drill", "-c", cfg, "--backup-id", "latest",
				"--target-bootstrap-servers", target.Bootstrap(), "--app-command", "echo $$ > " + pidFile + "; exec sleep 300"}
			if asJSON {
				argv = append(argv, "--json")
			}
			args, _ := json.Marshal(argv)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "-test.count=1")
			cmd.Env = append(os.Environ(), "KDR_HELPER_MAIN_ARGS="+string(args))
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					cmd.Process.Kill()
					<-done
				}
			})
			pid := pidIn(t, pidFile)
			if gone(pid) {
				t.Fatalf("the application (pid %d) is not running", pid)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("the drill did not stop within 60s of SIGINT:\n%s", stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitCancelled {
				t.Errorf("exit code %d after SIGINT, want %d\nstderr:\n%s", code, exitCancelled, stderr.String())
			}
			if !gone(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the application (pid %d) still runs after the interrupted drill", pid)
			}
			// The drill stopped it itself (SIGTERM), not only the kernel's
			// parent-death signal.
			if !strings.Contains(stderr.String(), "application stopped") || !strings.Contains(stderr.String(), "SIGTERM") {
				t.Errorf("the drill did not log stopping the application with SIGTERM:\n%s", stderr.String())
			}
			// The report so far, with the interrupted phase.
			out := stdout.String()
			t.Logf("stdout of the interrupted drill:\n%s", out)
			if asJSON {
				var rep struct {
					OK          bool `json:"ok"`
					Interrupted bool `json:"interrupted"`
					Phases      []struct {
						Name   string `json:"name"`
						Status string `json:"status"`
						Error  string `json:"error"`
					} `json:"phases"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("--json of the interrupted drill: %v\n%s", err, out)
				}
				var app string
				for _, p := range rep.Phases {
					if p.Name == "app-running" {
						app = p.Status + ": " + p.Error
					}
				}
				if rep.OK || !rep.Interrupted || app != "failed: interrupted" {
					t.Errorf("--json ok %v, interrupted %v, app-running %q; want false, true, \"failed: interrupted\"\n%s", rep.OK, rep.Interrupted, app, out)
				}
			} else if !strings.Contains(out, "app-running") || !strings.Contains(out, "FAILED: interrupted") || !strings.Contains(out, "drill INTERRUPTED") {
				t.Errorf("stdout of the interrupted drill lacks the report (app-running FAILED: interrupted, drill INTERRUPTED):\n%s", out)
			}
			// What to do next: the target is no longer new.
			if e := stderr.String(); !strings.Contains(e, "Error: interrupted") || !strings.Contains(e, target.Bootstrap()+" now holds the restored topics") || !strings.Contains(e, "new, empty") {
				t.Errorf("stderr lacks the hint that the drill target holds the restored topics:\n%s", e)
			}
		})
	}
}

// TestDrillAppFlags: --app-command and --app-timeout parse, win over
// drill.app, and bad values are usage errors naming the flag.
func TestDrillAppFlags(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()
	var got *drillOptions
	cmd := newDrillCmd(g, s, func(_ context.Context, o *drillOptions, _ *iostreams) error { got = o; return nil })
	parseOnly(t, cmd, "-c", "app.yaml", "--app-command", "exec ./app", "--app-timeout", "90s")
	if got == nil || got.AppCommand != "exec ./app" || got.AppTimeout != 90*time.Second {
		t.Fatalf("options = %+v", got)
	}
	// The flags win over drill.app; drill.app alone is used as is; no
	// command at all starts no application.
	cfgApp := config.DrillApp{Command: "exec ./other", Timeout: time.Minute, StopGrace: 5 * time.Second}
	if a := drillApp(got, cfgApp, []string{"t:9092"}); a == nil || a.Command != "exec ./app" || a.Timeout != 90*time.Second || a.StopGrace != 5*time.Second || a.BootstrapServers[0] != "t:9092" {
		t.Errorf("drillApp with flags = %+v", a)
	}
	if a := drillApp(&drillOptions{}, cfgApp, nil); a == nil || a.Command != "exec ./other" || a.Timeout != time.Minute {
		t.Errorf("drillApp from drill.app = %+v", a)
	}
	if a := drillApp(&drillOptions{}, config.DrillApp{}, nil); a != nil {
		t.Errorf("drillApp without a command = %+v, want nil", a)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"empty app command", []string{"-c", "app.yaml", "--app-command", " "}, "--app-command is empty"},
		{"app timeout zero", []string{"-c", "app.yaml", "--app-command", "x", "--app-timeout", "0s"}, `--app-timeout "0s": zero leaves no time at all`},
		// pflag's own duration flag said `invalid argument "abc" for
		// "--app-timeout" flag: time: invalid duration "abc"` (second
		// new-user pass): every duration flag reads alike.
		{"app timeout not a duration", []string{"-c", "app.yaml", "--app-command", "x", "--app-timeout", "abc"}, `--app-timeout "abc": not a duration (like 30s, 2m)`},
		{"app timeout negative", []string{"-c", "app.yaml", "--app-command", "x", "--app-timeout", "-5s"}, `--app-timeout "-5s": a duration cannot be negative`},
		{"embedded with app command", []string{"--embedded", "--app-command", "x"}, "--app-command does not go with --embedded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"drill"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "Usage:") {
				t.Errorf("exit %d, want 2 with %q and the usage:\n%s", code, tt.want, stderr)
			}
		})
	}
}

// TestDrillAppLeavesItsOutputOpen is a regression test: an application
// command that exits while a process of another session it started still
// holds its output open made the drill wait for that process to end (it
// waited for the output's end before reporting the exit). The drill now
// reports the exit at once, and fails naming it.
func TestDrillAppLeavesItsOutputOpen(t *testing.T) {
	t.Parallel()
	cfg, _ := drillAppRepo(t, "")
	target := testkit.StartKfake(t, 1)
	pidFile := filepath.Join(t.TempDir(), "pid")
	command := fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 300' & echo "holder started"; exit 4`, pidFile)
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
			"--target-bootstrap-servers", target.Bootstrap(), "--app-command", command, "--app-timeout", "10m")
		done <- result{code, stdout, stderr}
	}()
	pid := pidIn(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	select {
	case r := <-done:
		if r.code != exitError || !strings.Contains(r.stderr, "exit status 4") || !strings.Contains(r.stderr, "holder started") {
			t.Errorf("exit %d, want %d naming exit status 4 and the last line\n%s", r.code, exitError, r.stderr)
		}
		// The drill stops the process group it started; a process that
		// left it with setsid is the application's business
		// (docs/OPERATIONS.md), and outlives the drill.
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("the setsid process %d is gone after the drill (%v): the docs say the drill leaves it", pid, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the drill did not end within 2 minutes of an application command that exited at once")
	}
}
