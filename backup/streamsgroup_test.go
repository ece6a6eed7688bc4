package backup_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
)

// TestSelectTopicsFromTheStreamsGroup: on a real Kafka 4.4 broker that keeps
// topology descriptions (KIP-1331), the drill app running as a streams
// group (group.protocol=streams) is classified by its group's topology with
// no include pattern: SelectTopics selects exactly its inputs, outputs and
// changelogs, each with its role, never its repartition topics, and says
// where the topology came from; a backup (Run) copies those topics and its
// manifest records the topology's source. An application whose group is a classic
// group has no broker topology: without an include that is
// ErrNoTopicsSelector, as before (issue 12).
func TestSelectTopicsFromTheStreamsGroup(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t, testkit.KafkaProperty("group.streams.topology.description.plugin.class", "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"))
	testkit.CreateStreamsAppTopics(t, k.Bootstrap(), 2)
	app := testkit.StartStreamsApp(t, k.Bootstrap(), testkit.StreamsAppProperty("group.protocol", "streams"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testkit.Client(t, k.Addrs())
	// The members send the description with their first heartbeats.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		g, err := streamsgroup.Describe(ctx, cl, app.ApplicationID())
		if err == nil && g.DescriptionStatus == streamsgroup.DescriptionAvailable && g.State == streamsgroup.StateStable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drill app's streams group is not Stable with its description within a minute: %+v, %v", g, err)
		}
	}
	adm := kadm.NewClient(cl)

	t.Run("streams group", func(t *testing.T) {
		o := backup.Options{ApplicationID: app.ApplicationID(), Source: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, RetryTimeout: 10 * time.Second}
		sel, err := backup.SelectTopics(ctx, adm, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]string{}
		for _, d := range sel.Selected() {
			roles[d.Topic] = string(d.Role)
		}
		want := map[string]string{
			testkit.StreamsAppEventsTopic: "input", testkit.StreamsAppCategoriesTopic: "input",
			testkit.StreamsAppCountsTopic: "output", testkit.StreamsAppWindowCountsTopic: "output", testkit.StreamsAppLabeledTopic: "output",
			"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog": "changelog",
			"drill-app-category-labels-store-changelog":                              "changelog",
			"drill-app-counts-store-changelog":                                       "changelog",
			"drill-app-latest-by-user-store-changelog":                               "changelog",
			"drill-app-window-counts-store-changelog":                                "changelog",
		}
		if !equalMaps(roles, want) {
			t.Errorf("selected (topic: role) %v,\nwant %v", roles, want)
		}
		if sel.Topology == nil || sel.Topology.From != `streams group "drill-app" on the source cluster (StreamsGroupDescribe)` || !sel.Topology.OutputsKnown {
			t.Errorf("Selection.Topology = %+v, want the streams group's, outputs known", sel.Topology)
		}
	})
	t.Run("backup", func(t *testing.T) {
		// backup.Run resolves the same topology and records where it
		// came from; the manifest holds exactly the selected topics.
		fs, err := storage.NewFilesystem(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		r, err := backup.Run(ctx, backup.Options{ApplicationID: app.ApplicationID(), Source: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)},
			Store: fs, SourceClusterID: "test", RetryTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		m := backupcheck.Latest(t, fs, r.BackupID)
		var names []string
		for _, tp := range m.Topics {
			names = append(names, tp.Name)
		}
		slices.Sort(names)
		want := []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog", "drill-app-category-labels-store-changelog",
			"drill-app-counts-store-changelog", "drill-app-latest-by-user-store-changelog", "drill-app-window-counts-store-changelog",
			testkit.StreamsAppCategoriesTopic, testkit.StreamsAppCountsTopic, testkit.StreamsAppEventsTopic, testkit.StreamsAppLabeledTopic, testkit.StreamsAppWindowCountsTopic}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("backed up %q,\nwant %q", names, want)
		}
		if m.Selection == nil || m.Selection.TopologyFrom != `streams group "drill-app" on the source cluster (StreamsGroupDescribe)` || len(m.Selection.TopologySHA256) != 64 {
			t.Errorf("manifest selection %+v: want the streams group as the topology's source, with its digest", m.Selection)
		}
	})
	t.Run("classic group", func(t *testing.T) {
		var off kadm.Offsets
		off.Add(kadm.Offset{Topic: testkit.StreamsAppEventsTopic, Partition: 0, At: 0, LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(ctx, "classic-app", off); err != nil {
			t.Fatal(err)
		}
		o := backup.Options{ApplicationID: "classic-app", Source: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}, RetryTimeout: 10 * time.Second}
		if sel, err := backup.SelectTopics(ctx, adm, o, nil); !errors.Is(err, backup.ErrNoTopicsSelector) {
			t.Fatalf("SelectTopics of a classic group without include = %+v, %v; want ErrNoTopicsSelector", sel, err)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v, ok := b[k]; !ok || v != a[k] {
			return false
		}
	}
	return true
}

// TestSelectTopicsWhenTheGroupCannotBeDescribed: a failure to describe the
// application's group other than "not a streams group" (here
// FindCoordinator answers GROUP_AUTHORIZATION_FAILED, as for a principal
// without DESCRIBE on the group) is a warning naming the group, and the
// selection goes on by names: a backup that worked before still works.
func TestSelectTopicsWhenTheGroupCannotBeDescribed(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	adm := testkit.Admin(t, kf.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	kf.ControlKey(int16(kmsg.FindCoordinator), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		req := kr.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode = key, kerr.GroupAuthorizationFailed.Code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil, true
	})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := backup.Options{ApplicationID: "app", Include: []string{"orders"}, Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, RetryTimeout: 10 * time.Second}
	sel, err := backup.SelectTopics(t.Context(), adm, o, log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range sel.Selected() {
		got = append(got, d.Topic)
	}
	if !slices.Equal(got, []string{"orders"}) || sel.Topology != nil {
		t.Errorf("selected %q with topology %+v, want [orders] by name", got, sel.Topology)
	}
	if !strings.Contains(logs.String(), "could not describe the application's streams group") || !strings.Contains(logs.String(), "group=app") ||
		!strings.Contains(logs.String(), "GROUP_AUTHORIZATION_FAILED") {
		t.Errorf("warnings %q: want one naming the group and the broker's error", logs.String())
	}
}

// TestSelectTopicsWarnsOutputsUnknown: a topology that cannot name the
// outputs (a streams group's, on brokers that keep no KIP-1331
// descriptions) with no include backs up no output: a warning says so and
// how to include them; with an include (which names them) there is none.
func TestSelectTopicsWarnsOutputsUnknown(t *testing.T) {
	kf := seededKfake(t)
	adm := testkit.Admin(t, kf.Addrs())
	top := sampleTopology("")
	top.OutputsKnown, top.Outputs, top.From = false, nil, `streams group "`+sample.AppID+`" on the source cluster (StreamsGroupDescribe)`
	for _, tt := range []struct {
		name    string
		include []string
		warn    bool
	}{
		{"no include", nil, true},
		{"an include", sample.Include, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := backup.Options{ApplicationID: sample.AppID, Include: tt.include, Exclude: sample.Exclude, Topology: top, RetryTimeout: 10 * time.Second}
			sel, err := backup.SelectTopics(t.Context(), adm, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, w := range sel.Warnings {
				if strings.Contains(w, "names no output topics") && strings.Contains(w, "source.topics.include") && strings.Contains(w, "group.streams.topology.description.plugin.class") {
					warned = true
				}
			}
			if warned != tt.warn {
				t.Errorf("warnings %q: want the outputs-unknown warning %v", sel.Warnings, tt.warn)
			}
		})
	}
}

// TestBackupWarnsWhenTheGroupCannotBeDescribed: the warning that the
// application's streams group could not be described (FindCoordinator
// answers GROUP_AUTHORIZATION_FAILED once, as for a principal without
// DESCRIBE on the group) reaches the manifest's warnings and the result's,
// not only the log (new-user pass, issue 12: selection warnings were a log
// line on stderr).
func TestBackupWarnsWhenTheGroupCannotBeDescribed(t *testing.T) {
	kf := seededKfake(t)
	fs, _ := storage.NewFilesystem(t.TempDir())
	kf.ControlKey(int16(kmsg.FindCoordinator), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode = key, kerr.GroupAuthorizationFailed.Code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil, true
	})
	r, err := backup.Run(t.Context(), sampleOptions(kf.Addrs(), fs))
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, fs, r.BackupID)
	for what, ws := range map[string][]string{"manifest": m.Warnings, "result": r.Warnings} {
		if !slices.ContainsFunc(ws, func(w string) bool {
			return strings.Contains(w, "could not describe the application's streams group") && strings.Contains(w, "GROUP_AUTHORIZATION_FAILED")
		}) {
			t.Errorf("%s warnings %q: none says the group could not be described", what, ws)
		}
	}
}
