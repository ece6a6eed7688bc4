package drill

import (
	"slices"
	"strings"
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

// TestNotReadyMissingSourceTopic is a second new-user fault of issue 12:
// with a source topic missing on the target (drill --topics without an
// input) the NotReady message also listed the repartition topics and
// changelogs as "does not exist" and said "create ... those topics",
// though they are not the user's to create. On Kafka 4.4 the group
// coordinator checks the source topics first
// (coordinator.group.streams.topics.InternalTopicManager#configureTopics:
// throwOnMissingSourceTopics before missingInternalTopics) and the broker
// creates the missing internal topics itself once they exist
// (KafkaApis: createStreamsInternalTopics). So the missing source topics
// are the cause and the fix; the internal ones are what the broker
// creates afterwards.
func TestNotReadyMissingSourceTopic(t *testing.T) {
	const (
		input = "drill-events"
		rep   = "app-by-category-repartition"
		cl1   = "app-counts-changelog"
	)
	topo := &streamsgroup.Topology{Subtopologies: []streamsgroup.Subtopology{
		{ID: "0", SourceTopics: []string{input}, RepartitionSinkTopics: []string{rep}},
		{ID: "1", RepartitionSourceTopics: []streamsgroup.TopicInfo{{Topic: rep}}, StateChangelogTopics: []streamsgroup.TopicInfo{{Topic: cl1}}},
	}}
	reason, missing := notReadyExplanation("streams group \"app\" stayed NotReady for 40s", topo, map[string]int32{})
	if !slices.Equal(missing, []string{input}) {
		t.Errorf("missing source topics %q, want [%s]", missing, input)
	}
	for _, w := range []string{`source topic "drill-events" (of sub-topology 0) does not exist on the target`, "restore it", "--topics",
		"the broker creates", "repartition topics and changelogs"} {
		if !strings.Contains(reason, w) {
			t.Errorf("reason %q does not say %q", reason, w)
		}
	}
	for _, no := range []string{`repartition topic "app-by-category-repartition" (read by sub-topology 1) does not exist`, `changelog "app-counts-changelog" (of sub-topology 1) does not exist`, "create or repartition those topics"} {
		if strings.Contains(reason, no) {
			t.Errorf("reason %q says %q", reason, no)
		}
	}
	// With every source topic there, the internal topics the target lacks
	// or partitions otherwise are named as before.
	reason, missing = notReadyExplanation("h", topo, map[string]int32{input: 2, rep: 3, cl1: 2})
	if len(missing) != 0 || !strings.Contains(reason, `changelog "app-counts-changelog" has 2 partitions`) {
		t.Errorf("sources present: reason %q, missing %q", reason, missing)
	}
}
