package drill

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsView: a streams group (KIP-1071) runs when STABLE with every
// active task of every subtopology assigned (one per partition of its
// source topics, or of its repartition source topics), and is restoring
// while a member's task offset is more than one per changelog topic below
// its task end offset (each changelog may end with a transaction marker).
func TestStreamsView(t *testing.T) {
	topology := &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"events"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-a-changelog"}, {Topic: "app-b-changelog"}}},
		{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-x-repartition", NumPartitions: 1}}},
	}}
	member := func(tasks map[string][]int32, offsets, ends []kmsg.TaskOffset) kmsg.StreamsGroupDescribeResponseGroupMember {
		m := kmsg.StreamsGroupDescribeResponseGroupMember{TaskOffsets: offsets, TaskEndOffsets: ends}
		for st, ps := range tasks {
			m.Assignment.ActiveTasks = append(m.Assignment.ActiveTasks, kmsg.TaskIDs{SubtopologyID: st, Partitions: ps})
		}
		return m
	}
	all := map[string][]int32{"0": {0, 1}, "1": {0}}
	off := func(st string, p int32, o int64) kmsg.TaskOffset {
		return kmsg.TaskOffset{SubtopologyID: st, Partition: p, Offset: o}
	}
	tests := []struct {
		name      string
		state     string
		members   []kmsg.StreamsGroupDescribeResponseGroupMember
		running   bool
		notRun    string
		restoring string
	}{
		{"not ready", "NOT_READY", []kmsg.StreamsGroupDescribeResponseGroupMember{member(nil, nil, nil)}, false, "streams group NOT_READY with 1 member", ""},
		{"assigning", "ASSIGNING", []kmsg.StreamsGroupDescribeResponseGroupMember{member(all, nil, nil)}, false, "ASSIGNING", ""},
		{"stable, a task not assigned", "STABLE", []kmsg.StreamsGroupDescribeResponseGroupMember{member(map[string][]int32{"0": {0, 1}}, nil, nil)}, false, "active tasks 1_0 not assigned", ""},
		{"stable, tasks over two members", "STABLE", []kmsg.StreamsGroupDescribeResponseGroupMember{member(map[string][]int32{"0": {0}}, nil, nil), member(map[string][]int32{"0": {1}, "1": {0}}, nil, nil)}, true, "", ""},
		{"stable, restoring", "STABLE", []kmsg.StreamsGroupDescribeResponseGroupMember{member(all, []kmsg.TaskOffset{off("0", 0, 100), off("0", 1, 50)}, []kmsg.TaskOffset{off("0", 0, 102), off("0", 1, 53)})}, true, "", "task 0_1 at 50 of 53"},
		{"stable, behind only by a marker per changelog", "STABLE", []kmsg.StreamsGroupDescribeResponseGroupMember{member(all, []kmsg.TaskOffset{off("0", 0, 100)}, []kmsg.TaskOffset{off("0", 0, 102)})}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := groupView{}
			streamsView(kmsg.StreamsGroupDescribeResponseGroup{State: tt.state, Members: tt.members, Topology: topology}, map[string]int32{"events": 2}, &v)
			// "with 1 members" was the grammar fault of a new-user pass.
			if v.running != tt.running || !strings.Contains(v.notRunning, tt.notRun) || (tt.notRun == "") != (v.notRunning == "") || strings.Contains(v.notRunning, " 1 members") {
				t.Errorf("running %v (%q), want %v (%q)", v.running, v.notRunning, tt.running, tt.notRun)
			}
			if !strings.Contains(v.notCaught, tt.restoring) || (tt.restoring == "") != (v.notCaught == "") {
				t.Errorf("not caught up %q, want %q", v.notCaught, tt.restoring)
			}
		})
	}
}
