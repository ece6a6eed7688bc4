package statedir

import (
	"fmt"
	"strings"
	"time"
)

// Verdict is what to do with one store's local state.
type Verdict string

const (
	OK       Verdict = "ok"        // the checkpoint fits the cluster's changelog
	MustWipe Verdict = "must wipe" // the checkpoint refers to another numbering: wipe before the app starts
	Unknown  Verdict = "unknown"   // nothing to compare with
)

// Restore is what Check needs of the last restore of the application: when
// it ran and which changelog partitions it renumbered.
type Restore struct {
	RestoreID  string
	StartedAt  time.Time
	FinishedAt time.Time
	// Restored holds "topic/partition" of every partition the restore wrote.
	Restored map[string]bool
}

// Finding is the verdict for one checkpoint entry (one store's changelog
// partition in one task).
type Finding struct {
	Task       string  `json:"task"`
	Store      string  `json:"store"`
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	Checkpoint int64   `json:"checkpoint"`
	TargetEnd  int64   `json:"target_end"` // the changelog's end on the cluster; -1 when unknown
	Verdict    Verdict `json:"verdict"`
	Reason     string  `json:"reason"`
}

// StoreName derives a store's name from its changelog topic
// (<application.id>-<store>-changelog); a source-topic changelog is named
// after its topic.
func StoreName(applicationID, topic string) string {
	if s, ok := strings.CutPrefix(topic, applicationID+"-"); ok {
		if s, ok := strings.CutSuffix(s, "-changelog"); ok {
			return s
		}
	}
	return topic + " (source topic)"
}

// Boundary is the moment before which local state is stale: the restore's
// end (its start when the report has no end). State whose data existed
// before it was built from the old changelogs, or from a half-restored one.
func (r *Restore) Boundary() time.Time {
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt
	}
	return r.StartedAt
}

// judgeTask judges a task directory's state as a whole against the last
// restore (which renumbered changelogs), by the dates its RocksDB stores
// record in their own files (StoreAge), which a copy or touch keeps, and
// by its files' modification times, which a copy or touch can only make
// newer: data that existed before the restore's boundary is stale (must
// wipe); a task is ok only when every RocksDB store in it is dated, by its
// content, after the boundary; anything else is unknown, since a recent
// modification time proves nothing. SST times are whole seconds, rounded
// down: one in the boundary's second counts as before it (the safe side).
func judgeTask(c Checkpoint, last *Restore) (Verdict, string) {
	b := last.Boundary()
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	for _, s := range c.Stores {
		if !s.Born.IsZero() && s.Born.Before(b) {
			return MustWipe, fmt.Sprintf("RocksDB store %s holds data from %s (%s says so in its content, which a copy or touch keeps), before restore %s renumbered the changelogs: its offsets (inside RocksDB, KIP-1035, or in .checkpoint) are in the old numbering",
				s.Dir, at(s.Born), s.From, last.RestoreID)
		}
	}
	if !c.Oldest.IsZero() && c.Oldest.Before(b) {
		return MustWipe, fmt.Sprintf("%s was modified %s, before restore %s renumbered the changelogs: its offsets (inside RocksDB, KIP-1035, or in .checkpoint) are in the old numbering", c.OldestPath, at(c.Oldest), last.RestoreID)
	}
	var undated []string
	for _, s := range c.Stores {
		if s.Born.IsZero() {
			undated = append(undated, s.Dir)
		}
	}
	switch {
	case len(c.Stores) == 0:
		return Unknown, fmt.Sprintf("no RocksDB store dates the state (no SST file, no rotated LOG); files modified after restore %s prove nothing: a copy or touch gives that", last.RestoreID)
	case len(undated) > 0:
		return Unknown, fmt.Sprintf("RocksDB store %s records no date yet (no SST file, no rotated LOG); files modified after restore %s prove nothing: a copy or touch gives that", strings.Join(undated, ", "), last.RestoreID)
	}
	return OK, fmt.Sprintf("every RocksDB store's data dates from after restore %s, by its SST table properties (rocksdb.creation.time) or rotated LOG names", last.RestoreID)
}

