package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// listOptions are the flags of `list`.
type listOptions struct {
	ConfigFile string
	JSON       bool
	Now        time.Time // the cut ages count from it; zero: time.Now()

	Logger *slog.Logger
}

const listLong = `List the backups in the repository named by the config, newest first: id, state,
the cut's time and age, parent, topics, partitions, records, stored bytes and the
compression ratio (uncompressed / stored bytes).

Records and bytes are those of the whole chain a backup needs to be restored (its own
segments and those of the earlier backups it names); --json also gives the segments
the backup wrote itself (own_segments, own_records, own_bytes).

States: complete (restorable); partial (complete and restorable, but the broker kept
answering some partitions' fetches with no records, and the offsets it did not read
are not in this backup; the next backup reads them; --json: state "complete",
partial true, unread_partitions and unread_offsets; describe names the ranges);
running (a backup is running, or was interrupted and
the next backup resumes it); abandoned (an interrupted backup no run will resume:
garbage that prune removes); unreadable (the manifest does not decode). list exits 2
when a manifest is unreadable (damage, as for restore), after listing every backup (run
verify on it); "latest" in the summary is what --backup-id latest means: the newest
backup with a manifest.json, named unreadable when its manifest does not read.

Reads the manifests only (backups/*/manifest.json and progress.json), never a segment.

CONFIG KEYS USED
  storage.* (the repository). No cluster is contacted.`

func newListCmd(g *globalOptions, s *iostreams, runF func(context.Context, *listOptions, *iostreams) error) *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list -c FILE",
		Short: "List the backups in the repository, newest first",
		Long:  listLong,
		Example: `  kafkastreams-dr list -c order-processor.yaml
  kafkastreams-dr list -c order-processor.yaml --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runList(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the backups as JSON")
	return cmd
}

// listedBackup is one backup in the --json output of list.
type listedBackup struct {
	catalog.Summary
	CutAgeSeconds int64 `json:"cut_age_seconds,omitempty"`
}

// listJSON is the --json output of list.
type listJSON struct {
	Repository string         `json:"repository"`
	Backups    []listedBackup `json:"backups"`
}

func runList(ctx context.Context, o *listOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, "list")
	if err != nil {
		return err
	}
	list, err := catalog.List(ctx, store)
	if err != nil {
		return repositoryError(err, store.Location())
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.JSON {
		out := listJSON{Repository: store.Location(), Backups: []listedBackup{}}
		for _, b := range list {
			lb := listedBackup{Summary: b}
			if !b.CutAt.IsZero() {
				lb.CutAgeSeconds = int64(now.Sub(b.CutAt).Seconds())
			}
			out.Backups = append(out.Backups, lb)
		}
		if err := writeJSON(s.Out, out); err != nil {
			return err
		}
	} else {
		printBackupList(s.Out, store.Location(), list, now)
	}
	return unreadableError(list, o.ConfigFile)
}

// unreadableError makes list exit 2 (damageExitCode) when a manifest does not decode: the
// backups it could read are listed, but the repository is damaged (a
// scheduled "list" must not report success over it). It names every
// unreadable manifest and the verify command for the first.
func unreadableError(list []catalog.Summary, file string) error {
	var bad []string
	first := ""
	for _, b := range list {
		if b.State == catalog.StateUnreadable {
			bad = append(bad, b.ManifestKey+": "+b.Error)
			if first == "" {
				first = b.BackupID
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return withCode(damageExitCode, fmt.Errorf("%s unreadable: %s", plural(len(bad), "manifest is", "manifests are"), strings.Join(bad, "; ")),
		fmt.Sprintf("see what is damaged with: kafkastreams-dr verify -c %s --backup-id %s", file, first))
}

// printBackupList prints the table of backups and a summary line.
func printBackupList(w io.Writer, location string, list []catalog.Summary, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintf(w, "no backups in %s\n", location)
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "BACKUP ID\tSTATE\tCUT (UTC)\tAGE\tPARENT\tTOPICS\tPARTITIONS\tRECORDS\tSTORED\tRATIO")
	counts := map[catalog.State]int{}
	// latest is what --backup-id latest means (repository.Latest): the
	// newest backup with a manifest.json, readable or not.
	var latest string
	var latestUnreadable bool
	var unreadable []catalog.Summary
	partial := 0
	for _, b := range list {
		counts[b.State]++
		if latest == "" && (b.State == catalog.StateComplete || b.State == catalog.StateUnreadable && b.ManifestKey == format.ManifestKey(b.BackupID)) {
			latest, latestUnreadable = b.BackupID, b.State == catalog.StateUnreadable
		}
		if b.State == catalog.StateUnreadable {
			unreadable = append(unreadable, b)
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\n", b.BackupID, b.State)
			continue
		}
		state := string(b.State)
		if b.State == catalog.StateComplete && b.Partial {
			state = "partial"
			partial++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", b.BackupID, state,
			b.CutAt.UTC().Format("2006-01-02 15:04:05"), formatAge(now.Sub(b.CutAt)), dash(b.ParentBackupID),
			b.Topics, b.Partitions, b.Records, formatBytes(b.StoredBytes), formatRatio(b.CompressionRatio))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s in %s: %d complete", plural(len(list), "backup", "backups"), location, counts[catalog.StateComplete])
	if partial > 0 {
		fmt.Fprintf(w, " (%d partial)", partial)
	}
	if n := counts[catalog.StateRunning]; n > 0 {
		fmt.Fprintf(w, ", %d running or interrupted", n)
	}
	if n := counts[catalog.StateAbandoned]; n > 0 {
		fmt.Fprintf(w, ", %d abandoned", n)
	}
	if n := counts[catalog.StateUnreadable]; n > 0 {
		fmt.Fprintf(w, ", %d unreadable", n)
	}
	switch {
	case latestUnreadable:
		fmt.Fprintf(w, "; latest: %s (unreadable: --backup-id latest fails; name an older backup to restore it)", latest)
	case latest != "":
		fmt.Fprintf(w, "; latest complete: %s", latest)
	}
	fmt.Fprintln(w)
	for _, b := range unreadable {
		fmt.Fprintf(w, "  %s: %s\n", b.BackupID, b.Error)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", r)
}

// formatAge is a duration for people: "42s", "17m", "5h12m", "3d4h".
func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
