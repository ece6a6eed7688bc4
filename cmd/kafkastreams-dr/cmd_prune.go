package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// pruneOptions are the flags of `prune`.
type pruneOptions struct {
	ConfigFile string
	Policy     catalog.Policy // the --keep-* flags; zero rules are not given
	DryRun     bool
	JSON       bool

	Logger *slog.Logger
}

const pruneLong = `Forget old backups and delete the segments no kept backup needs.

The policy is restic's ("restic forget"): a complete backup is kept when any --keep-*
flag keeps it (the union), and at least one is needed. The latest complete backup is
always kept, and so is a running or interrupted backup (the next backup resumes it) with
every segment it names.

  --keep-last N      the N newest complete backups
  --keep-hourly N    the newest backup of each of the last N hours that have backups
  --keep-daily N     ... of each of the last N days that have backups
  --keep-weekly N    ... of each of the last N weeks (ISO weeks, Monday to Sunday)
  --keep-monthly N   ... of each of the last N months
  --keep-yearly N    ... of each of the last N years
  --keep-within D    every backup taken within D before the newest backup (not before
                     now: a repository whose backups stopped keeps its last ones)

N may be "unlimited": every backup (keep-last) or the newest of every period.
Hours, days, weeks, months and years are those of the backup's finish time in UTC. A
period without a backup does not count; when the backups run out before N periods, the
oldest backup is kept too (restic's rule). D is a number and a unit, or several:
y (years), m (months), w (weeks), d (days), h (hours), e.g. 30d, 6m, 1y2m3d4h. "m" is
months, as in restic; there are no minutes. The table (and --json "rules") names the
rules that keep each backup.

Incremental backups name the segments of earlier backups they need, so a kept backup
stays restorable whatever is forgotten: only the segments that no kept backup names are
deleted, with the progress files of interrupted backups no run will resume, the segments
such runs wrote, and the restore journals of forgotten backups. Restore reports
(restores/<id>/report.json) stay.

prune takes the repository's backup lock and the lock of every restore target, and
refuses while a backup or restore runs (exit 11). It deletes manifests first and segments
after: interrupted at any point, it leaves objects no manifest names (the next prune
deletes them), never a backup that names a missing segment.

--dry-run prints what would be deleted and deletes nothing (it takes no lock).

A manifest of a backup prune would keep (or the progress.json of a running one) that does
not decode is damage: prune deletes nothing and exits 2, naming each such backup and the
verify command for its id (with --dry-run too).

CONFIG KEYS USED
  storage.* (the repository). No cluster is contacted.`

// keepCount is the value of a --keep-N flag: a count of at least 1 or
// "unlimited" (catalog.Unlimited), as restic's ForgetPolicyCount.
type keepCount struct{ n *int }

func (c keepCount) String() string {
	if c.n == nil {
		return "0"
	}
	if *c.n == catalog.Unlimited {
		return "unlimited"
	}
	return strconv.Itoa(*c.n)
}

func (c keepCount) Set(s string) error {
	if s == "unlimited" {
		*c.n = catalog.Unlimited
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("want a count of at least 1 or \"unlimited\" (leave the flag out to not use the rule; the latest complete backup is always kept)")
	}
	*c.n = n
	return nil
}

func (c keepCount) Type() string { return "N" }

// keepCounts are the --keep-N flags: name, help, the Policy field.
func keepCounts(p *catalog.Policy) []struct {
	name, help string
	n          *int
} {
	return []struct {
		name, help string
		n          *int
	}{
		{"keep-last", "keep the `N` newest complete backups", &p.Last},
		{"keep-hourly", "keep the newest backup of each of the last `N` hours that have backups", &p.Hourly},
		{"keep-daily", "keep the newest backup of each of the last `N` days that have backups", &p.Daily},
		{"keep-weekly", "keep the newest backup of each of the last `N` weeks that have backups", &p.Weekly},
		{"keep-monthly", "keep the newest backup of each of the last `N` months that have backups", &p.Monthly},
		{"keep-yearly", "keep the newest backup of each of the last `N` years that have backups", &p.Yearly},
	}
}