// Check judges every checkpoint entry against the cluster's changelog end
// offsets (targetEnd; ok false when the partition is not on the cluster)
// and the last restore (nil when there was none). When the last restore
// renumbered changelogs, every task directory is first judged as a whole
// (judgeTask): its state is stale when the data of one of its RocksDB
// stores, by the dates the store's own files record (SST table properties,
// rotated LOG names: a copy or touch keeps them), or one of its files, by
// its modification time, predates the restore's boundary (Restore.Boundary).
// Then:
//   - a .checkpoint entry of a restored changelog in a stale task, or a
//     .checkpoint file modified before the boundary: must wipe
//     (docs/DOMAIN.md#field-case-19);
//   - an offset beyond the changelog's end: must wipe (Kafka Streams would
//     declare the task corrupted, or worse, KAFKA-16017);
//   - a changelog missing on the cluster, or an unknown offset (-4): unknown;
//   - an entry of a restored changelog: ok only when every RocksDB store in
//     the task is dated after the boundary, else unknown (a recent
//     modification time is what a copy or touch gives too);
//   - otherwise ok.
//
// A task directory without a .checkpoint file (Kafka Streams 4.x: RocksDB
// stores keep their changelog offsets inside the store, KIP-1035) gets one
// finding for the task: judgeTask's verdict after a restore, unknown
// without one (this tool does not read RocksDB's offsets).
func Check(applicationID string, cps []Checkpoint, targetEnd func(topic string, p int32) (int64, bool), last *Restore) []Finding {
	var out []Finding
	renumbered := last != nil && len(last.Restored) > 0
	for _, c := range cps {
		if c.Err != "" {
			out = append(out, Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1,
				Verdict: MustWipe, Reason: "the .checkpoint file does not parse (" + c.Err + "): the task's state cannot be trusted"})
			continue
		}
		task, why := Unknown, ""
		if renumbered {
			task, why = judgeTask(c, last)
		}
		if !c.File {
			f := Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1}
			switch {
			case c.ModTime.IsZero():
				f.Verdict, f.Reason = OK, "the task directory holds no state"
			case renumbered:
				f.Verdict, f.Reason = task, why
			default:
				f.Verdict, f.Reason = Unknown, "no .checkpoint file: the stores keep their changelog offsets inside RocksDB (KIP-1035), which this tool does not read, and no restore into this cluster renumbered the changelogs"
			}
			out = append(out, f)
			continue
		}
		for _, e := range c.Entries {
			f := Finding{Task: c.Task, Store: StoreName(applicationID, e.Topic), Topic: e.Topic, Partition: e.Partition, Checkpoint: e.Offset, TargetEnd: -1}
			end, known := targetEnd(e.Topic, e.Partition)
			if known {
				f.TargetEnd = end
			}
			restored := renumbered && last.Restored[fmt.Sprintf("%s/%d", e.Topic, e.Partition)]
			switch {
			case restored && c.ModTime.Before(last.Boundary()):
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("checkpoint written %s, before restore %s renumbered this changelog: it refers to the old cluster's offsets",
					c.ModTime.UTC().Format(time.RFC3339), last.RestoreID)
			case restored && task == MustWipe:
				f.Verdict, f.Reason = MustWipe, why
			case known && e.Offset > end:
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("checkpoint offset %d is beyond the changelog's end %d", e.Offset, end)
			case e.Offset == OffsetUnknown:
				f.Verdict, f.Reason = Unknown, "the checkpoint records no position (-4): the store restores from the changelog's start"
			case !known:
				f.Verdict, f.Reason = Unknown, "the changelog partition is not on the cluster"
			case restored && task == OK:
				f.Verdict, f.Reason = OK, "within the changelog, and "+why
			case restored:
				f.Verdict, f.Reason = Unknown, fmt.Sprintf("within the changelog, and the checkpoint was written after restore %s; but %s", last.RestoreID, why)
			default:
				f.Verdict, f.Reason = OK, "within the changelog"
			}
			out = append(out, f)
		}
	}
	return out
}
