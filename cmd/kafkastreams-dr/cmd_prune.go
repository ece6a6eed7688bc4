package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
)

// pruneOptions are the flags of `prune`.
type pruneOptions struct {
	ConfigFile string
	KeepLast   int           // 0: not given
	KeepWithin time.Duration // 0: not given
	DryRun     bool
	JSON       bool

	Logger *slog.Logger
}

const pruneLong = `Forget old backups and delete the segments no kept backup needs.

A complete backup is kept when --keep-last or --keep-within keeps it (give one or both;
with both, a backup either keeps stays). The latest complete backup is always kept, and
so is a running or interrupted backup (the next backup resumes it) with every segment
it names. Incremental backups name the segments of earlier backups they need, so a
kept backup stays restorable whatever is forgotten: only the segments that no kept
backup names are deleted, with the progress files of interrupted backups no run will
resume, the segments such runs wrote, and the restore journals of forgotten backups.
Restore reports (restores/<id>/report.json) stay.

prune takes the repository's backup lock and the lock of every restore target, and
refuses while a backup or restore runs. It deletes manifests first and segments
after: interrupted at any point, it leaves objects no manifest names (the next prune
deletes them), never a backup that names a missing segment.

--dry-run prints what would be deleted and deletes nothing (it takes no lock).

CONFIG KEYS USED
  storage.* (the repository). No cluster is contacted.`

func newPruneCmd(g *globalOptions, s *iostreams, runF func(context.Context, *pruneOptions, *iostreams) error) *cobra.Command {
	o := &pruneOptions{}
	var within string
	cmd := &cobra.Command{
		Use:   "prune -c FILE --keep-last N | --keep-within DURATION [--dry-run]",
		Short: "Forget old backups and delete segments no kept backup needs",
		Long:  pruneLong,
		Example: `  kafkastreams-dr prune -c order-processor.yaml --keep-last 7 --dry-run
  kafkastreams-dr prune -c order-processor.yaml --keep-within 30d
  kafkastreams-dr prune -c order-processor.yaml --keep-last 3 --keep-within 72h --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			lastSet, withinSet := cmd.Flags().Changed("keep-last"), cmd.Flags().Changed("keep-within")
			if !lastSet && !withinSet {
				return &usageError{errors.New("say what to keep: --keep-last N, --keep-within DURATION, or both")}
			}
			if lastSet && o.KeepLast < 1 {
				return &usageError{fmt.Errorf("invalid --keep-last %d: must be at least 1 (the latest complete backup is always kept)", o.KeepLast)}
			}
			if withinSet {
				d, err := parseRetention(within)
				if err != nil {
					return &usageError{fmt.Errorf("invalid --keep-within %q: %w", within, err)}
				}
				o.KeepWithin = d
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runPrune(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().IntVar(&o.KeepLast, "keep-last", 0, "keep the N newest complete backups (N >= 1)")
	cmd.Flags().StringVar(&within, "keep-within", "", "keep the complete backups finished within DURATION of now: 30d, 2w, 36h, 1d12h")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be deleted; delete nothing")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// parseRetention parses a duration of weeks (w), days (d) and Go units
// (h, m, s, ...), e.g. "30d", "2w", "1d12h", "90m". It must be positive.
func parseRetention(s string) (time.Duration, error) {
	var total time.Duration
	rest := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		if i := strings.Index(rest, u.suffix); i >= 0 {
			n, err := strconv.Atoi(rest[:i])
			if err != nil || n < 0 {
				return 0, errors.New("want a duration like 30d, 2w, 36h or 1d12h")
			}
			total += time.Duration(n) * u.d
			rest = rest[i+1:]
		}
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, errors.New("want a duration like 30d, 2w, 36h or 1d12h")
		}
		total += d
	}
	if total <= 0 {
		return 0, errors.New("must be positive")
	}
	return total, nil
}

func runPrune(ctx context.Context, o *pruneOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s)
	if err != nil {
		return err
	}
	res, err := catalog.Prune(ctx, store, catalog.PruneOptions{KeepLast: o.KeepLast, KeepWithin: o.KeepWithin, DryRun: o.DryRun, Logger: o.Logger})
	if res != nil {
		if o.JSON {
			if jerr := writeJSON(s.Out, res); jerr != nil && err == nil {
				err = jerr
			}
		} else {
			printPrune(s.Out, store.Location(), res)
		}
		if len(res.Missing) > 0 {
			fmt.Fprintf(s.ErrOut, "warning: %s that kept backups name %s missing (prune did not delete them): run kafkastreams-dr verify -c %s --backup-id ID on each kept backup\n",
				plural(len(res.Missing), "segment", "segments"), map[bool]string{true: "is", false: "are"}[len(res.Missing) == 1], o.ConfigFile)
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, catalog.ErrLocked):
		return withCode(exitUsage, err, "run prune again once the backup or restore has finished")
	case errors.Is(err, catalog.ErrUnreadableKept):
		return withCode(exitError, err, fmt.Sprintf("check it with: kafkastreams-dr verify -c %s --backup-id ID", o.ConfigFile))
	}
	return withCode(exitError, err, "run prune again: an interrupted prune leaves only objects no backup names, which the next prune deletes")
}

// printPrune prints each backup's fate and a summary line.
func printPrune(w io.Writer, location string, r *catalog.PruneResult) {
	if len(r.Backups) == 0 {
		fmt.Fprintf(w, "no backups in %s\n", location)
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "ACTION\tBACKUP ID\tSTATE\tCUT (UTC)\tREASON")
		for _, d := range r.Backups {
			action := "keep"
			if !d.Keep {
				action = "forget"
			}
			cut := "-"
			if !d.CutAt.IsZero() {
				cut = d.CutAt.UTC().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", action, d.BackupID, d.State, cut, d.Reason)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	verb := map[bool]string{true: "would delete", false: "deleted"}[r.DryRun]
	fmt.Fprintf(w, "%s %s in %s: %s", map[bool]string{true: "dry run:", false: "prune:"}[r.DryRun], verb, location,
		plural(r.Forgotten, "backup manifest", "backup manifests"))
	if r.Progress > 0 {
		fmt.Fprintf(w, ", %s", plural(r.Progress, "progress file", "progress files"))
	}
	fmt.Fprintf(w, ", %s (%s)", plural(r.Segments, "segment", "segments"), formatBytes(r.SegmentBytes))
	if r.Journals > 0 {
		fmt.Fprintf(w, ", %s", plural(r.Journals, "restore journal", "restore journals"))
	}
	fmt.Fprintf(w, "; %s (%s) stay\n", plural(r.KeptSegments, "segment", "segments"), formatBytes(r.KeptBytes))
	if r.DryRun {
		fmt.Fprintln(w, "nothing was deleted")
	}
}
