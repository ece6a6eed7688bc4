package backup_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TestDiscoverFromStreamsGroupTopology: the topology a streams group's
// coordinator holds without the describe() text (as streamsgroup's
// Group.AppTopology gives it for the drill app run with
// topology.optimization=all: no outputs, the source table's input among
// its source changelogs) is the authority: its inputs and the changelogs
// on the cluster are found, the source changelog marked, the outputs not
// known (the cluster's other topics, outputs among them, are unrelated),
// the repartition and FK-join topics and a changelog under the prefix
// that the topology does not name (orders-app-v1's, whose group is gone)
// left out.
func TestDiscoverFromStreamsGroupTopology(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	fkReg := "drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic"
	fkResp := "drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic"
	fkStore := "drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog"
	decoy := "drill-opt-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
	topics := []string{"drill-events", "drill-categories", "drill-counts", "drill-labeled", "drill-window-counts",
		fkReg, fkResp, "drill-opt-by-category-repartition", fkStore, "drill-opt-counts-store-changelog",
		"drill-opt-latest-by-user-store-changelog", "drill-opt-window-counts-store-changelog", decoy}
	if _, err := kadm.NewClient(cl).CreateTopics(t.Context(), 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	at := &topicfilter.AppTopology{
		From: `streams group "drill-opt" on the source cluster (StreamsGroupDescribe)`,
		TopologyTopics: topicfilter.TopologyTopics{
			Inputs:      []string{"drill-categories", "drill-events"},
			Repartition: []string{fkReg, fkResp, "drill-opt-by-category-repartition"},
			Changelogs: []string{fkStore, "drill-opt-counts-store-changelog", "drill-opt-latest-by-user-store-changelog",
				"drill-opt-window-counts-store-changelog"},
		},
		SourceChangelogs: []string{"drill-categories"},
	}
	d, err := backup.Discover(t.Context(), kadm.NewClient(cl), backup.DiscoverOptions{ApplicationID: "drill-opt", Topology: at}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantInclude := []string{"drill-categories", "drill-events", fkStore, "drill-opt-counts-store-changelog",
		"drill-opt-latest-by-user-store-changelog", "drill-opt-window-counts-store-changelog"}
	if got := d.Include(); !reflect.DeepEqual(got, wantInclude) {
		t.Errorf("Include() = %v, want %v", got, wantInclude)
	}
	if got := d.SourceChangelogs(); !reflect.DeepEqual(got, []string{"drill-categories"}) {
		t.Errorf("SourceChangelogs() = %v", got)
	}
	if !d.FromTopology || d.OutputsKnown || d.Method != at.From {
		t.Errorf("FromTopology %v, OutputsKnown %v, Method %q", d.FromTopology, d.OutputsKnown, d.Method)
	}
	if want := []string{"drill-counts", "drill-labeled", "drill-window-counts"}; !reflect.DeepEqual(d.Unrelated, want) {
		t.Errorf("Unrelated = %v, want %v", d.Unrelated, want)
	}
	left := map[string]string{}
	for _, l := range d.LeftOut {
		left[l.Topic] = l.Reason
	}
	for topic, want := range map[string]string{
		fkReg:                               "foreign-key-join subscription topic of the topology",
		fkResp:                              "only their in-flight tail is captured",
		"drill-opt-by-category-repartition": "repartition topic of the topology",
		decoy:                               `that the topology (streams group "drill-opt" on the source cluster (StreamsGroupDescribe)) does not name: not this application's, probably an internal topic of application.id "drill-opt-v1"`,
	} {
		if !strings.Contains(left[topic], want) {
			t.Errorf("left out %s: %q, want it to hold %q", topic, left[topic], want)
		}
	}
	if len(left) != 4 {
		t.Errorf("left out %v, want the 4 above", left)
	}
	// Every topic of the topology is on the cluster; that the outputs are
	// not known is OutputsKnown (init's file says it once), not a note.
	if len(d.Notes) != 0 {
		t.Errorf("notes %q, want none", d.Notes)
	}
}

// TestDiscoverNotFound: nothing of the application on the cluster is an
// *ApplicationNotFoundError saying what was looked for; a group that
// committed offsets is enough to be found.
func TestDiscoverNotFound(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(t.Context(), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	_, err := backup.Discover(t.Context(), adm, backup.DiscoverOptions{ApplicationID: "ghost"}, nil)
	var nf *backup.ApplicationNotFoundError
	if !errors.As(err, &nf) || nf.ApplicationID != "ghost" || len(nf.Looked) != 3 {
		t.Fatalf("err = %v, want an ApplicationNotFoundError with 3 things looked for", err)
	}
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.AddOffset("orders", 0, 1, -1)
	if _, err := adm.CommitOffsets(t.Context(), "ghost", os); err != nil {
		t.Fatal(err)
	}
	d, err := backup.Discover(t.Context(), adm, backup.DiscoverOptions{ApplicationID: "ghost"}, nil)
	if err != nil || !reflect.DeepEqual(d.Include(), []string{"orders"}) {
		t.Fatalf("after a commit: %v, %v", d, err)
	}
}

// TestDiscoverSelectsWhatTheTopologyOnlySelectionSelects: with a
// topology, Discover finds exactly the topics SelectTopics selects with no
// include and that topology (what `topics -c` selects on a config with
// topology_file and no include), and leaves out the rest with Plan's
// reasons: one classification, not two. Rows are topologies on which the
// two disagreed: a Java source pattern with a class intersection "&&"
// (Go's regexp reads it as literal characters and matched "borders"; Plan
// refuses the pattern with a warning), and a user topic the application
// writes and reads back (describe() names it as a repartition topic
// "<app>-rekeyed"; Plan takes the bare topic on the cluster for an input).
func TestDiscoverSelectsWhatTheTopologyOnlySelectionSelects(t *testing.T) {
	for _, tt := range []struct {
		name   string
		topics []string
		at     *topicfilter.AppTopology
		want   []string
		note   string // held by one of Discovery.Notes
	}{
		{
			name:   "java class intersection in a source pattern",
			topics: []string{"orders", "borders", "shop-counts-changelog"},
			at: &topicfilter.AppTopology{From: `topology file "shop.txt"`, OutputsKnown: true, TopologyTopics: topicfilter.TopologyTopics{
				Inputs: []string{"orders"}, Patterns: []string{"[a-z&&[^x]]*orders"}, Changelogs: []string{"shop-counts-changelog"}}},
			want: []string{"orders", "shop-counts-changelog"},
			note: `uses Java's character class intersection "&&"`,
		},
		{
			name:   "a topic the application writes and reads back",
			topics: []string{"orders", "rekeyed", "shop-counts-changelog"},
			at: &topicfilter.AppTopology{From: `topology file "shop.txt"`, OutputsKnown: true, TopologyTopics: topicfilter.TopologyTopics{
				Inputs: []string{"orders"}, Repartition: []string{"shop-rekeyed"}, Changelogs: []string{"shop-counts-changelog"}}},
			want: []string{"orders", "rekeyed", "shop-counts-changelog"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kf := testkit.StartKfake(t, 1)
			adm := kadm.NewClient(testkit.Client(t, kf.Addrs()))
			if _, err := adm.CreateTopics(t.Context(), 1, 1, nil, tt.topics...); err != nil {
				t.Fatal(err)
			}
			sel, err := backup.SelectTopics(t.Context(), adm, backup.Options{ApplicationID: "shop", Topology: tt.at}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var selected []string
			for _, dec := range sel.Selected() {
				selected = append(selected, dec.Topic)
			}
			if !reflect.DeepEqual(selected, tt.want) {
				t.Fatalf("SelectTopics selects %v, want %v", selected, tt.want)
			}
			d, err := backup.Discover(t.Context(), adm, backup.DiscoverOptions{ApplicationID: "shop", Topology: tt.at}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Include(); !reflect.DeepEqual(got, selected) {
				t.Errorf("Discover finds %v, the topology-only selection selects %v", got, selected)
			}
			for _, l := range d.LeftOut {
				if slices.Contains(selected, l.Topic) {
					t.Errorf("Discover leaves out %s (%s), which the selection selects", l.Topic, l.Reason)
				}
			}
			if tt.note != "" && !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, tt.note) }) {
				t.Errorf("notes %q, want one holding %q", d.Notes, tt.note)
			}
		})
	}
}

// TestDiscoverOtherApplicationsExtendThePrefix: other_application_ids are
// the groups whose application.id extends this application's prefix
// ("classic-app-v1" for "classic-app"), the only ones whose internal
// topics the prefix can mistake for this application's; another
// application ("drill-app") is not one (new-user pass, issue 12: init
// wrote both under a comment saying they start with "classic-app-"). With
// and without a topology.
func TestDiscoverOtherApplicationsExtendThePrefix(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	adm := kadm.NewClient(testkit.Client(t, kf.Addrs()))
	topics := []string{"orders", "classic-app-counts-changelog", "classic-app-v1-counts-changelog", "drill-app-counts-changelog"}
	if _, err := adm.CreateTopics(t.Context(), 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"classic-app", "classic-app-v1", "drill-app"} {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(t.Context(), g, os); err != nil {
			t.Fatal(err)
		}
	}
	at := &topicfilter.AppTopology{From: `topology file "classic.txt"`, OutputsKnown: true, TopologyTopics: topicfilter.TopologyTopics{
		Inputs: []string{"orders"}, Changelogs: []string{"classic-app-counts-changelog"}}}
	for _, topo := range []*topicfilter.AppTopology{nil, at} {
		d, err := backup.Discover(t.Context(), adm, backup.DiscoverOptions{ApplicationID: "classic-app", Topology: topo}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"classic-app-v1"}; !reflect.DeepEqual(d.OtherApplicationIDs, want) {
			t.Errorf("topology %v: other application ids %q, want %q", topo != nil, d.OtherApplicationIDs, want)
		}
		if got, want := d.Include(), []string{"classic-app-counts-changelog", "orders"}; !reflect.DeepEqual(got, want) {
			t.Errorf("topology %v: include %q, want %q", topo != nil, got, want)
		}
	}
}
