package backup

import (
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestAssignShards: every partition (topics and in-flight tails, those
// with nothing to copy too) goes to exactly one shard, largest first into
// the least-loaded shard, so the loads differ by at most the largest
// partition's; the same input gives the same assignment.
func TestAssignShards(t *testing.T) {
	m := &format.Manifest{
		Topics: []format.Topic{
			{Name: "a", PartitionCuts: []format.Partition{{Partition: 0}, {Partition: 1}, {Partition: 2}}},
			{Name: "b", PartitionCuts: []format.Partition{{Partition: 0}, {Partition: 1}}},
		},
		InFlight: []format.Topic{{Name: "app-x-repartition", PartitionCuts: []format.Partition{{Partition: 0}}}},
	}
	todo := []*work{
		{topic: "a", partition: 0, from: 0, end: 100},
		{topic: "a", partition: 1, from: 50, end: 140}, // 90
		{topic: "a", partition: 2, from: 0, end: 80},
		{topic: "b", partition: 1, from: 0, end: 5},
		{topic: "app-x-repartition", partition: 0, from: 3, end: 10}, // 7
	}
	got := assignShards(m, todo, 2)
	want := []format.ShardAssignment{
		// 100 -> 0; 90 -> 1; 80 -> 1 (90 < 100); 7, 5 and 0 -> 0 (107, 112 < 170).
		{Shard: 0, Offsets: 100 + 7 + 5, Partitions: []format.ShardPartitions{{Topic: "a", Partitions: []int32{0}}, {Topic: "app-x-repartition", Partitions: []int32{0}}, {Topic: "b", Partitions: []int32{0, 1}}}},
		{Shard: 1, Offsets: 90 + 80, Partitions: []format.ShardPartitions{{Topic: "a", Partitions: []int32{1, 2}}}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d shards, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Shard != want[i].Shard || got[i].Offsets != want[i].Offsets || len(got[i].Partitions) != len(want[i].Partitions) {
			t.Fatalf("shard %d: %+v, want %+v", i, got[i], want[i])
		}
		for k := range want[i].Partitions {
			g, w := got[i].Partitions[k], want[i].Partitions[k]
			if g.Topic != w.Topic || len(g.Partitions) != len(w.Partitions) {
				t.Fatalf("shard %d: %+v, want %+v", i, got[i], want[i])
			}
			for j := range w.Partitions {
				if g.Partitions[j] != w.Partitions[j] {
					t.Fatalf("shard %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		}
	}
	if d := got[1].Offsets - got[0].Offsets; d < -100 || d > 100 {
		t.Fatalf("loads %d and %d differ by more than the largest partition (100)", got[0].Offsets, got[1].Offsets)
	}
	// More shards than partitions: the extra shards get none.
	many := assignShards(m, todo, 8)
	n := 0
	for _, a := range many {
		for _, tp := range a.Partitions {
			n += len(tp.Partitions)
		}
	}
	if n != 6 || len(many[7].Partitions) != 0 {
		t.Fatalf("8 shards: %d partitions assigned, last shard %+v; want 6 and none", n, many[7])
	}
}
