package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// silentListener accepts TCP connections on 127.0.0.1 and never answers
// (a broker that hangs); it returns the address and closes in t.Cleanup.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// faultConfig is a backup config of topic "events" on brokers, with the
// given extra lines under source (and source.topics, if any).
func faultConfig(t *testing.T, brokers []string, sourceExtra string, topicsExtra ...string) string {
	return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
%s  topics:
    include: [events]
%sstorage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), sourceExtra, strings.Join(topicsExtra, ""), t.TempDir()))
}

// TestBackupWithUnreadPartitionIsPartial: a partition whose fetches are
// answered with no records below the end makes the run exit 3, saying
// partial on stdout and naming the unread range; never "complete".
func TestBackupWithUnreadPartitionIsPartial(t *testing.T) {
	t.Parallel()
	cfg := unreadPartitionConfig(t)

	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg)
	if code != exitPartial {
		t.Fatalf("exit code %d, want %d (partial)\nstdout: %s\nstderr: %s", code, exitPartial, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.Contains(first, "partial") || strings.Contains(first, "complete") {
		t.Errorf("summary line says %q; want partial, not complete", first)
	}
	if !strings.Contains(stderr, `topic "events" partition 1 offsets 0..9`) {
		t.Errorf("stderr does not name the unread range:\n%s", stderr)
	}

	code, stdout, stderr = runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
	if code != exitPartial {
		t.Fatalf("--json: exit code %d, want %d\nstderr: %s", code, exitPartial, stderr)
	}
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(res.Unread) != 1 || res.Unread[0].Partition != 1 || res.Unread[0].From != 0 || res.Unread[0].To != 10 {
		t.Errorf("--json unread = %+v; want partition 1 offsets [0, 10)", res.Unread)
	}
}

// unreadPartitionConfig starts a kfake source with topic "events" (2
// partitions, 10 records each) whose broker answers every fetch of
// partition 1 with no records and no error, and returns a backup config of
// it (retry_timeout 1s): a backup of it leaves partition 1 offsets 0..9
// unread.
func unreadPartitionConfig(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(2) {
		for i := range 10 {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "events", Partition: p, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 1 {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition, sp.HighWatermark, sp.LastStableOffset = 1, 10, 10
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	return faultConfig(t, c.ListenAddrs(), "  retry_timeout: 1s\n")
}

// TestTopicsAndBackupRetryLeaderNotAvailable: one metadata answer with
// LEADER_NOT_AVAILABLE on a topic does not make it "not exist": topics
// selects it and backup copies it, with and without allow_missing (issue 9:
// refused with exit 2, or completed without the topic).
func TestTopicsAndBackupRetryLeaderNotAvailable(t *testing.T) {
	t.Parallel()
	for _, allowMissing := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_missing=%v", allowMissing), func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			var injected int // control functions run one at a time
			c.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kr.(*kmsg.MetadataRequest)
				if req.Topics != nil || injected%2 == 1 { // every other listing of all topics
					if req.Topics == nil {
						injected++
					}
					return nil, nil, false
				}
				injected++
				resp := req.ResponseKind().(*kmsg.MetadataResponse)
				host, port, _ := net.SplitHostPort(c.ListenAddrs()[0])
				b := kmsg.NewMetadataResponseBroker()
				b.Host = host
				fmt.Sscan(port, &b.Port)
				resp.Brokers = append(resp.Brokers, b)
				st := kmsg.NewMetadataResponseTopic()
				st.Topic, st.ErrorCode = kmsg.StringPtr("events"), kerr.LeaderNotAvailable.Code
				resp.Topics = append(resp.Topics, st)
				return resp, nil, true
			})
			cfg := faultConfig(t, c.ListenAddrs(), "  retry_timeout: 20s\n", fmt.Sprintf("    allow_missing: %v\n", allowMissing))

			code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("topics: exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, `"topic": "events"`) || strings.Contains(stderr, "missing") {
				t.Errorf("topics does not select events:\nstdout: %s\nstderr: %s", stdout, stderr)
			}
			code, stdout, stderr = runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("backup: exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			var res backupJSON
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if res.Topics != 1 || len(res.BackedUp) != 1 || res.BackedUp[0].Topic != "events" {
				t.Errorf("backup = %+v; want topic events backed up", res)
			}
			if injected < 2 {
				t.Errorf("%d metadata listings; the fault was not injected", injected)
			}
		})
	}
}

