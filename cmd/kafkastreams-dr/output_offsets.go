// Rendering of offsets show and offsets translate: a backup's group offsets,
// and how a restore would translate them (or --json). Functions here take a
// writer and plain values; none does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// offsetsShowJSON is the --json output of offsets show.
type offsetsShowJSON struct {
	BackupID      string        `json:"backup_id"`
	ApplicationID string        `json:"application_id,omitempty"`
	Group         *format.Group `json:"group"`
}

// printGroupOffsets prints the group of a manifest: a summary line and the
// table TOPIC PARTITION OFFSET CLASS.
func printGroupOffsets(w io.Writer, m *format.Manifest) {
	g := m.Group
	if g == nil {
		fmt.Fprintf(w, "backup %s holds no group offsets (application_id was not set when it was taken)\n", m.BackupID)
		return
	}
	state := g.State
	if state == "" {
		state = "absent (no such group on the source)"
	}
	fmt.Fprintf(w, "group %s in backup %s: %s\n", g.GroupID, m.BackupID, plural(len(g.Offsets), "committed offset", "committed offsets"))
	fmt.Fprintf(w, "  state        %s\n", state)
	if g.Type != "" || g.Protocol != "" {
		fmt.Fprintf(w, "  type         %s\n", strings.TrimSpace(orNone(g.Type)+" "+protocolNote(g.Protocol)))
	}
	if !g.ReadAt.IsZero() {
		fmt.Fprintf(w, "  read at      %s (before the topics' ends were captured)\n", g.ReadAt.UTC().Format(time.RFC3339))
	}
	if len(g.Configs) > 0 {
		kv := configPairs(g.Configs)
		fmt.Fprintf(w, "  configs      %s (set on the group; a restore sets them on the target's group)\n", strings.Join(kv, " "))
	}
	if len(g.Offsets) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOFFSET\tCLASS")
	for _, off := range g.Offsets {
		class := off.Class
		if class == "" {
			class = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", off.Topic, off.Partition, off.Offset, class)
	}
	tw.Flush()
}

func protocolNote(p string) string {
	if p == "" {
		return ""
	}
	return "(protocol " + p + ")"
}

// offsetsTranslateJSON is the --json output of offsets translate.
type offsetsTranslateJSON struct {
	BackupID string              `json:"backup_id"`
	Strategy restorer.Strategy   `json:"strategy"`
	ToTime   *time.Time          `json:"to_time,omitempty"`
	Group    *restorer.GroupPlan `json:"group"`
}

// writeOffsetTranslation prints gp, the group offsets of backup id as a
// restore with strategy (and the cut toTime, nil for none) would translate
// them into empty topics: a summary line and the offsets table, or JSON
// (offsetsTranslateJSON). gp nil is a backup without group offsets.
func writeOffsetTranslation(w io.Writer, asJSON bool, id string, strategy restorer.Strategy, toTime *time.Time, gp *restorer.GroupPlan) error {
	if asJSON {
		return writeJSON(w, offsetsTranslateJSON{BackupID: id, Strategy: strategy, ToTime: toTime, Group: gp})
	}
	if gp == nil {
		fmt.Fprintf(w, "backup %s holds no group offsets (application_id was not set when it was taken)\n", id)
		return nil
	}
	how := "strategy " + string(strategy)
	if toTime != nil {
		how += ", to " + toTime.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "group %s of backup %s restored into empty topics (%s): %s\n\n", gp.GroupID, id, how, offsetsSummary(gp.Offsets))
	printOffsetPlans(w, gp.Offsets)
	return nil
}

// writeGroupOffsets prints the group offsets backup m holds
// (printGroupOffsets), or them as JSON (offsetsShowJSON).
func writeGroupOffsets(w io.Writer, asJSON bool, m *format.Manifest) error {
	if asJSON {
		return writeJSON(w, offsetsShowJSON{BackupID: m.BackupID, ApplicationID: m.ApplicationID, Group: m.Group})
	}
	printGroupOffsets(w, m)
	return nil
}

// configPairs renders topic or group configs as "name=value" in name
// order: "(sensitive)" for a sensitive entry, "null" for a null value.
func configPairs(configs map[string]format.TopicConfig) []string {
	kv := make([]string, 0, len(configs))
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := configs[k]
		v := "null"
		switch {
		case c.Sensitive:
			v = "(sensitive)"
		case c.Value != nil:
			v = *c.Value
		}
		kv = append(kv, k+"="+v)
	}
	return kv
}
