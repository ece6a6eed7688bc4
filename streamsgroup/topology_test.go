package streamsgroup_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// drillOpt is the drill app's classification with
// topology.optimization=all (application.id drill-opt): the source table's
// input drill-categories is its store's changelog, which the broker lists
// among subtopology 2's state changelog topics and source topics both.
var drillOpt = topicfilter.TopologyTopics{
	Inputs:      []string{"drill-categories", "drill-events"},
	Outputs:     []string{"drill-counts", "drill-labeled", "drill-window-counts"},
	Repartition: []string{"drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic", "drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic", "drill-opt-by-category-repartition"},
	Changelogs: []string{"drill-opt-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog",
		"drill-opt-counts-store-changelog", "drill-opt-latest-by-user-store-changelog", "drill-opt-window-counts-store-changelog"},
	SourceTables: []string{"category-labels-store <- drill-categories"},
}

// withoutOutputs is what a streams group's topology says without its
// describe() text: no outputs, no source tables.
func withoutOutputs(tt topicfilter.TopologyTopics) topicfilter.TopologyTopics {
	tt.Outputs, tt.SourceTables = nil, nil
	return tt
}

// TestAppTopologyFromSavedAnswers: the real Kafka 4.4 answers for the
// drill app (testdata, TestDescribeRealBroker -update) classify to the
// pinned tables, with the KIP-1331 description (outputs known) and
// without it (NOT_STORED: what a broker without the description plugin
// answers; outputs unknown, the internal topics the same).
func TestAppTopologyFromSavedAnswers(t *testing.T) {
	tests := []struct {
		name, file, app string
		description     bool
		want            *topicfilter.AppTopology
	}{
		{"drill app, described", "drill-app.describe.json", "drill-app", true,
			&topicfilter.AppTopology{TopologyTopics: drillApp, OutputsKnown: true}},
		{"drill app, no description", "drill-app.describe.json", "drill-app", false,
			&topicfilter.AppTopology{TopologyTopics: withoutOutputs(drillApp)}},
		{"optimized, described", "drill-opt.describe.json", "drill-opt", true,
			&topicfilter.AppTopology{TopologyTopics: drillOpt, SourceChangelogs: []string{"drill-categories"}, OutputsKnown: true}},
		{"optimized, no description: the source changelog still known", "drill-opt.describe.json", "drill-opt", false,
			&topicfilter.AppTopology{TopologyTopics: withoutOutputs(drillOpt), SourceChangelogs: []string{"drill-categories"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := loadResponse(t, tt.file)
			if !tt.description {
				raw.TopologyDescription, raw.TopologyDescriptionStatus = nil, 1
			}
			g := streamsgroup.FromResponse(raw)
			want := *tt.want
			want.From = `streams group "` + tt.app + `" on the source cluster (StreamsGroupDescribe)`
			if got := g.AppTopology(tt.app); !reflect.DeepEqual(got, &want) {
				t.Errorf("AppTopology:\n got %+v\nwant %+v", got, &want)
			}
			if tt.description != (g.DescriptionStatus == streamsgroup.DescriptionAvailable) || tt.description != (g.Description != nil) {
				t.Errorf("DescriptionStatus %s, Description %v: want available = %v", g.DescriptionStatus, g.Description != nil, tt.description)
			}
		})
	}
}

// TestAppTopologyNoTopology: a group that holds no topology yet (created
// by an offset commit, or before its first member's heartbeat) gives nil,
// so the classification goes by names.
func TestAppTopologyNoTopology(t *testing.T) {
	raw := loadResponse(t, "drill-app.describe.json")
	raw.Topology, raw.TopologyDescription, raw.TopologyDescriptionStatus = nil, nil, 1
	if at := streamsgroup.FromResponse(raw).AppTopology("drill-app"); at != nil {
		t.Errorf("AppTopology of a group without topology = %+v, want nil", at)
	}
}

// TestDescriptionConversion: the KIP-1331 description of the real answer
// converts to the same sub-topologies, nodes, topics, stores and arrows
// as topicfilter.ParseTopology reads from the app's describe() text
// (topicfilter/testdata/topologies/drill-app.txt), repartition topics
// unprefixed as the text has them; only the order of nodes differs.
func TestDescriptionConversion(t *testing.T) {
	g := streamsgroup.FromResponse(loadResponse(t, "drill-app.describe.json"))
	text, err := os.ReadFile("../topicfilter/testdata/topologies/drill-app.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := topicfilter.ParseTopology(string(text))
	if err != nil {
		t.Fatal(err)
	}
	got := g.Description
	if got == nil {
		t.Fatal("no description converted")
	}
	normalize(got)
	normalize(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("converted description:\n got %+v\nwant %+v", got, want)
	}
}

// normalize sorts nodes by name and their arrows, and makes empty lists
// nil, so two descriptions of one topology compare equal.
func normalize(t *topicfilter.Topology) {
	for _, subs := range [][]topicfilter.SubTopology{t.SubTopologies, t.GlobalStores} {
		for i := range subs {
			nodes := subs[i].Nodes
			slices.SortFunc(nodes, func(a, b topicfilter.Node) int { return strings.Compare(a.Name, b.Name) })
			for j := range nodes {
				for _, l := range []*[]string{&nodes[j].Topics, &nodes[j].Stores, &nodes[j].Successors, &nodes[j].Predecessors} {
					slices.Sort(*l)
					if len(*l) == 0 {
						*l = nil
					}
				}
			}
		}
	}
	if len(t.GlobalStores) == 0 {
		t.GlobalStores = nil
	}
}
