package restorer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// listOffsetsFaults makes the target's brokers answer ListOffsets for each
// partition with code for the partition's first n requests, as Kafka does
// (NOT_LEADER_OR_FOLLOWER) for a while right after CreateTopics although
// metadata already names a leader. It returns how many partition answers
// it failed.
func listOffsetsFaults(dst *testkit.Kfake, n int, code int16) func() int {
	var (
		mu     sync.Mutex
		seen   = map[string]int{}
		failed int
	)
	dst.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		lr := req.(*kmsg.ListOffsetsRequest)
		mu.Lock()
		defer mu.Unlock()
		fail := false
		for _, rt := range lr.Topics {
			for _, rp := range rt.Partitions {
				k := fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)
				if seen[k] < n {
					fail = true
				}
				seen[k]++
			}
		}
		if !fail {
			return nil, nil, false
		}
		resp := lr.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range lr.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
				failed++
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return failed }
}

// TestRestoreIntoNewTopicsRetriesNotLeader is a regression test: right
// after CreateTopics a real broker answers ListOffsets with
// NOT_LEADER_OR_FOLLOWER for a while although metadata names a leader, and
// the first flush of a restore failed with "another producer is writing to
// it" (issue 9: 16 of 26 runs on Kafka 4.4). The restore waits until every
// new partition answers and retries retriable per-partition errors.
func TestRestoreIntoNewTopicsRetriesNotLeader(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	failed := listOffsetsFaults(dst, 3, kerr.NotLeaderForPartition.Code)
	ctx := context.Background()
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if err != nil {
		t.Fatalf("restore into new topics whose partitions answer NOT_LEADER_OR_FOLLOWER at first: %v", err)
	}
	if failed() == 0 {
		t.Fatal("no ListOffsets answer was failed: the test injected nothing")
	}
	if !rep.Committed {
		t.Fatal("offsets not committed")
	}
	for _, tp := range m.Topics {
		for _, pc := range tp.PartitionCuts {
			got, err := sample.ReadCommitted(ctx, dst.Addrs(), tp.Name, map[int32]int64{pc.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != pc.Records {
				t.Fatalf("%s/%d: %d records on the target, the backup has %d", tp.Name, pc.Partition, len(got), pc.Records)
			}
		}
	}
}

// TestRestoreReportsANonRetriableListOffsetsError: a partition error that
// is not retriable is reported as what it is, naming the topic, the
// partition and Kafka's error code, never as another producer writing.
func TestRestoreReportsANonRetriableListOffsetsError(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	listOffsetsFaults(dst, 1<<30, kerr.UnsupportedVersion.Code)
	_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
	if err == nil {
		t.Fatal("restore succeeded although every ListOffsets answer failed")
	}
	var re *restorer.RefusedError
	if errors.As(err, &re) || strings.Contains(err.Error(), "another producer") {
		t.Fatalf("err = %v; want the broker's error, not a refusal or another producer", err)
	}
	for _, want := range []string{"UNSUPPORTED_VERSION", "error code 35", "partition "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to say %q", err, want)
		}
	}
}

// TestValidateOnlyCreateTopicsTimeoutIsNotARefusal is a regression test
// (issue 9): a validate-only CreateTopics that timed out said the topic
// "cannot be created on the target" (a refusal, exit 2). A retriable error
// is transient: it is retried, and the restore goes on once the target
// answers.
func TestValidateOnlyCreateTopicsTimeoutIsNotARefusal(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	var mu sync.Mutex
	timedOut := 0
	dst.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		cr := req.(*kmsg.CreateTopicsRequest)
		mu.Lock()
		defer mu.Unlock()
		if !cr.ValidateOnly || timedOut >= 3 {
			return nil, nil, false
		}
		timedOut++
		resp := cr.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range cr.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	if _, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store}); err != nil {
		t.Fatalf("restore whose first validate-only CreateTopics requests time out: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if timedOut != 3 {
		t.Fatalf("%d validate-only CreateTopics requests timed out, want 3", timedOut)
	}
}