// TestCommandsAgainstASilentBrokerFailNamingIt: every command that talks to
// Kafka is bounded by the cluster's request_timeout and retry_timeout: with
// a broker that accepts connections and never answers, topics, backup and
// restore (the target) exit 1 well within a minute, naming the broker's
// host:port, and estimate goes on without log sizes (issue 9, "no hangs").
func TestCommandsAgainstASilentBrokerFailNamingIt(t *testing.T) {
	t.Parallel()
	silent := silentListener(t)
	timeouts := "  request_timeout: 500ms\n  retry_timeout: 2s\n"

	// A repository with one backup, for the restore into the silent target.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	repo := t.TempDir()
	restoreCfg := writeFile(t, "restore.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [events]
target:
  bootstrap_servers: [%s]
%sstorage:
  backend: filesystem
  path: %s
`, c.ListenAddrs()[0], silent, timeouts, repo))
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", restoreCfg); code != exitOK {
		t.Fatalf("backup for the restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	silentCfg := faultConfig(t, []string{silent}, timeouts)
	estimateCfg := writeFile(t, "estimate.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
%s  topics:
    include: [events]
storage:
  backend: filesystem
  path: %s
`, silent, timeouts, repo))

	tests := []struct {
		args []string
		code int // estimate reads the cluster only for log sizes: it goes on without them
	}{
		{[]string{"topics", "-c", silentCfg}, exitError},
		{[]string{"backup", "-c", silentCfg}, exitError},
		{[]string{"restore", "-c", restoreCfg, "--yes"}, exitError},
		{[]string{"estimate", "-c", estimateCfg}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s, out, errOut := testStreams()
			err := run(ctx, append([]string{"--log-level", "error"}, tt.args...), s)
			if ctx.Err() != nil {
				t.Fatalf("%s against a silent broker still running after a minute (retry_timeout 2s): %v", tt.args[0], err)
			}
			if code := exitCode(ctx, err); code != tt.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.code == exitError && !strings.Contains(err.Error(), silent) || tt.args[0] == "backup" && !strings.Contains(err.Error(), "source cluster "+silent) {
				t.Errorf("error does not name the broker %s: %v", silent, err)
			}
		})
	}
}

// TestBackupResultListsTheConfigWarnings: a config without application_id
// backs up no group offsets; the config's warnings, printed on stderr when
// it is loaded, head the result's warning list on stdout and in --json too
// (new-user test: exit 0 and no word of it on stdout). An application_id
// from an empty ${APP} is refused by the config instead
// (TestBackupWithEmptyApplicationIDVariableIsRefused).
func TestBackupResultListsTheConfigWarnings(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := faultConfig(t, c.ListenAddrs(), "")
	body := strings.Replace(mustRead(t, cfg), "application_id: order-processor\n", "", 1)
	cfg = writeFile(t, "app.yaml", body)
	for _, json := range []bool{false, true} {
		args := []string{"--log-level", "error", "backup", "-c", cfg}
		if json {
			args = append(args, "--json")
		}
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("json %v: exit %d\nstdout: %s\nstderr: %s", json, code, stdout, stderr)
		}
		for _, want := range []string{"application_id is not set"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("json %v: stdout does not mention %q:\n%s", json, want, stdout)
			}
		}
	}
}

// TestTopicsOutlastsTransientLeaderNotAvailable: without --timeout,
// `topics` is bounded by source.retry_timeout, as backup is: a
// LEADER_NOT_AVAILABLE on the topic that lasts longer than the old fixed
// 30s default (and less than retry_timeout) is survived, and the topic is
// selected. An explicit --timeout still wins: the same fault with
// --timeout 3s exits 1 within seconds, naming the source cluster.
func TestTopicsOutlastsTransientLeaderNotAvailable(t *testing.T) {
	const outage = 33 * time.Second // past the old --timeout default of 30s
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no --timeout: source.retry_timeout bounds it", nil, exitOK},
		{"--timeout 3s wins", []string{"--timeout", "3s"}, exitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			var (
				began    time.Time // first listing of all topics; control functions run one at a time
				injected int
			)
			c.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kr.(*kmsg.MetadataRequest)
				if req.Topics != nil {
					return nil, nil, false
				}
				if began.IsZero() {
					began = time.Now()
				}
				if time.Since(began) > outage {
					return nil, nil, false
				}
				injected++
				resp := req.ResponseKind().(*kmsg.MetadataResponse)
				host, port, _ := net.SplitHostPort(c.ListenAddrs()[0])
				b := kmsg.NewMetadataResponseBroker()
				b.Host = host
				fmt.Sscan(port, &b.Port)
				resp.Brokers = append(resp.Brokers, b)
				st := kmsg.NewMetadataResponseTopic()
				st.Topic, st.ErrorCode = kmsg.StringPtr("events"), kerr.LeaderNotAvailable.Code
				resp.Topics = append(resp.Topics, st)
				return resp, nil, true
			})
			cfg := faultConfig(t, c.ListenAddrs(), "  retry_timeout: 90s\n")

			start := time.Now()
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error", "topics", "-c", cfg, "--json"}, tt.args...)...)
			took := time.Since(start)
			if code != tt.code {
				t.Fatalf("topics: exit code %d after %v, want %d\nstdout: %s\nstderr: %s", code, took, tt.code, stdout, stderr)
			}
			if injected < 2 {
				t.Errorf("%d metadata answers with LEADER_NOT_AVAILABLE; the fault was not injected", injected)
			}
			switch tt.code {
			case exitOK:
				if !strings.Contains(stdout, `"topic": "events"`) || strings.Contains(stderr, "missing") {
					t.Errorf("topics does not select events:\nstdout: %s\nstderr: %s", stdout, stderr)
				}
				if took < outage {
					t.Errorf("topics ended after %v, before the %v outage did: the fault did not last", took, outage)
				}
			default:
				if took >= outage {
					t.Errorf("topics --timeout 3s ended after %v, not before the outage ended", took)
				}
				if !strings.Contains(stderr, "source cluster "+c.ListenAddrs()[0]) {
					t.Errorf("stderr does not name the source cluster %s:\n%s", c.ListenAddrs()[0], stderr)
				}
			}
		})
	}
}

