package backup_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TestSelectTopics: the topic selection backup and the topics command
// share. Each row runs it against a kfake cluster with an input, a
// compacted input, this application's changelog and repartition topic,
// another application's changelog (known from its group, or only from
// OtherApplicationIDs), with a DescribeConfigs fault where the row says.
func TestSelectTopics(t *testing.T) {
	tests := []struct {
		name       string
		o          backup.Options
		fault      int16 // a DescribeConfigs error code answered for every resource
		faults     int32 // how many times; -1: always
		selected   []string
		others     []string // the classifier's other applications
		warning    string   // a warning Plan gives
		missing    bool     // a *topicfilter.MissingTopicsError, with the decisions
		mismatch   bool     // a *topicfilter.TopologyMismatchError, with the decisions
		errContain string   // an error, without a Selection
	}{
		{name: "the application's topics, another's changelog left out",
			o:        backup.Options{ApplicationID: "app", Include: []string{"orders", "customers", "app-*"}},
			selected: []string{"app-store-changelog", "customers", "orders"}, others: []string{"app-v2", "z-app"},
			warning: `topic "customers" is compacted`},
		{name: "other application ids are added to the groups, sorted, once",
			o:        backup.Options{ApplicationID: "app", Include: []string{"orders"}, OtherApplicationIDs: []string{"app-v2", "a-app"}},
			selected: []string{"orders"}, others: []string{"a-app", "app-v2", "z-app"}},
		{name: "a declared source changelog is a changelog, without the warning",
			o:        backup.Options{ApplicationID: "app", Include: []string{"customers"}, SourceChangelogTopics: []string{"customers"}},
			selected: []string{"customers"}, others: []string{"app-v2", "z-app"}},
		{name: "a transient DescribeConfigs error is retried",
			o:     backup.Options{ApplicationID: "app", Include: []string{"customers"}},
			fault: kerr.RequestTimedOut.Code, faults: 2, selected: []string{"customers"}, others: []string{"app-v2", "z-app"},
			warning: `topic "customers" is compacted`},
		{name: "a DescribeConfigs error that is not retriable names the topic",
			o:     backup.Options{ApplicationID: "app", Include: []string{"customers"}},
			fault: kerr.InvalidRequest.Code, faults: -1, errContain: "describe configs of topic"},
		{name: "a missing literal include comes with the decisions",
			o:       backup.Options{ApplicationID: "app", Include: []string{"ordres", "orders"}},
			missing: true, selected: []string{"orders"}, others: []string{"app-v2", "z-app"}},
		{name: "a topology selects without include: its inputs and changelog, not its repartition topic nor another's changelog",
			o:        backup.Options{ApplicationID: "app", Topology: appTopology()},
			selected: []string{"app-store-changelog", "customers", "orders"}, others: []string{"app-v2", "z-app"}},
		{name: "a topology changelog the include leaves out is refused with the fix",
			o:        backup.Options{ApplicationID: "app", Topology: appTopology(), Include: []string{"orders", "customers"}, IncludeKey: "source.topics.include (line 4)"},
			mismatch: true, selected: []string{"customers", "orders"}, others: []string{"app-v2", "z-app"},
			errContain: `changelog "app-store-changelog" (topology file app.txt) is not selected: add "app-store-changelog" to source.topics.include (line 4)`},
		{name: "no include and no topology",
			o:          backup.Options{ApplicationID: "app"},
			errContain: "no source.topics.include and no topology: give --topology FILE, set topology_file, or run the app as a streams group (group.protocol=streams)"},
		{name: "a bad pattern",
			o:          backup.Options{Include: []string{"~("}},
			errContain: "("},
	}
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	adm := kadm.NewClient(cl)
	compact := "compact"
	for name, cfg := range map[string]map[string]*string{
		"orders":              nil,
		"customers":           {"cleanup.policy": &compact},
		"app-store-changelog": {"cleanup.policy": &compact},
		"app-x-repartition":   nil,
		"app-v2-s-changelog":  {"cleanup.policy": &compact},
	} {
		if _, err := adm.CreateTopic(t.Context(), 2, 1, cfg, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"app", "app-v2", "z-app"} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0})
		if _, err := adm.CommitOffsets(t.Context(), g, offs); err != nil {
			t.Fatal(err)
		}
	}
	var left atomic.Int32
	var code atomic.Int32
	var asked atomic.Value // the topics of the last DescribeConfigs
	kf.Cluster.ControlKey(int16(kmsg.DescribeConfigs), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		kf.Cluster.KeepControl()
		req := kr.(*kmsg.DescribeConfigsRequest)
		var names []string
		for _, r := range req.Resources {
			names = append(names, r.ResourceName)
		}
		asked.Store(names)
		if n := left.Load(); n == 0 || (n > 0 && !left.CompareAndSwap(n, n-1)) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range req.Resources {
			r := kmsg.NewDescribeConfigsResponseResource()
			r.ResourceType, r.ResourceName, r.ErrorCode = rr.ResourceType, rr.ResourceName, int16(code.Load())
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil, true
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left.Store(tt.faults)
			code.Store(int32(tt.fault))
			t.Cleanup(func() { left.Store(0) })
			o := tt.o
			o.RetryTimeout = 10 * time.Second
			sel, err := backup.SelectTopics(t.Context(), adm, o, nil)
			if tt.errContain != "" && !tt.mismatch {
				if err == nil || !strings.Contains(err.Error(), tt.errContain) || sel != nil {
					t.Fatalf("SelectTopics = %v, %v; want no selection and an error containing %q", sel, err, tt.errContain)
				}
				return
			}
			var missing *topicfilter.MissingTopicsError
			var mismatch *topicfilter.TopologyMismatchError
			if tt.missing != errors.As(err, &missing) || tt.mismatch != errors.As(err, &mismatch) || (err != nil && !tt.missing && !tt.mismatch) {
				t.Fatalf("SelectTopics error %v, want a missing-topics error: %v, a topology mismatch: %v", err, tt.missing, tt.mismatch)
			}
			if tt.mismatch && !strings.Contains(err.Error(), tt.errContain) {
				t.Errorf("error %q does not contain %q", err, tt.errContain)
			}
			if sel != nil && sel.Topology != o.Topology {
				t.Errorf("selection's topology %v, want %v", sel.Topology, o.Topology)
			}
			if sel == nil {
				t.Fatal("no selection")
			}
			if tt.faults > 0 && left.Load() != 0 {
				t.Errorf("%d faults left: not retried", left.Load())
			}
			var got []string
			for _, d := range sel.Selected() {
				got = append(got, d.Topic)
			}
			if !slices.Equal(got, tt.selected) {
				t.Errorf("selected %v, want %v", got, tt.selected)
			}
			if !slices.Equal(sel.Classifier.OtherApplicationIDs, tt.others) {
				t.Errorf("other applications %v, want %v", sel.Classifier.OtherApplicationIDs, tt.others)
			}
			if len(sel.Decisions) != len(sel.Details) {
				t.Errorf("%d decisions for %d topics", len(sel.Decisions), len(sel.Details))
			}
			if tt.warning != "" && !slices.ContainsFunc(sel.Warnings, func(w string) bool { return strings.Contains(w, tt.warning) }) {
				t.Errorf("warnings %q, want one containing %q", sel.Warnings, tt.warning)
			}
			if tt.warning == "" && slices.ContainsFunc(sel.Warnings, func(w string) bool { return strings.Contains(w, "is compacted") }) {
				t.Errorf("warnings %q: a compacted-input warning the row does not expect", sel.Warnings)
			}
			if _, ok := sel.Configs["customers"]; !ok {
				t.Errorf("no configs for customers: %v", sel.Configs)
			}
			for _, name := range asked.Load().([]string) {
				if strings.HasPrefix(name, "__") {
					t.Errorf("configs asked of the broker-internal topic %s", name)
				}
			}
			if _, ok := sel.Groups["app-v2"]; !ok {
				t.Errorf("groups %v lack app-v2", sel.Groups)
			}
		})
	}
}

// appTopology is app's topology as a topology file gives it: orders and
// customers in, a store's changelog and a repartition topic.
func appTopology() *topicfilter.AppTopology {
	return &topicfilter.AppTopology{From: "topology file app.txt", OutputsKnown: true, TopologyTopics: topicfilter.TopologyTopics{
		Inputs: []string{"customers", "orders"}, Changelogs: []string{"app-store-changelog"}, Repartition: []string{"app-x-repartition"},
	}}
}
