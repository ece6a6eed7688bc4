package streamsgroup_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the real broker")

// descriptionPlugin is the broker setting that makes Kafka 4.4 keep the
// topology descriptions (KIP-1331) its streams groups' members send; off by
// default (GroupCoordinatorConfig: "When not set, the feature is
// disabled"), when StreamsGroupDescribe answers NOT_STORED.
var descriptionPlugin = testkit.KafkaProperty("group.streams.topology.description.plugin.class", "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin")

// drillApp is the drill app's expected classification from its streams
// group: the same table topicfilter's TestTopologyTopics pins for its
// describe() text (topicfilter/testdata/topologies/drill-app.txt).
var drillApp = topicfilter.TopologyTopics{
	Inputs:      []string{"drill-categories", "drill-events"},
	Outputs:     []string{"drill-counts", "drill-labeled", "drill-window-counts"},
	Repartition: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic", "drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic", "drill-app-by-category-repartition"},
	Changelogs: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog", "drill-app-category-labels-store-changelog",
		"drill-app-counts-store-changelog", "drill-app-latest-by-user-store-changelog", "drill-app-window-counts-store-changelog"},
	SourceTables: []string{"category-labels-store <- drill-categories"},
}

// TestDescribeRealBroker: on a real Kafka 4.4 broker, the drill app
// running as a streams group (group.protocol=streams) is described with its
// topology and classified to the pinned table; a missing group is
// ErrNotFound and a classic group ErrNotStreamsGroup.
func TestDescribeRealBroker(t *testing.T) {
	k := testkit.StartKafka(t, descriptionPlugin)
	testkit.CreateStreamsAppTopics(t, k.Bootstrap(), 2)
	cl := testkit.Client(t, k.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	app := testkit.StartStreamsApp(t, k.Bootstrap(), testkit.StreamsAppProperty("group.protocol", "streams"))
	g := describeUntil(ctx, t, cl, app.ApplicationID(), func(g *streamsgroup.Group) bool {
		return g.State == streamsgroup.StateStable && g.DescriptionStatus == streamsgroup.DescriptionAvailable
	})
	saveOrCompare(ctx, t, cl, "drill-app.describe.json", g)

	t.Run("group", func(t *testing.T) {
		if g.ID != "drill-app" || len(g.Members) != 1 || g.Members[0].ProcessID == "" || g.Epoch <= 0 {
			t.Errorf("group %+v: want drill-app, STABLE, one member with a process id, epoch > 0", g)
		}
		if g.Topology == nil || len(g.Topology.Subtopologies) != 3 {
			t.Fatalf("topology %+v: want 3 subtopologies", g.Topology)
		}
	})
	t.Run("app topology", func(t *testing.T) {
		at := g.AppTopology(app.ApplicationID())
		want := &topicfilter.AppTopology{From: `streams group "drill-app" on the source cluster (StreamsGroupDescribe)`, TopologyTopics: drillApp, OutputsKnown: true}
		if !reflect.DeepEqual(at, want) {
			t.Errorf("AppTopology:\n got %+v\nwant %+v", at, want)
		}
	})
	t.Run("description", func(t *testing.T) {
		// The converted description classifies as the describe() text
		// of the same app does (topicfilter's pinned table).
		if got := g.Description.Topics(app.ApplicationID(), false); !reflect.DeepEqual(got, drillApp) {
			t.Errorf("Description.Topics:\n got %+v\nwant %+v", got, drillApp)
		}
	})
	t.Run("optimized", func(t *testing.T) {
		app.Stop(t)
		opt := testkit.StartStreamsApp(t, k.Bootstrap(), testkit.StreamsAppID("drill-opt"),
			testkit.StreamsAppProperty("group.protocol", "streams"), testkit.StreamsAppProperty("topology.optimization", "all"))
		og := describeUntil(ctx, t, cl, opt.ApplicationID(), func(g *streamsgroup.Group) bool {
			return g.State == streamsgroup.StateStable && g.DescriptionStatus == streamsgroup.DescriptionAvailable
		})
		saveOrCompare(ctx, t, cl, "drill-opt.describe.json", og)
		opt.Stop(t)
		want := &topicfilter.AppTopology{From: `streams group "drill-opt" on the source cluster (StreamsGroupDescribe)`,
			TopologyTopics: drillOpt, SourceChangelogs: []string{"drill-categories"}, OutputsKnown: true}
		if at := og.AppTopology(opt.ApplicationID()); !reflect.DeepEqual(at, want) {
			t.Errorf("AppTopology (topology.optimization=all):\n got %+v\nwant %+v", at, want)
		}
	})
	t.Run("missing group", func(t *testing.T) {
		_, err := streamsgroup.Describe(ctx, cl, "no-such-app")
		if !errors.Is(err, streamsgroup.ErrNotFound) {
			t.Fatalf("Describe(no-such-app) = %v, want ErrNotFound", err)
		}
	})
	t.Run("classic group", func(t *testing.T) {
		commitClassic(ctx, t, k.Addrs(), "a-classic-app")
		_, err := streamsgroup.Describe(ctx, cl, "a-classic-app")
		if !errors.Is(err, streamsgroup.ErrNotStreamsGroup) {
			t.Fatalf("Describe(a classic group) = %v, want ErrNotStreamsGroup", err)
		}
	})
}

// describeUntil describes group until ok holds (a new member's topology
// and description arrive with its first heartbeats), at most a minute.
func describeUntil(ctx context.Context, t *testing.T, cl *kgo.Client, group string, ok func(*streamsgroup.Group) bool) *streamsgroup.Group {
	t.Helper()
	var g *streamsgroup.Group
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		g, err = streamsgroup.Describe(ctx, cl, group)
		if err == nil && ok(g) {
			return g
		}
	}
	b, _ := json.MarshalIndent(g, "", "  ")
	t.Fatalf("streams group %q not as wanted within a minute: err %v, last %s", group, err, b)
	return nil
}