// TestReadersShowUnreadRanges: a backup that left a partition's offsets
// unread (exit 3) is shown as partial by every reader: list (text: state
// "partial" and the summary count; --json: partial and unread_offsets),
// describe (the partition's UNREAD range; --json: partition_cuts[].unread),
// verify (a warning, exit 0: it is not damage) and restore's plan (a
// warning that those offsets are not in the backup). Before, all four
// showed it like any complete backup.
func TestReadersShowUnreadRanges(t *testing.T) {
	cfg := unreadPartitionConfig(t)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitPartial {
		t.Fatalf("backup: exit code %d, want %d\nstdout: %s\nstderr: %s", code, exitPartial, stdout, stderr)
	}
	const rangeText = `topic "events" partition 1 offsets 0..9`

	t.Run("list", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "list", "-c", cfg)
		if code != exitOK {
			t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		lines := strings.Split(stdout, "\n")
		if len(lines) < 2 || !strings.Contains(lines[1], " partial ") {
			t.Errorf("the backup's row does not say partial:\n%s", stdout)
		}
		if !strings.Contains(stdout, "1 partial") {
			t.Errorf("the summary does not count the partial backup:\n%s", stdout)
		}
		code, stdout, stderr = runCLI(t, "--log-level", "error", "list", "-c", cfg, "--json")
		if code != exitOK {
			t.Fatalf("--json: exit code %d\nstderr: %s", code, stderr)
		}
		var out struct {
			Backups []struct {
				State         string `json:"state"`
				Partial       bool   `json:"partial"`
				UnreadOffsets int64  `json:"unread_offsets"`
			} `json:"backups"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if len(out.Backups) != 1 || !out.Backups[0].Partial || out.Backups[0].UnreadOffsets != 10 || out.Backups[0].State != "complete" {
			t.Errorf("--json backups = %+v; want one complete backup, partial, 10 unread offsets", out.Backups)
		}
	})
	t.Run("describe", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "describe", "-c", cfg)
		if code != exitOK {
			t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "UNREAD") || !strings.Contains(stdout, "[0,10)") {
			t.Errorf("describe does not show partition 1's unread range [0,10):\n%s", stdout)
		}
		if !strings.Contains(stdout, "partial") {
			t.Errorf("describe does not say the backup is partial:\n%s", stdout)
		}
		code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg, "--json")
		if code != exitOK {
			t.Fatalf("--json: exit code %d\nstderr: %s", code, stderr)
		}
		var out struct {
			Topics []struct {
				Cuts []struct {
					Partition int32 `json:"partition"`
					Unread    *struct {
						From int64 `json:"from"`
						To   int64 `json:"to"`
					} `json:"unread"`
				} `json:"partition_cuts"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		var unread []string
		for _, tp := range out.Topics {
			for _, c := range tp.Cuts {
				if c.Unread != nil {
					unread = append(unread, fmt.Sprintf("%d:[%d,%d)", c.Partition, c.Unread.From, c.Unread.To))
				}
			}
		}
		if strings.Join(unread, " ") != "1:[0,10)" {
			t.Errorf("--json unread ranges %v; want partition 1 [0,10)", unread)
		}
	})
	t.Run("verify", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg)
		if code != exitOK {
			t.Fatalf("exit code %d, want 0 (unread is not damage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "warning") || !strings.Contains(stdout, rangeText) || !strings.Contains(stdout, "not in this backup") {
			t.Errorf("verify does not warn that %s are not in this backup:\n%s", rangeText, stdout)
		}
		code, stdout, stderr = runCLI(t, "--log-level", "error", "verify", "-c", cfg, "--json")
		if code != exitOK {
			t.Fatalf("--json: exit code %d\nstderr: %s", code, stderr)
		}
		var out struct {
			Problems []any    `json:"problems"`
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if len(out.Problems) != 0 || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], rangeText) {
			t.Errorf("--json problems %v, warnings %q; want no problem and one warning naming %s", out.Problems, out.Warnings, rangeText)
		}
	})
	t.Run("restore plan", func(t *testing.T) {
		dst, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dst.Close)
		code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--dry-run", "--target-bootstrap-servers", dst.ListenAddrs()[0])
		if code != exitOK {
			t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(stdout+stderr, rangeText) || !strings.Contains(stdout+stderr, "not in this backup") {
			t.Errorf("the plan does not warn that %s are not in the backup:\nstdout: %s\nstderr: %s", rangeText, stdout, stderr)
		}
	})
}
