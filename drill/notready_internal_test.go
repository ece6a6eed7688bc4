package drill

import (
	"slices"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
)

// TestTopologyProblems: the topics a streams group's topology needs that
// the target lacks or partitions otherwise are named, one line each; a
// target that holds them all as needed has none. The topology is the
// drill app's shape as StreamsGroupDescribe gives it (Kafka 4.4):
// sub-topology 0 reads the input and writes a repartition topic,
// sub-topology 1 reads it (named only among its repartition source
// topics) and keeps a store. A repartitioned repartition topic makes the
// downstream changelog wrong, as the broker reports it.
func TestTopologyProblems(t *testing.T) {
	const (
		input = "drill-events"
		rep   = "app-by-category-repartition"
		cl0   = "app-store0-changelog"
		cl1   = "app-counts-changelog"
	)
	topo := &streamsgroup.Topology{Subtopologies: []streamsgroup.Subtopology{
		{ID: "0", SourceTopics: []string{input}, RepartitionSinkTopics: []string{rep}, StateChangelogTopics: []streamsgroup.TopicInfo{{Topic: cl0}}},
		{ID: "1", RepartitionSourceTopics: []streamsgroup.TopicInfo{{Topic: rep}}, StateChangelogTopics: []streamsgroup.TopicInfo{{Topic: cl1}}},
	}}
	good := map[string]int32{input: 2, rep: 2, cl0: 2, cl1: 2}
	for _, tt := range []struct {
		name  string
		edit  func(map[string]int32)
		topo  *streamsgroup.Topology
		wants []string
	}{
		{name: "every topic as needed", edit: func(map[string]int32) {}},
		{name: "repartition topic with another partition count", edit: func(m map[string]int32) { m[rep] = 3 },
			wants: []string{`changelog "app-counts-changelog" has 2 partitions, sub-topology 1 has 3 tasks (the partitions of "app-by-category-repartition")`}},
		{name: "changelog missing", edit: func(m map[string]int32) { delete(m, cl1) },
			wants: []string{`changelog "app-counts-changelog" (of sub-topology 1) does not exist`}},
		{name: "changelog with another partition count", edit: func(m map[string]int32) { m[cl0] = 1 },
			wants: []string{`changelog "app-store0-changelog" has 1 partition, sub-topology 0 has 2 tasks (the partitions of "drill-events")`}},
		{name: "input and repartition topic missing", edit: func(m map[string]int32) { delete(m, input); delete(m, rep) },
			wants: []string{`repartition topic "app-by-category-repartition" (read by sub-topology 1) does not exist`, `source topic "drill-events" (of sub-topology 0) does not exist`}},
		{name: "repartition topic asked with a count", edit: func(m map[string]int32) {},
			topo: &streamsgroup.Topology{Subtopologies: []streamsgroup.Subtopology{
				{ID: "0", SourceTopics: []string{input}, RepartitionSinkTopics: []string{rep}},
				{ID: "1", RepartitionSourceTopics: []streamsgroup.TopicInfo{{Topic: rep, Partitions: 4}}},
			}},
			wants: []string{`repartition topic "app-by-category-repartition" has 2 partitions, the application enforces 4`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]int32{}
			for k, v := range good {
				m[k] = v
			}
			tt.edit(m)
			tp := topo
			if tt.topo != nil {
				tp = tt.topo
			}
			got := topologyProblems(tp, m)
			if !slices.Equal(got, tt.wants) && !(len(got) == 0 && len(tt.wants) == 0) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.wants)
			}
		})
	}
}
