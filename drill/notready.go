package drill

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
)

// notReadyBudget bounds the reads that explain a streams group stuck in
// NotReady (StreamsGroupDescribe, Metadata), after the application's
// timeout has already passed.
const notReadyBudget = 30 * time.Second

// leftNotReady reports whether a streams group in state s has had its
// topology validated by the broker: Assigning, Reconciling or Stable
// (streamsgroup.State*). Empty and NotReady have not (a group is NotReady
// while the topics its topology needs are missing or not partitioned as
// it needs: StreamsGroup#maybeUpdateGroupState, KIP-1071).
func leftNotReady(s string) bool {
	for _, r := range []string{streamsgroup.StateAssigning, streamsgroup.StateReconciling, streamsgroup.StateStable} {
		if strings.EqualFold(s, r) {
			return true
		}
	}
	return false
}

// isNotReady reports whether s is the NotReady state.
func isNotReady(s string) bool { return strings.EqualFold(s, streamsgroup.StateNotReady) }

// notReadyReason explains why the streams group of the drill stays
// NotReady: it describes the group (its topology as the broker holds it)
// and reads the partitions of every topic that topology names on the
// target, and names each topic missing there or partitioned otherwise
// than the topology needs (topologyProblems). The reads are bounded by
// notReadyBudget; their failure is said in the reason.
func (d *drill) notReadyReason(ctx context.Context, waited time.Duration) string {
	group := d.groupID()
	head := fmt.Sprintf("streams group %q stayed NotReady for %s: the broker did not validate the topics its topology needs (KIP-1071)", group, waited.Round(time.Second))
	rctx, cancel := context.WithTimeout(ctx, notReadyBudget)
	defer cancel()
	g, err := streamsgroup.Describe(rctx, d.appClient, group)
	if err != nil {
		return fmt.Sprintf("%s; its topology could not be read: %v", head, err)
	}
	if g.Topology == nil || len(g.Topology.Subtopologies) == 0 {
		return head + "; the broker holds no topology for it: see the application's log"
	}
	var names []string
	for _, st := range g.Topology.Subtopologies {
		names = append(names, st.SourceTopics...)
		for _, ti := range slices.Concat(st.StateChangelogTopics, st.RepartitionSourceTopics) {
			names = append(names, ti.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	td, err := kadm.NewClient(d.appClient).ListTopics(rctx, names...)
	if err != nil {
		return fmt.Sprintf("%s; the target's topics could not be read: %v", head, err)
	}
	partitions := map[string]int32{}
	for _, t := range td {
		switch {
		case t.Err == nil:
			partitions[t.Topic] = int32(len(t.Partitions))
		case errors.Is(t.Err, kerr.UnknownTopicOrPartition): // absent
		default:
			return fmt.Sprintf("%s; topic %q on the target could not be read: %v", head, t.Topic, t.Err)
		}
	}
	reason, missing := notReadyExplanation(head, g.Topology, partitions)
	d.rep.App.MissingSourceTopics = missing
	return reason
}

// notReadyExplanation words why a streams group with topology t stays
// NotReady on a target holding partitions (the partition count per
// topic; absent: the topic does not exist), after head, and returns the
// source topics missing there (sorted). On Kafka 4.4 the group
// coordinator checks the source topics first
// (org.apache.kafka.coordinator.group.streams.topics.InternalTopicManager#configureTopics:
// MISSING_SOURCE_TOPICS before it computes the missing internal topics)
// and the broker creates the missing repartition topics and changelogs
// itself once they exist (KafkaApis, createStreamsInternalTopics on the
// StreamsGroupHeartbeat): a missing source topic is then the cause and
// the fix, and the internal topics missing with it are not named as the
// user's to create. Otherwise every topic the target lacks or partitions
// otherwise than the topology needs is named (topologyProblems).
func notReadyExplanation(head string, t *streamsgroup.Topology, partitions map[string]int32) (string, []string) {
	var missing []string
	for _, st := range t.Subtopologies {
		for _, src := range st.SourceTopics {
			if _, ok := partitions[src]; !ok && !slices.Contains(missing, src) {
				missing = append(missing, src)
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		var named []string
		for _, p := range topologyProblems(t, partitions) {
			for _, m := range missing {
				if strings.Contains(p, fmt.Sprintf("source topic %q", m)) {
					named = append(named, p+" on the target")
				}
			}
		}
		it := "it"
		if len(missing) > 1 {
			it = "them"
		}
		return head + "; " + strings.Join(named, "; ") +
			fmt.Sprintf(": restore %s (a drill with --topics must include every input of the application) or create %s; the broker creates the repartition topics and changelogs the topology needs once its source topics exist (KIP-1071)", it, it), missing
	}
	problems := topologyProblems(t, partitions)
	if len(problems) == 0 {
		return head + "; every topic its topology names exists on the target with the partitions it needs: see the application's log (the StreamsGroupHeartbeat status)", nil
	}
	return head + "; on the target " + strings.Join(problems, "; ") +
		": restore into a new target, or create or repartition those topics as the topology needs", nil
}

// topologyProblems names each topic of topology that partitions (the
// target's partition count per topic; absent: the topic does not exist)
// does not hold as the broker needs it to validate the topology, as the
// group coordinator checks it (KIP-1071; measured on Kafka 4.4, whose
// members then report "Existing topic X has different number of
// partitions: expected N, found M"): every source topic, repartition
// topic and changelog exists; a sub-topology has as many tasks as the
// most partitions of the topics it reads (an existing repartition topic
// counted with the partitions it has, a missing one with those the
// application asks for, or else those of the sub-topology writing it); a
// changelog has as many partitions as its sub-topology has tasks; a
// repartition topic whose partition count the application enforces has
// it. Sorted by topic, one line each.
func topologyProblems(t *streamsgroup.Topology, partitions map[string]int32) []string {
	asked := map[string]int32{}   // repartition topic -> partitions the application enforces (0: none)
	writer := map[string]string{} // repartition topic -> the sub-topology writing it
	reads := map[string][]string{}
	for _, st := range t.Subtopologies {
		reads[st.ID] = slices.Clone(st.SourceTopics)
		for _, rt := range st.RepartitionSourceTopics {
			asked[rt.Topic] = rt.Partitions
			if !slices.Contains(reads[st.ID], rt.Topic) {
				reads[st.ID] = append(reads[st.ID], rt.Topic)
			}
		}
		for _, sink := range st.RepartitionSinkTopics {
			writer[sink] = st.ID
		}
	}
	tasks := map[string]int32{}
	count := func(topic string) int32 {
		if n, ok := partitions[topic]; ok {
			return n
		}
		if n := asked[topic]; n > 0 {
			return n
		}
		return tasks[writer[topic]]
	}
	for range len(t.Subtopologies) + 1 { // a chain of repartition topics settles
		for _, st := range t.Subtopologies {
			var n int32
			for _, src := range reads[st.ID] {
				n = max(n, count(src))
			}
			tasks[st.ID] = n
		}
	}
	problems := map[string]string{}
	for _, st := range t.Subtopologies {
		widest := ""
		for _, src := range reads[st.ID] {
			have, ok := partitions[src]
			_, internal := asked[src]
			switch {
			case !ok && internal:
				problems[src] = fmt.Sprintf("repartition topic %q (read by sub-topology %s) does not exist", src, st.ID)
			case !ok:
				problems[src] = fmt.Sprintf("source topic %q (of sub-topology %s) does not exist", src, st.ID)
			case internal && asked[src] > 0 && have != asked[src]:
				problems[src] = fmt.Sprintf("repartition topic %q has %s, the application enforces %d", src, plural(int64(have), "partition", "partitions"), asked[src])
			}
			if ok && have == tasks[st.ID] && widest == "" {
				widest = src
			}
		}
		for _, cl := range st.StateChangelogTopics {
			have, ok := partitions[cl.Topic]
			switch {
			case !ok:
				problems[cl.Topic] = fmt.Sprintf("changelog %q (of sub-topology %s) does not exist", cl.Topic, st.ID)
			case tasks[st.ID] > 0 && have != tasks[st.ID]:
				problems[cl.Topic] = fmt.Sprintf("changelog %q has %s, sub-topology %s has %s (the partitions of %q)", cl.Topic,
					plural(int64(have), "partition", "partitions"), st.ID, plural(int64(tasks[st.ID]), "task", "tasks"), widest)
			}
		}
	}
	out := make([]string, 0, len(problems))
	for _, k := range slices.Sorted(maps.Keys(problems)) {
		out = append(out, problems[k])
	}
	return out
}