// leaderlessAfterCreate makes the target answer every Metadata request
// that names topics, once this restore's CreateTopics (not a validation)
// has been answered, with LEADER_NOT_AVAILABLE for each of them until
// until: a loaded broker that has not yet elected a leader for every new
// partition. It returns how many such answers it gave.
func leaderlessAfterCreate(dst *testkit.Kfake, until func() bool) func() int {
	var (
		mu         sync.Mutex
		created    bool
		leaderless int
	)
	dst.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		if !req.(*kmsg.CreateTopicsRequest).ValidateOnly {
			mu.Lock()
			created = true
			mu.Unlock()
		}
		return nil, nil, false
	})
	dst.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		req := kr.(*kmsg.MetadataRequest)
		mu.Lock()
		defer mu.Unlock()
		if !created || len(req.Topics) == 0 || until() {
			return nil, nil, false
		}
		leaderless++
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		for i, addr := range dst.Addrs() {
			host, port, _ := net.SplitHostPort(addr)
			n, _ := strconv.Atoi(port)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = int32(i), host, int32(n)
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.ClusterID, resp.ControllerID = kmsg.StringPtr("kfake"), 0
		for _, rt := range req.Topics {
			st := kmsg.NewMetadataResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.LeaderNotAvailable.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return leaderless }
}

// TestLeaderWaitFollowsTheTargetsRetryTimeout is a regression test (issue
// 13): the wait for a leader of every created partition had a fixed 60s
// deadline, whatever target.retry_timeout said: a 2,000-partition restore
// into a loaded broker failed after 60s with the default budget of 2m. The
// wait now lasts the target's retry_timeout: a target whose new partitions
// stay leaderless fails after about that long, with an error naming the
// setting and the fix; one whose leaders come within it is restored.
func TestLeaderWaitFollowsTheTargetsRetryTimeout(t *testing.T) {
	const budget = 3 * time.Second
	for _, tt := range []struct {
		name       string
		leaderless time.Duration // how long after the first leaderless answer the leaders appear
		wantErr    bool
	}{
		{"leaders within the budget", budget / 2, false},
		{"no leader within the budget", time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, store, _ := backedUpSample(t)
			dst := testkit.StartKfake(t, 3)
			var first time.Time // set under leaderlessAfterCreate's lock
			answered := leaderlessAfterCreate(dst, func() bool {
				if first.IsZero() {
					first = time.Now()
				}
				return time.Since(first) >= tt.leaderless
			})
			ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
			defer cancel()
			began := time.Now()
			_, err := restorer.Run(ctx, restorer.Options{
				Target:       []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...), kgo.RetryTimeout(budget)},
				Store:        store,
				RetryTimeout: budget,
			})
			took := time.Since(began)
			if answered() == 0 {
				t.Fatal("no Metadata answer was leaderless: the test injected nothing")
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("restore whose leaders appear %s after creation, within retry_timeout %s: %v", tt.leaderless, budget, err)
				}
				return
			}
			if err == nil {
				t.Fatal("restore succeeded although no created partition ever had a leader")
			}
			if ctx.Err() != nil || took > budget+20*time.Second {
				t.Fatalf("the leader wait took %s with retry_timeout %s (a fixed deadline?): %v", took.Round(time.Millisecond), budget, err)
			}
			if took < budget {
				t.Fatalf("the leader wait gave up after %s, before retry_timeout %s: %v", took.Round(time.Millisecond), budget, err)
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			for _, want := range []string{"target.retry_timeout", "3s", "LEADER_NOT_AVAILABLE", "raise"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v; want it to say %q", err, want)
				}
			}
		})
	}
}

// TestValidateCreateFollowsTheTargetsRetryTimeout: the preflight's
// CreateTopics(validate_only) retries a retriable per-topic error within
// the target's retry_timeout, not a fixed 2 minutes (it waited 2 minutes
// whatever target.retry_timeout said), and the error names the budget.
func TestValidateCreateFollowsTheTargetsRetryTimeout(t *testing.T) {
	const budget = 2 * time.Second
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	var validations atomic.Int32
	dst.ControlKey(int16(kmsg.CreateTopics), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		req := kr.(*kmsg.CreateTopicsRequest)
		if !req.ValidateOnly {
			return nil, nil, false
		}
		validations.Add(1)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	began := time.Now()
	_, err := restorer.Run(ctx, restorer.Options{
		Target:       []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...), kgo.RetryTimeout(budget)},
		Store:        store,
		RetryTimeout: budget,
	})
	took := time.Since(began)
	if validations.Load() < 2 {
		t.Fatalf("%d validations: the test injected nothing to retry", validations.Load())
	}
	if err == nil || ctx.Err() != nil || took > budget+20*time.Second {
		t.Fatalf("after %s (retry_timeout %s): %v; want the validation to give up within the budget", took.Round(time.Millisecond), budget, err)
	}
	if !errors.Is(err, restorer.ErrNothingWritten) || !strings.Contains(err.Error(), "REQUEST_TIMED_OUT") || !strings.Contains(err.Error(), budget.String()) {
		t.Fatalf("err = %v; want it to name REQUEST_TIMED_OUT and the %s budget, nothing written", err, budget)
	}
}
