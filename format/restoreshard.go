package format

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// RestoreShardRun is the run object of a sharded restore (restore --shard
// I/N --shard-run RUN; docs/FORMAT.md "Sharded restores"), at
// RestoreShardRunKey(Run). Shard 0 writes it before any write to the
// target and again once the topics are ready; shards 1..N-1 wait for it
// and restore the backup it names, only their partitions of Assignment.
type RestoreShardRun struct {
	Run    string `json:"run"`    // --shard-run, shared by the run's shards
	Shards int    `json:"shards"` // N, at least 1
	// BackupID is the backup every shard restores (shard 0 resolved
	// "latest" once); RestoreID the id of the one restore report.
	BackupID  string `json:"backup_id"`
	RestoreID string `json:"restore_id"`
	// Assignment lists, per shard 0..Shards-1, the partitions it
	// restores: disjoint, covering every planned partition, balanced by
	// records to restore (AssignShards; Offsets counts records here).
	Assignment []ShardAssignment `json:"assignment"`
	// TopicsReady: shard 0 created the restore's topics and every
	// partition answers; no shard produces before.
	TopicsReady bool      `json:"topics_ready"`
	StartedAt   time.Time `json:"started_at"`
}

// Owns reports whether shard restores partition p of topic.
func (r *RestoreShardRun) Owns(shard int, topic string, p int32) bool {
	return (&ShardRun{Assignment: r.Assignment}).Owns(shard, topic, p)
}

// RestoreShardPart is what one shard of a sharded restore produced, at
// RestoreShardPartKey(Run, Shard), written once it has produced every
// partition it owns: each partition's report (its offset map included),
// which the shard completing the restore commits the group's offsets with.
type RestoreShardPart struct {
	Run        string            `json:"run"`
	Shard      int               `json:"shard"`
	Partitions []PartitionReport `json:"partitions"`
	FinishedAt time.Time         `json:"finished_at"`
}

// RestoreShardRunKey is the key of a sharded restore's run object:
// restores/shard-runs/<run>/run.json.
func RestoreShardRunKey(run string) string { return restoresPrefix + "shard-runs/" + run + "/run.json" }

// RestoreShardPartKey is the key of shard's part of a sharded restore:
// restores/shard-runs/<run>/<shard>.json.
func RestoreShardPartKey(run string, shard int) string {
	return fmt.Sprintf("%sshard-runs/%s/%d.json", restoresPrefix, run, shard)
}

// ShardLoad is one partition to assign to a shard and what it weighs
// (offsets to copy for a backup, records to restore for a restore).
type ShardLoad struct {
	Topic     string
	Partition int32
	Load      int64
}

// AssignShards splits items into n disjoint sets balanced by load:
// largest first, each into the least-loaded shard (ties: the lower
// shard; equal loads in topic, partition order). Each set's topics and
// partitions are sorted; Offsets is the set's total load. n >= 1.
func AssignShards(items []ShardLoad, n int) []ShardAssignment {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b ShardLoad) int {
		return cmp.Or(cmp.Compare(b.Load, a.Load), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	out := make([]ShardAssignment, n)
	for i := range out {
		out[i] = ShardAssignment{Shard: i, Partitions: []ShardPartitions{}}
	}
	for _, it := range items {
		best := 0
		for i := range out {
			if out[i].Offsets < out[best].Offsets {
				best = i
			}
		}
		a := &out[best]
		a.Offsets += it.Load
		if k := slices.IndexFunc(a.Partitions, func(tp ShardPartitions) bool { return tp.Topic == it.Topic }); k >= 0 {
			a.Partitions[k].Partitions = append(a.Partitions[k].Partitions, it.Partition)
		} else {
			a.Partitions = append(a.Partitions, ShardPartitions{Topic: it.Topic, Partitions: []int32{it.Partition}})
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Partitions, func(a, b ShardPartitions) int { return cmp.Compare(a.Topic, b.Topic) })
		for k := range out[i].Partitions {
			slices.Sort(out[i].Partitions[k].Partitions)
		}
	}
	return out
}