func newPruneCmd(g *globalOptions, s *iostreams, runF func(context.Context, *pruneOptions, *iostreams) error) *cobra.Command {
	o := &pruneOptions{}
	var within string
	cmd := &cobra.Command{
		Use:   "prune -c FILE --keep-last N | --keep-{hourly,daily,weekly,monthly,yearly} N | --keep-within DURATION [--dry-run]",
		Short: "Forget old backups and delete segments no kept backup needs",
		Long:  pruneLong,
		Example: `  kafkastreams-dr prune -c order-processor.yaml --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --dry-run
  kafkastreams-dr prune -c order-processor.yaml --keep-within 30d
  kafkastreams-dr prune -c order-processor.yaml --keep-last 24 --keep-within 6m --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			given := false
			for _, k := range keepCounts(&o.Policy) {
				given = given || cmd.Flags().Changed(k.name)
			}
			if cmd.Flags().Changed("keep-within") {
				given = true
				d, err := catalog.ParseDuration(within)
				if err == nil && d.IsZero() {
					err = errors.New("must be more than 0")
				}
				if err != nil {
					return &usageError{fmt.Errorf("invalid --keep-within %q: %w; write a number and a unit, or several: %s, e.g. 30d, 6m, 1y2m3d4h", within, err, catalog.DurationUnits)}
				}
				o.Policy.Within = d
			}
			if !given {
				return &usageError{errors.New("say what to keep: --keep-last N, --keep-hourly N, --keep-daily N, --keep-weekly N, --keep-monthly N, --keep-yearly N and/or --keep-within DURATION")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runPrune(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	for _, k := range keepCounts(&o.Policy) {
		cmd.Flags().Var(keepCount{k.n}, k.name, k.help+` ("unlimited": every one)`)
	}
	cmd.Flags().StringVar(&within, "keep-within", "", "keep the backups taken within `DURATION` before the newest: y, m (months), w, d, h, e.g. 30d, 6m, 1y2m3d4h")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be deleted and the rules that keep each backup; delete nothing")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	cmd.Flags().SortFlags = false // the policy's flags in restic's order
	return cmd
}

func runPrune(ctx context.Context, o *pruneOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, readOnlyWhen(o.DryRun, "prune --dry-run"))
	if err != nil {
		return err
	}
	res, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: o.Policy, DryRun: o.DryRun, Logger: o.Logger})
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
	case storage.IsTransient(err):
		return withCode(exitError, err, storage.TransientHint("the storage")+"; an interrupted prune leaves only objects no backup names, which the next prune deletes")
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, catalog.ErrLocked):
		return withCode(exitLocked, err, "run prune again once the backup or restore has finished")
	case errors.Is(err, catalog.ErrUnreadableKept):
		// Damage, found before anything was deleted: exit 2, as list,
		// verify and restore exit for a manifest that does not decode.
		return withCode(damageExitCode, err, unreadableKeptHint(err, o.ConfigFile))
	}
	return withCode(exitError, err, "run prune again: an interrupted prune leaves only objects no backup names, which the next prune deletes")
}

// unreadableKeptHint is the next step after prune found manifests it would
// keep unreadable: verify each, by its id, with config file.
func unreadableKeptHint(err error, file string) string {
	ids := []string{"ID"}
	if ue, ok := errors.AsType[*catalog.UnreadableKeptError](err); ok && len(ue.BackupIDs) > 0 {
		ids = ue.BackupIDs
	}
	cmds := make([]string, len(ids))
	for i, id := range ids {
		cmds[i] = fmt.Sprintf("kafkastreams-dr verify -c %s --backup-id %s", file, id)
	}
	return "check it with: " + strings.Join(cmds, "; ")
}