// commitClassic makes group a classic group by committing an offset for it
// with the classic protocol's OffsetCommit (generation -1, no members).
func commitClassic(ctx context.Context, t *testing.T, addrs []string, group string) {
	t.Helper()
	adm := testkit.Admin(t, addrs)
	resp, err := adm.CommitOffsets(ctx, group, offsetsOf(testkit.StreamsAppEventsTopic, 0, 0))
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit an offset for classic group %q: %v %v", group, err, resp.Error())
	}
}

// saveOrCompare writes the broker's raw answer for group as
// testdata/name with -update; without it, it checks that the saved real
// answer converts to what this broker's answer converts to (g), so the
// unit tests on the saved answer test what Kafka 4.4 sends.
func saveOrCompare(ctx context.Context, t *testing.T, cl *kgo.Client, name string, g *streamsgroup.Group) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{g.ID}
	req.IncludeTopologyDescription = true
	resp, err := req.RequestWith(ctx, cl) // one broker: the coordinator
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("StreamsGroupDescribe %q: %v (%d groups)", g.ID, err, len(resp.Groups))
	}
	raw := resp.Groups[0]
	path := filepath.Join("testdata", name)
	if *update {
		b, err := json.MarshalIndent(raw, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := streamsgroup.FromResponse(loadResponse(t, name))
	now := streamsgroup.FromResponse(&raw)
	if !reflect.DeepEqual(saved.Topology.Subtopologies, now.Topology.Subtopologies) || !reflect.DeepEqual(saved.Description, now.Description) || saved.DescriptionStatus != now.DescriptionStatus {
		b, _ := json.MarshalIndent(raw, "", "  ")
		t.Errorf("the broker's answer differs from %s (rerun with -update if Kafka changed):\n%s", path, b)
	}
}

func loadResponse(t *testing.T, name string) *kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var g kmsg.StreamsGroupDescribeResponseGroup
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &g
}

func offsetsOf(topic string, partition int32, offset int64) kadm.Offsets {
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	return o
}

