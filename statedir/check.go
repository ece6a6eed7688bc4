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

// Check judges every checkpoint entry against the cluster's changelog end
// offsets (targetEnd; ok false when the partition is not on the cluster)
// and the last restore (nil when there was none):
//   - a checkpoint written before the restore of its changelog refers to
//     the old cluster's numbering: must wipe (case 19);
//   - an offset beyond the changelog's end: must wipe (Kafka Streams would
//     declare the task corrupted, or worse, KAFKA-16017);
//   - a changelog missing on the cluster, or an unknown offset (-4): unknown;
//   - otherwise ok.
//
// A task directory without a .checkpoint file (Kafka Streams 4.x: RocksDB
// stores keep their changelog offsets inside the store, KIP-1035) gets one
// finding for the task: must wipe when its newest file predates the last
// restore of any changelog (its stores hold the old numbering), unknown
// otherwise (this tool does not read RocksDB).
func Check(applicationID string, cps []Checkpoint, targetEnd func(topic string, p int32) (int64, bool), last *Restore) []Finding {
	var out []Finding
	for _, c := range cps {
		if c.Err != "" {
			out = append(out, Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1,
				Verdict: MustWipe, Reason: "the .checkpoint file does not parse (" + c.Err + "): the task's state cannot be trusted"})
			continue
		}
		if !c.File {
			f := Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1}
			switch {
			case c.ModTime.IsZero():
				f.Verdict, f.Reason = OK, "the task directory holds no state"
			case last != nil && len(last.Restored) > 0 && c.ModTime.Before(last.StartedAt):
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("state written %s, before restore %s renumbered the changelogs; no .checkpoint file: the stores keep their offsets inside RocksDB (KIP-1035), in the old numbering",
					c.ModTime.UTC().Format(time.RFC3339), last.RestoreID)
			default:
				f.Verdict, f.Reason = Unknown, "no .checkpoint file: the stores keep their changelog offsets inside RocksDB (KIP-1035), which this tool does not read"
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
			restored := last != nil && last.Restored[fmt.Sprintf("%s/%d", e.Topic, e.Partition)]
			switch {
			case restored && c.ModTime.Before(last.StartedAt):
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("checkpoint written %s, before restore %s renumbered this changelog: it refers to the old cluster's offsets",
					c.ModTime.UTC().Format(time.RFC3339), last.RestoreID)
			case known && e.Offset > end:
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("checkpoint offset %d is beyond the changelog's end %d", e.Offset, end)
			case e.Offset == OffsetUnknown:
				f.Verdict, f.Reason = Unknown, "the checkpoint records no position (-4): the store restores from the changelog's start"
			case !known:
				f.Verdict, f.Reason = Unknown, "the changelog partition is not on the cluster"
			case restored:
				f.Verdict, f.Reason = OK, fmt.Sprintf("checkpoint written after restore %s, within the changelog", last.RestoreID)
			default:
				f.Verdict, f.Reason = OK, "within the changelog"
			}
			out = append(out, f)
		}
	}
	return out
}
