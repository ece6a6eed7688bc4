package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// backedUpEvents backs up topic "events" (2 partitions, n records each,
// values "p<partition>-<i>") of a kfake source into a new repository and
// returns a restore config into target with the given timeouts.
func backedUpEvents(t *testing.T, n int, target, timeouts string) string {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(2) {
		for i := range n {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "events", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := writeFile(t, "restore.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [events]
target:
  bootstrap_servers: [%s]
%sstorage:
  backend: filesystem
  path: %s
`, src.ListenAddrs()[0], target, timeouts, t.TempDir()))
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
		t.Fatalf("backup: exit %d\n%s\n%s", code, stdout, stderr)
	}
	return cfg
}

// TestRestoreProduceBoundedByRetryTimeout: the restore's produce requests
// are bounded by target.retry_timeout (plus one request_timeout), not by a
// retry count. A target broker that stops answering Produce (and answers
// everything else) makes the restore exit 1 well within a minute (with
// retry_timeout 2s), naming the broker's host:port, the topic and the
// partition, with the resume hint; before, franz-go's idempotent producer
// retried the unanswered request without end.
func TestRestoreProduceBoundedByRetryTimeout(t *testing.T) {
	t.Parallel()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	addr := dst.ListenAddrs()[0]
	cfg := backedUpEvents(t, 20, addr, "  request_timeout: 500ms\n  retry_timeout: 2s\n")
	var produces atomic.Int64
	var healed atomic.Bool
	dst.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if healed.Load() {
			dst.DropControl()
			return nil, nil, false
		}
		dst.KeepControl()
		produces.Add(1)
		return nil, nil, true // read, never answered
	})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, out, errOut := testStreams()
	err = run(ctx, []string{"--log-level", "error", "restore", "-c", cfg, "--yes"}, s)
	if ctx.Err() != nil {
		t.Fatalf("restore against a broker that never answers Produce still running after a minute (retry_timeout 2s): %v", err)
	}
	if code := exitCode(ctx, err); code != exitError {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, exitError, out, errOut)
	}
	if produces.Load() == 0 {
		t.Fatal("no Produce request reached the target: the fault was not injected")
	}
	msg := err.Error()
	for _, want := range []string{addr, `topic "events" partition `, "target.retry_timeout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q: %v", want, msg)
		}
	}
	t.Logf("error: %v", err)
	if hint := errorHint(err); !strings.Contains(hint, "resumes") {
		t.Errorf("hint %q; want the resume hint", hint)
	}

	// The broker answers again: the same restore resumes, and every record
	// is on the target once.
	healed.Store(true)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("resumed restore: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	checkEvents(t, addr, 20)
}

// TestRestoreOutlastsProduceRefusals: a target broker that refuses Produce
// for a while (NOT_ENOUGH_REPLICAS, or no answer at all), for less than
// target.retry_timeout, is survived: every record lands exactly once, at
// offsets 0..n-1 of its partition, in order.
func TestRestoreOutlastsProduceRefusals(t *testing.T) {
	t.Parallel()
	const n = 30
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	addr := dst.ListenAddrs()[0]
	cfg := backedUpEvents(t, n, addr, "  request_timeout: 500ms\n  retry_timeout: 15s\n")
	var (
		began           time.Time
		refused, silent int
	)
	dst.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		if began.IsZero() {
			began = time.Now()
		}
		if time.Since(began) > 4*time.Second {
			return nil, nil, false
		}
		if (refused+silent)%2 == 1 {
			silent++
			return nil, nil, true // never answered: the request times out
		}
		refused++
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})

	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if refused == 0 || silent == 0 {
		t.Fatalf("%d Produce requests refused, %d left unanswered: the faults were not injected", refused, silent)
	}
	checkEvents(t, addr, n)
}

// checkEvents checks that each of the 2 partitions of "events" on addr
// holds exactly the n records "p<partition>-<i>" at offsets 0..n-1.
func checkEvents(t *testing.T, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]*kgo.Record{}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(got[0])+len(got[1]) < 2*n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	for p := range int32(2) {
		if len(got[p]) != n {
			t.Errorf("partition %d: %d records on the target, want %d", p, len(got[p]), n)
			continue
		}
		for i, r := range got[p] {
			if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("p%d-%d", p, i) {
				t.Errorf("partition %d: record %d is %q at offset %d; want %q at offset %d", p, i, r.Value, r.Offset, fmt.Sprintf("p%d-%d", p, i), i)
				break
			}
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), "events")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if lo, ok := ends.Lookup("events", p); !ok || lo.Err != nil || lo.Offset != int64(n) {
			t.Errorf("partition %d ends at %d (%v) on the target, want %d (a record written twice?)", p, lo.Offset, lo.Err, n)
		}
	}
}