// TestDescribeUnsupported: a broker that does not serve StreamsGroupDescribe
// (franz-go's kfake serves no API key 89, as Kafka before 4.1 does not) is
// ErrUnsupported, not a missing group.
func TestDescribeUnsupported(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := streamsgroup.Describe(ctx, cl, "drill-app")
	if !errors.Is(err, streamsgroup.ErrUnsupported) {
		t.Fatalf("Describe on a broker without the API = %v, want ErrUnsupported", err)
	}
	if !strings.Contains(err.Error(), `"drill-app"`) {
		t.Errorf("error %q does not name the group", err)
	}
}

// TestDescribeRetriesTheCoordinator: COORDINATOR_LOAD_IN_PROGRESS from
// FindCoordinator is retried (kfake answers it twice, then finds the
// coordinator, which serves no StreamsGroupDescribe: ErrUnsupported), and
// an error that never clears gives up after the bounded attempts, naming
// the error.
func TestDescribeRetriesTheCoordinator(t *testing.T) {
	tests := []struct {
		name     string
		failures int32 // FindCoordinator answers with the error; -1: always
		want     error
		calls    int32
	}{
		{"two failures, then found", 2, streamsgroup.ErrUnsupported, 3},
		{"never found", -1, kerr.CoordinatorLoadInProgress, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kf := testkit.StartKfake(t, 1)
			var calls, left atomic.Int32
			left.Store(tt.failures)
			kf.ControlKey(int16(kmsg.FindCoordinator), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				kf.KeepControl()
				calls.Add(1)
				if n := left.Load(); n == 0 || (n > 0 && !left.CompareAndSwap(n, n-1)) {
					return nil, nil, false
				}
				req := kr.(*kmsg.FindCoordinatorRequest)
				resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
				for _, key := range req.CoordinatorKeys {
					c := kmsg.NewFindCoordinatorResponseCoordinator()
					c.Key, c.ErrorCode = key, kerr.CoordinatorLoadInProgress.Code
					resp.Coordinators = append(resp.Coordinators, c)
				}
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
				return resp, nil, true
			})
			cl := testkit.Client(t, kf.Addrs())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := streamsgroup.Describe(ctx, cl, "drill-app")
			if !errors.Is(err, tt.want) {
				t.Fatalf("Describe = %v, want %v", err, tt.want)
			}
			if got := calls.Load(); got != tt.calls {
				t.Errorf("FindCoordinator asked %d times, want %d", got, tt.calls)
			}
		})
	}
}

// TestDescribeRealBrokerWithoutDescriptions: a Kafka 4.4 broker as it comes
// (no description plugin) answers NOT_STORED; the group's topology still
// names the drill app's inputs, repartition topics and changelogs, and
// AppTopology says the outputs are not known.
func TestDescribeRealBrokerWithoutDescriptions(t *testing.T) {
	k := testkit.StartKafka(t)
	testkit.CreateStreamsAppTopics(t, k.Bootstrap(), 2)
	cl := testkit.Client(t, k.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := testkit.StartStreamsApp(t, k.Bootstrap(), testkit.StreamsAppProperty("group.protocol", "streams"))
	g := describeUntil(ctx, t, cl, app.ApplicationID(), func(g *streamsgroup.Group) bool {
		return g.State == streamsgroup.StateStable && g.Topology != nil
	})
	if g.DescriptionStatus != streamsgroup.DescriptionNotStored || g.Description != nil {
		t.Errorf("description status %s (description %v), want NOT_STORED and none", g.DescriptionStatus, g.Description != nil)
	}
	want := &topicfilter.AppTopology{From: `streams group "drill-app" on the source cluster (StreamsGroupDescribe)`, TopologyTopics: withoutOutputs(drillApp)}
	if at := g.AppTopology(app.ApplicationID()); !reflect.DeepEqual(at, want) {
		t.Errorf("AppTopology:\n got %+v\nwant %+v", at, want)
	}
}
