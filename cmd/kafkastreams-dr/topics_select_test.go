package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TestTopicsSelectsWhatBackupSelects: topics and backup select topics with
// one function (backup.SelectTopics), so that what topics shows is what a
// backup copies, also when the cluster answers a request with a transient
// error once. Before, topics described the topic configs and listed the
// groups its own way: one REQUEST_TIMED_OUT on DescribeConfigs, which the
// backup retries, made topics warn "could not describe topic config" and
// lose the compacted-input warning the backup gave. The other rows hold
// what both already did: another application's changelog
// (order-processor-v2's, known from its group, KAFKA-14922) is left out,
// also when ListGroups answers COORDINATOR_LOAD_IN_PROGRESS once (franz-go
// retries that answer itself).
func TestTopicsSelectsWhatBackupSelects(t *testing.T) {
	const compactedWarning = `topic "customers" is compacted and not declared in source_changelog_topics`
	tests := []struct {
		name  string
		key   kmsg.Key
		fault func(kmsg.Request) kmsg.Response
	}{
		{"no fault", kmsg.Metadata, nil},
		{"DescribeConfigs answers REQUEST_TIMED_OUT once", kmsg.DescribeConfigs, func(kr kmsg.Request) kmsg.Response {
			req := kr.(*kmsg.DescribeConfigsRequest)
			resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
			for _, rr := range req.Resources {
				r := kmsg.NewDescribeConfigsResponseResource()
				r.ResourceType, r.ResourceName, r.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.RequestTimedOut.Code
				resp.Resources = append(resp.Resources, r)
			}
			return resp
		}},
		{"ListGroups answers COORDINATOR_LOAD_IN_PROGRESS once", kmsg.ListGroups, func(kr kmsg.Request) kmsg.Response {
			resp := kr.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			seedSelectionCluster(t, c.ListenAddrs())
			var armed, injected atomic.Int32 // control functions run one at a time
			c.ControlKey(int16(tt.key), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if tt.fault == nil || !armed.CompareAndSwap(1, 0) {
					return nil, nil, false
				}
				injected.Add(1)
				return tt.fault(kr), nil, true
			})
			cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  retry_timeout: 20s
  topics:
    include: [events, customers, "order-processor-*"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(c.ListenAddrs(), ", "), t.TempDir()))

			armed.Store(1)
			code, stdout, stderr := runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("topics: exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			var ds []topicfilter.Decision
			if err := json.Unmarshal([]byte(stdout), &ds); err != nil {
				t.Fatalf("topics: stdout is not JSON: %v\n%s", err, stdout)
			}
			var topicsSelected []string
			for _, d := range ds {
				if d.Selected {
					topicsSelected = append(topicsSelected, d.Topic)
				}
			}
			topicsWarned := strings.Contains(stderr, compactedWarning)
			topicsInjected := injected.Load()

			armed.Store(1)
			code, stdout, stderr = runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("backup: exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			var res backupJSON
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("backup: stdout is not JSON: %v\n%s", err, stdout)
			}
			var backedUp []string
			for _, bt := range res.BackedUp {
				backedUp = append(backedUp, bt.Topic)
			}
			slices.Sort(backedUp)
			backupWarned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, compactedWarning) })

			want := []string{"customers", "events", "order-processor-totals-changelog"}
			if !slices.Equal(topicsSelected, want) {
				t.Errorf("topics selects %v, want %v", topicsSelected, want)
			}
			if !slices.Equal(backedUp, want) {
				t.Errorf("backup copied %v, want %v", backedUp, want)
			}
			if !topicsWarned || !backupWarned {
				t.Errorf("compacted-input warning: topics %v, backup %v; want it from both", topicsWarned, backupWarned)
			}
			if tt.fault != nil && (topicsInjected != 1 || injected.Load() != 2) {
				t.Errorf("faults injected: %d in topics, %d in all; want 1 in each command", topicsInjected, injected.Load())
			}
		})
	}
}

// seedSelectionCluster creates the topics of TestTopicsSelectsWhatBackupSelects
// (an input, a compacted input not declared a source changelog, this
// application's changelog and order-processor-v2's) and the group of
// order-processor-v2, known only from the cluster's groups.
func seedSelectionCluster(t *testing.T, seeds []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	for name, cfg := range map[string]map[string]*string{
		"events":                              nil,
		"customers":                           {"cleanup.policy": &compact},
		"order-processor-totals-changelog":    {"cleanup.policy": &compact},
		"order-processor-v2-counts-changelog": {"cleanup.policy": &compact},
	} {
		if _, err := adm.CreateTopic(t.Context(), 1, 1, cfg, name); err != nil {
			t.Fatalf("create topic %s: %v", name, err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: 0})
	if _, err := adm.CommitOffsets(t.Context(), "order-processor-v2", offs); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*kgo.Record{{Topic: "events", Value: []byte("e")}, {Topic: "customers", Key: []byte("c"), Value: []byte("c")},
		{Topic: "order-processor-totals-changelog", Key: []byte("t"), Value: []byte("1")}} {
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
