// Rendering of backup: the summary of a finished backup and its table per
// topic (or --json), and the equivalent config backup --embedded prints.
// Functions here take a writer and plain values; none does Kafka or storage
// I/O.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// backupJSON is the --json output of backup.
type backupJSON struct {
	BackupID   string `json:"backup_id"`
	ParentID   string `json:"parent_backup_id,omitempty"`
	Resumed    bool   `json:"resumed,omitempty"`
	Repository string `json:"repository"`
	Manifest   string `json:"manifest"`
	Topics     int    `json:"topics"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records"`
	Bytes      int64  `json:"bytes"`

	GroupOffsets int               `json:"group_offsets"`
	BackedUp     []backupTopicJSON `json:"backed_up"`
	// InFlight are the repartition topics' in-flight tails the backup
	// holds, and InFlightRecords their records (docs/DOMAIN.md#in-flight).
	InFlight        []backupTopicJSON      `json:"in_flight,omitempty"`
	InFlightRecords int64                  `json:"in_flight_records"`
	NotBackedUp     []topicfilter.Decision `json:"not_backed_up,omitempty"`
	Warnings        []string               `json:"warnings,omitempty"`
	// Unread are the partitions not read to the captured end (exit 3).
	Unread []unreadJSON `json:"unread,omitempty"`
}

// unreadJSON is an offset range [from, to) a partial backup did not read.
type unreadJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Reason    string `json:"reason"`
}

// backupTopicJSON is one backed-up topic: the whole chain's records,
// segments and stored bytes.
type backupTopicJSON struct {
	Topic           string `json:"topic"`
	Class           string `json:"class"`
	SourceChangelog bool   `json:"source_changelog,omitempty"`
	Role            string `json:"role,omitempty"` // its role in the topology, when one was known
	Partitions      int    `json:"partitions"`
	Records         int64  `json:"records"`
	Segments        int    `json:"segments"`
	Bytes           int64  `json:"bytes"`
}

func printBackupResult(w io.Writer, r *backup.Result, location string, m *format.Manifest) {
	state := "complete"
	if len(r.Unread) > 0 {
		state = fmt.Sprintf("partial (%s not read to the captured end; the next backup reads the rest)", plural(len(r.Unread), "partition", "partitions"))
	}
	if r.Resumed {
		fmt.Fprintf(w, "backup %s %s (resumed: an earlier run of it was interrupted)\n", r.BackupID, state)
	} else {
		fmt.Fprintf(w, "backup %s %s\n", r.BackupID, state)
	}
	if r.ParentID != "" {
		fmt.Fprintf(w, "  parent       %s (incremental: only records after it were copied)\n", r.ParentID)
	}
	fmt.Fprintf(w, "  repository   %s\n", location)
	fmt.Fprintf(w, "  manifest     %s\n", r.Manifest)
	// The records count the in-flight tails' (copied by this run too), so
	// the topics and partitions do, as the stderr summary's and the
	// drill's do.
	topics, partitions := r.Counts()
	fmt.Fprintf(w, "  this run     copied %s, %d bytes compressed, from %s (%s)%s\n",
		plural64(r.Records, "record", "records"), r.Bytes, plural(topics, "topic", "topics"),
		plural(partitions, "partition", "partitions"), tailsIncluded(r.InFlightTopics))
	if m.Group != nil {
		fmt.Fprintf(w, "  group        %s: %d committed offsets (state %s)\n", m.Group.GroupID, len(m.Group.Offsets), orNone(m.Group.State))
	}
	if len(m.InFlight) > 0 {
		fmt.Fprintf(w, "  in flight    %s held in the tails of %s (a changelog restore brings them back)\n",
			plural64(r.InFlightRecords, "record", "records"), plural(len(m.InFlight), "repartition topic", "repartition topics"))
	}
	fmt.Fprintln(w, "\nthe backup holds (with the earlier backups it continues):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tCLASS\tPARTITIONS\tRECORDS\tOFFSETS\tSEGMENTS\tBYTES")
	for _, t := range m.Topics {
		var recs, span, bytes int64
		var segs int
		for _, p := range t.PartitionCuts {
			recs += p.Records
			span += p.EndOffset - p.StartOffset
			segs += len(p.Segments)
			for _, sg := range p.Segments {
				bytes += sg.Size
			}
		}
		class := t.Class
		if t.SourceChangelog {
			class = "changelog (source topic)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", t.Name, class, t.Partitions, recs, span, segs, bytes)
	}
	tw.Flush()
	var skipped []topicfilter.Decision
	for _, d := range r.Decisions {
		if !d.Selected && !d.BrokerInternal {
			skipped = append(skipped, d)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "\nnot backed up:")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, d := range skipped {
			fmt.Fprintf(tw, "  %s\t%s\n", d.Topic, d.Reason)
		}
		tw.Flush()
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "\n%s:\n", plural(len(r.Warnings), "warning", "warnings"))
		for _, x := range r.Warnings {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
}

func embeddedConfig(seeds []string, out string) string {
	return fmt.Sprintf(`application_id: %s
source_changelog_topics: [%s]
source:
  bootstrap_servers: [%s]
  topics:
    include: [%s]
storage:
  backend: filesystem
  path: %s
backup:
  source_cluster_id: embedded
`, sample.AppID, strings.Join(sample.SourceChangelogs, ", "), strings.Join(seeds, ", "), quoteAll(sample.Include), out)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// writeBackupResult prints a finished backup on w: a summary and a table per
// topic of manifest m (the backup just written, with the earlier backups it
// continues), and the topics not backed up with the reason; or all of it as
// JSON (backupJSON). location is the repository's.
func writeBackupResult(w io.Writer, asJSON bool, location string, res *backup.Result, m *format.Manifest) error {
	if asJSON {
		out := backupJSON{
			BackupID: res.BackupID, ParentID: res.ParentID, Resumed: res.Resumed, Repository: location,
			Manifest: res.Manifest, Topics: res.Topics, Partitions: res.Partitions,
			Records: res.Records, Bytes: res.Bytes, Warnings: res.Warnings,
		}
		for _, u := range res.Unread {
			out.Unread = append(out.Unread, unreadJSON{Topic: u.Topic, Partition: u.Partition, From: u.From, To: u.To, Reason: u.Reason})
		}
		topicJSON := func(t format.Topic) backupTopicJSON {
			bt := backupTopicJSON{Topic: t.Name, Class: t.Class, SourceChangelog: t.SourceChangelog, Role: t.Role, Partitions: t.Partitions}
			for _, p := range t.PartitionCuts {
				bt.Records += p.Records
				bt.Segments += len(p.Segments)
				for _, sg := range p.Segments {
					bt.Bytes += sg.Size
				}
			}
			return bt
		}
		for _, t := range m.Topics {
			out.BackedUp = append(out.BackedUp, topicJSON(t))
		}
		for _, t := range m.InFlight {
			out.InFlight = append(out.InFlight, topicJSON(t))
		}
		out.InFlightRecords = res.InFlightRecords
		for _, d := range res.Decisions {
			if !d.Selected {
				out.NotBackedUp = append(out.NotBackedUp, d)
			}
		}
		if m.Group != nil {
			out.GroupOffsets = len(m.Group.Offsets)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printBackupResult(w, res, location, m)
	return nil
}
