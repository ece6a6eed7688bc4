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
	RestoreID string
	// Strategy is the restore's --strategy, "changelog" or "rebuild"
	// (format.Strategy; the report's "strategy").
	Strategy   string
	StartedAt  time.Time
	FinishedAt time.Time
	// Restored holds "topic/partition" of every partition the restore wrote.
	Restored map[string]bool
	// Unknown, when set, says why the last restore into the cluster cannot
	// be known (its report does not decode, the repository cannot be
	// opened, the cluster reports no id); the other fields are then zero.
	// Check judges no entry ok on the strength of the changelog alone then:
	// state from before an unknown restore would be stale.
	Unknown string
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

// stale says why state from before r's boundary is stale, after "was
// modified <time>, ": a changelog restore renumbered the changelogs (the
// state's offsets are in the old numbering); a rebuild restored the input
// topics the application reprocesses from their start (the state already
// counts those records: aggregates would count them twice).
func (r *Restore) stale() string {
	if r.Strategy == "rebuild" {
		return fmt.Sprintf("before restore %s (strategy rebuild) finished at %s: the application rebuilds its state from the restored input topics, and this state already counts those records (aggregates would count them twice)",
			r.RestoreID, r.Boundary().UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("before restore %s finished at %s and renumbered the changelogs: its offsets (inside RocksDB, KIP-1035, or in .checkpoint) are in the old numbering",
		r.RestoreID, r.Boundary().UTC().Format(time.RFC3339))
}

// judgeTask judges a task directory's state as a whole against the last
// restore into the cluster (of either strategy), by the dates its RocksDB stores
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
			return MustWipe, fmt.Sprintf("RocksDB store %s holds data from %s (%s says so in its content, which a copy or touch keeps), %s",
				s.Dir, at(s.Born), s.From, last.stale())
		}
	}
	if !c.Oldest.IsZero() && c.Oldest.Before(b) {
		return MustWipe, fmt.Sprintf("%s was modified %s, %s", c.OldestPath, at(c.Oldest), last.stale())
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
// and the last restore into the cluster (nil when there was none). After a
// restore of either strategy, every task directory is first judged as a
// whole (judgeTask): its state is stale when the data of one of its RocksDB
// stores, by the dates the store's own files record (SST table properties,
// rotated LOG names: a copy or touch keeps them), or one of its files, by
// its modification time, predates the restore's boundary (Restore.Boundary:
// a changelog restore renumbered the changelogs; after a rebuild the
// application reprocesses the restored input, which stale state already
// counts). Then:
//   - every .checkpoint entry of a stale task, whatever its changelog (one
//     a rebuild skipped, one not on the cluster), or of a restored changelog
//     whose .checkpoint file was modified before the boundary: must wipe
//     (docs/DOMAIN.md#field-case-19);
//   - an offset beyond the changelog's end: must wipe (Kafka Streams would
//     declare the task corrupted, or worse, KAFKA-16017);
//   - a changelog missing on the cluster, or an unknown offset (-4): unknown;
//   - an entry of a restored changelog: ok only when every RocksDB store in
//     the task is dated after the boundary, else unknown (a recent
//     modification time is what a copy or touch gives too);
//   - an entry within the changelog when the last restore cannot be known
//     (last.Unknown set: an unreadable report, a missing repository):
//     unknown, naming why (state from before a restore would be stale);
//   - otherwise ok.
//
// A task directory without a .checkpoint file (Kafka Streams 4.x: RocksDB
// stores keep their changelog offsets inside the store, KIP-1035), or with
// one that names no changelog ("0\n0\n"; Kafka Streams never writes one:
// OffsetCheckpoint.write deletes the file when it has no offsets), gets one
// finding for the task:
// judgeTask's verdict after a restore, unknown without one (this tool does
// not read RocksDB's offsets); ok only when the directory holds nothing
// and the last restore is known (or there was none): with last.Unknown set
// an empty task directory is unknown too, so that a check that could not
// judge never exits 0.
//
// A symbolic link below a task directory (Checkpoint.Links) is not
// followed: no finding of that task is ok (unknown, naming the link),
// since what it points to is not judged and state wipe refuses it; a file
// or store predating the restore still makes it must wipe.
func Check(applicationID string, cps []Checkpoint, targetEnd func(topic string, p int32) (int64, bool), last *Restore) []Finding {
	var out []Finding
	// The last restore cannot be known: no entry is ok by its changelog
	// alone (Restore.Unknown).
	restoreUnknown := ""
	if last != nil && last.Unknown != "" {
		restoreUnknown, last = last.Unknown, nil
	}
	// Any restore into the cluster makes older state stale: a changelog
	// restore renumbered the changelogs, a rebuild has the application
	// reprocess its input (even one that restored no partition: every
	// record past --to-time).
	restoredInto := last != nil
	for _, c := range cps {
		if c.Err != "" {
			out = append(out, Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1,
				Verdict: MustWipe, Reason: "the .checkpoint file does not parse (" + c.Err + "): the task's state cannot be trusted"})
			continue
		}
		task, why := Unknown, ""
		if restoredInto {
			task, why = judgeTask(c, last)
		}
		first := len(out)
		if !c.File || len(c.Entries) == 0 {
			// No .checkpoint, or one that names no changelog (0 entries):
			// one finding for the task directory as a whole.
			f := Finding{Task: c.Task, Store: "(all stores of the task)", Partition: -1, Checkpoint: -1, TargetEnd: -1}
			switch {
			case c.ModTime.IsZero() && c.Oldest.IsZero() && len(c.Links) == 0 && restoreUnknown != "":
				// Nothing here is stale, but a check that could not
				// know the last restore (a missing repository, a
				// damaged report) gives no all-clear.
				f.Verdict, f.Reason = Unknown, "the task directory holds no state, but the last restore into this cluster cannot be known ("+restoreUnknown+"): this check could not judge the instance, fix that first"
			case c.ModTime.IsZero() && c.Oldest.IsZero() && len(c.Links) == 0:
				f.Verdict, f.Reason = OK, "the task directory holds no state"
			case restoredInto:
				f.Verdict, f.Reason = task, why
			case c.File:
				f.Verdict, f.Reason = Unknown, "the .checkpoint file names no changelog, and no restore into this cluster is recorded to date the task's files against"
			default:
				f.Verdict, f.Reason = Unknown, "no .checkpoint file: the stores keep their changelog offsets inside RocksDB (KIP-1035), which this tool does not read, and no restore into this cluster is recorded to date it against"
			}
			out = append(out, f)
		}
		for _, e := range c.Entries {
			f := Finding{Task: c.Task, Store: StoreName(applicationID, e.Topic), Topic: e.Topic, Partition: e.Partition, Checkpoint: e.Offset, TargetEnd: -1}
			end, known := targetEnd(e.Topic, e.Partition)
			if known {
				f.TargetEnd = end
			}
			restored := restoredInto && last.Restored[fmt.Sprintf("%s/%d", e.Topic, e.Partition)]
			switch {
			case restored && c.ModTime.Before(last.Boundary()):
				f.Verdict, f.Reason = MustWipe, fmt.Sprintf("checkpoint written %s, before restore %s renumbered this changelog: it refers to the old cluster's offsets",
					c.ModTime.UTC().Format(time.RFC3339), last.RestoreID)
			case task == MustWipe:
				// Whatever the changelog says (restored, skipped by a
				// rebuild, not on the cluster): the task's state predates
				// the restore.
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
			case restoreUnknown != "":
				f.Verdict, f.Reason = Unknown, "within the changelog, but the last restore into this cluster cannot be known ("+restoreUnknown+"): state from before a restore would be stale, and nothing here dates it"
			default:
				f.Verdict, f.Reason = OK, "within the changelog"
			}
			out = append(out, f)
		}
		// A symbolic link in the task directory: what it points to is not
		// judged (state wipe refuses it), so no finding of the task is ok.
		if len(c.Links) > 0 {
			what := "symbolic link " + c.Links[0]
			if len(c.Links) > 1 {
				what = "symbolic links " + strings.Join(c.Links, ", ")
			}
			link := what + " in the task directory: this check does not follow links, so what it points to is not judged, and state wipe refuses it; find out what it is, remove it by hand, then check again"
			for i := first; i < len(out); i++ {
				switch out[i].Verdict {
				case OK:
					out[i].Verdict, out[i].Reason = Unknown, link
				case Unknown:
					out[i].Reason = link + "; and " + out[i].Reason
				}
			}
		}
	}
	return out
}
