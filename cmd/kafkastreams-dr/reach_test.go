package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// closedPort returns a 127.0.0.1 address nothing listens on (a broker that
// is down: connections are refused).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCommandsWaitRetryTimeoutForAnUnreachableCluster: every command's
// first contact with a cluster that refuses connections (a closed port) or
// accepts them and never answers (a silent listener) is retried for the
// cluster's retry_timeout, then fails exit 1 naming the endpoint: no
// earlier than retry_timeout, no later than retry_timeout +
// request_timeout (+ slack). Issue 9 new-user test: a refused connection
// failed after 4-13ms; a silent broker failed at 13.2s with retry_timeout
// 5s, and at 17.5s with 30s or 60s (before the budget); request_timeout
// 30s with retry_timeout 1s took 30s.
func TestCommandsWaitRetryTimeoutForAnUnreachableCluster(t *testing.T) {
	t.Parallel()
	source := testkit.StartKfake(t, 1, kfake.SeedTopics(1, "events"))
	repo := t.TempDir()
	seedCfg := writeFile(t, "seed.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [events]
storage:
  backend: filesystem
  path: %s
`, source.Addrs()[0], repo))
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", seedCfg); code != exitOK {
		t.Fatalf("backup for the restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stateDir := t.TempDir()
	writeState(t, filepath.Join(stateDir, "order-processor", "0_0", ".checkpoint"), "0\n1\nevents 0 0\n")

	endpoints := []struct {
		name string
		addr string
	}{
		{"refused", closedPort(t)},
		{"silent", testkit.StartSilentListener(t)},
	}
	timings := []struct {
		request, retry time.Duration
		only           string // the endpoint, if not both
	}{
		{2 * time.Second, 5 * time.Second, ""},
		{3 * time.Second, time.Second, ""},            // request_timeout above retry_timeout
		{2 * time.Second, 20 * time.Second, "silent"}, // franz-go alone gave up at ~17.5s
	}
	for _, ep := range endpoints {
		for _, tm := range timings {
			if tm.only != "" && tm.only != ep.name {
				continue
			}
			timeouts := fmt.Sprintf("  request_timeout: %s\n  retry_timeout: %s\n", tm.request, tm.retry)
			// source and target: the unreachable endpoint (the repository
			// is the one written above).
			cfg := writeFile(t, "unreachable.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%[1]s]
%[2]s  topics:
    include: [events]
target:
  bootstrap_servers: [%[1]s]
%[2]sstorage:
  backend: filesystem
  path: %[3]s
`, ep.addr, timeouts, repo))
			for _, args := range [][]string{
				{"topics", "-c", cfg},
				{"backup", "-c", cfg},
				{"restore", "-c", cfg, "--yes"},
				{"verify", "-c", cfg, "--against-cluster"},
				{"state", "check", "--state-dir", stateDir, "-c", cfg},
			} {
				if tm.retry > 10*time.Second && args[0] != "topics" {
					continue // the long budget once: every command waits in config.Reach
				}
				t.Run(fmt.Sprintf("%s/%s-%s/%s", ep.name, tm.request, tm.retry, args[0]), func(t *testing.T) {
					t.Parallel() // each waits out its own budget on an endpoint nothing else uses
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					s, out, errOut := testStreams()
					start := time.Now()
					err := run(ctx, append([]string{"--log-level", "error"}, args...), s)
					took := time.Since(start)
					if code := exitCode(ctx, err); code != exitError {
						t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, exitError, out, errOut)
					}
					if low, high := tm.retry-100*time.Millisecond, tm.retry+tm.request+3*time.Second; took < low || took > high {
						t.Errorf("failed after %s; want between %s and %s (retry_timeout %s, request_timeout %s): %v", took.Round(time.Millisecond), low, high, tm.retry, tm.request, err)
					}
					if !strings.Contains(err.Error(), ep.addr) {
						t.Errorf("error does not name the endpoint %s: %v", ep.addr, err)
					}
				})
			}
		}
	}
}

// TestCommandsWaitForABrokerThatComesUp: a CronJob started while the only
// broker restarts (connections refused) waits for it: the broker comes up
// on its port 3 seconds after topics and backup started, and both end 0
// (issue 9: they failed after 4-13ms with "connection refused").
func TestCommandsWaitForABrokerThatComesUp(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"topics", "backup"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel() // a port and a broker of its own
			addr := closedPort(t)
			_, portText, _ := net.SplitHostPort(addr)
			port, _ := strconv.Atoi(portText)
			cfg := faultConfig(t, []string{addr}, "  request_timeout: 2s\n  retry_timeout: 30s\n")
			var upAt time.Time
			up := make(chan *kfake.Cluster, 1)
			go func() {
				time.Sleep(3 * time.Second)
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "events"))
				if err != nil {
					t.Errorf("start kfake on port %d: %v", port, err)
				}
				upAt = time.Now()
				up <- c
			}()
			code, stdout, stderr := runCLI(t, "--log-level", "error", command, "-c", cfg)
			ended := time.Now()
			c := <-up // the send happens after upAt is set
			if c == nil {
				t.FailNow()
			}
			t.Cleanup(c.Close)
			if ended.Before(upAt) {
				t.Fatalf("%s ended (exit %d) before the broker came up\nstdout: %s\nstderr: %s", command, code, stdout, stderr)
			}
			if code != exitOK || command == "topics" && !strings.Contains(stdout, "events") {
				t.Fatalf("exit code %d, want 0 (topics: naming topic events)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
		})
	}
}
