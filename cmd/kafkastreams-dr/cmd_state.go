package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedir"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func newStateCmd(g *globalOptions, s *iostreams,
	checkF func(context.Context, *stateCheckOptions, *iostreams) error,
	wipeF func(context.Context, *stateWipeOptions, *iostreams) error,
) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Check or wipe a Kafka Streams instance's local state after a restore",
		Long: `A restore renumbers the changelog topics, so the local state of every instance
(<state.dir>/<application.id>/<task>/, with RocksDB stores and .checkpoint files) refers to
the old cluster's offsets. "state check" says, per task and store, whether the local state
fits the cluster (ok), must be wiped, or cannot be judged (unknown); "state wipe" removes
one application's local state, like KafkaStreams#cleanUp().`,
	}
	commandGroup(cmd)
	cmd.AddCommand(newStateCheckCmd(g, s, checkF), newStateWipeCmd(g, s, wipeF))
	return cmd
}

// stateCheckOptions are the flags of `state check`.
type stateCheckOptions struct {
	ConfigFile      string
	StateDir        string
	TargetBootstrap []string
	JSON            bool
	Logger          *slog.Logger
}

func newStateCheckCmd(g *globalOptions, s *iostreams, runF func(context.Context, *stateCheckOptions, *iostreams) error) *cobra.Command {
	o := &stateCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check --state-dir DIR -c FILE",
		Short: "Judge an instance's local state against the cluster and the last restore",
		Long: `Read the application's task directories under --state-dir (the instance's state.dir)
and judge them against the last restore into the cluster (its report in the repository)
and the changelogs' end offsets on it (the config's target: section, or
--target-bootstrap-servers).

After a restore into the cluster (either strategy), a task's state is stale when its data
existed before the restore finished. That is read from what each RocksDB store records in its own
files, which a copy (cp, rsync, a volume snapshot) or a touch keeps: the SST files' table
properties rocksdb.creation.time and rocksdb.file.creation.time, and the names of rotated
info logs, LOG.old.<microseconds>. A file modified before the restore makes it stale too; a
file modified after it proves nothing.

  must wipe  a store's data, or a file, predates the restore; or a .checkpoint position is
             beyond the changelog's end
  unknown    nothing to judge by: a store with no SST file and no rotated LOG yet, a task
             without RocksDB stores, no restore into this cluster (Kafka Streams 4.x keeps
             RocksDB stores' positions inside the store, KIP-1035, which this tool does not
             read), a changelog not on the cluster, an unknown position (-4); a symbolic
             link in the task directory (not followed; state wipe refuses it: remove it by
             hand); every store, and every empty task directory, when the last restore
             cannot be known (its report does not decode or is not a regular file, the
             repository cannot be opened, or a restore into the cluster newer than the
             last complete one is unfinished: its journal is not complete; run the
             restore again to completion, then check: the output says why above the table)
  ok         every RocksDB store of the task dates from after the restore (and its
             .checkpoint positions fit the changelogs), or the task holds no files and
             the last restore is known (or there was none); a
             .checkpoint naming no changelog (0 entries) judges the task's files as a whole

The boundary is the last restore's finish (finished_at in its report, printed in the
header): state written while the restore ran was built from a half-restored cluster. After
a rebuild (no changelogs restored) state from before it is stale all the same: the
application reprocesses the restored input, which that state already counts. A store or
file predating the restore decides the task whatever its changelog says.

Exit status 3 when any store must be wiped (wipe it: kafkastreams-dr state wipe); 4 when
none must be wiped but some could not be judged (unknown: not an all-clear); 2 when
--state-dir does not exist or holds no state of the application (no <application.id>/
directory, or one without task directories): that is never an all-clear, the path or the
application_id may be wrong; 0 only when every store is ok.

CONFIG KEYS USED
  application_id, target.* (the cluster), storage.* (the last restore's report; the
  repository is opened read-only, and a storage.path that does not exist is never
  created: the last restore is then unknown, and so is every store, exit 4).`,
		Example: `  kafkastreams-dr state check --state-dir /var/lib/kafka-streams -c order-processor.yaml`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" || o.StateDir == "" {
				return &usageError{errors.New("state check needs --state-dir DIR and --config FILE (-c FILE)")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runStateCheck(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "the instance's state.dir, which holds <application.id>/ (required)")
	cmd.Flags().StringSliceVar(&o.TargetBootstrap, "target-bootstrap-servers", nil, "the cluster's brokers (HOST:PORT,...), instead of target.bootstrap_servers")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the findings as JSON")
	hintRequired(cmd, "config", "FILE", "the application's config file")
	hintRequired(cmd, "state-dir", "DIR", "the instance's state.dir")
	return cmd
}

func runStateCheck(ctx context.Context, o *stateCheckOptions, s *iostreams) error {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	if cfg.ApplicationID == "" {
		return withCode(exitUsage, fmt.Errorf("%s has no application_id: state check needs it to find <state.dir>/<application.id>", cfg.File()), "")
	}
	cps, err := statedir.Scan(o.StateDir, cfg.ApplicationID)
	if errors.Is(err, statedir.ErrNoState) {
		// Its own verdict, never an all-clear: the path or the
		// application.id may be wrong.
		fmt.Fprintf(s.Out, "no state: %v\n", err)
		return withCode(exitUsage, err, fmt.Sprintf("check --state-dir and application_id in %s: nothing to judge here (an instance that never ran, or was wiped, has no state)", cfg.File()))
	}
	if err != nil {
		return withCode(exitUsage, err, "")
	}
	target, err := restoreTarget(cfg, o.TargetBootstrap)
	if err != nil {
		return err
	}
	opts, err := target.ClientOptions()
	if err != nil {
		return withCode(exitUsage, err, "")
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return withCode(exitError, err, "")
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "target cluster"); err != nil {
		return withCode(exitError, err, fmt.Sprintf("check target.bootstrap_servers and target.security in %s, or --target-bootstrap-servers", cfg.File()))
	}
	var topics []string
	seen := map[string]bool{}
	for _, c := range cps {
		for _, e := range c.Entries {
			if !seen[e.Topic] {
				seen[e.Topic] = true
				topics = append(topics, e.Topic)
			}
		}
	}
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		if ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, topics...); err != nil {
			return withCode(exitError, fmt.Errorf("list the changelogs' end offsets: %w", err), "check target.bootstrap_servers and target.security")
		}
	}
	// Only a restore into this cluster renumbered its changelogs (a drill
	// into a scratch cluster did not).
	clusterID := ""
	if bm, err := kadm.NewClient(cl).BrokerMetadata(ctx); err == nil {
		clusterID = bm.Cluster
	}
	// When the last restore cannot be known, no store is ok by its
	// changelog alone (statedir.Restore.Unknown); the output says why.
	var last *statedir.Restore
	if store, err := openExistingStorage(ctx, cfg.Storage, "state check"); err != nil {
		o.Logger.Warn("cannot open the repository: the last restore is unknown, no store is ok by its changelog alone", "err", err)
		last = &statedir.Restore{Unknown: fmt.Sprintf("cannot open the repository: %v; check storage.* in %s", err, cfg.File())}
	} else if clusterID == "" {
		o.Logger.Warn("the cluster reports no cluster id: the last restore is unknown, no store is ok by its changelog alone")
		last = &statedir.Restore{Unknown: "the cluster reports no cluster id, so no restore report can be matched to it"}
	} else if rep, err := repository.LatestReport(ctx, store, cfg.ApplicationID, clusterID); err != nil {
		o.Logger.Warn("cannot read the last restore report", "err", err)
		last = &statedir.Restore{Unknown: fmt.Sprintf("cannot read the last restore report: %v", err)}
	} else if why, err := unfinishedRestore(ctx, store, cfg.ApplicationID, clusterID, rep); err != nil || why != "" {
		if err != nil {
			why = fmt.Sprintf("cannot read the restore journals: %v", err)
		}
		o.Logger.Warn("the last restore into this cluster is unfinished or cannot be read: no store is ok by its changelog alone", "why", why)
		last = &statedir.Restore{Unknown: why}
	} else if rep != nil {
		last = &statedir.Restore{RestoreID: rep.RestoreID, Strategy: string(rep.Strategy), StartedAt: rep.StartedAt, FinishedAt: rep.FinishedAt, Restored: map[string]bool{}}
		for _, p := range rep.Partitions {
			last.Restored[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = true
		}
	}
	findings := statedir.Check(cfg.ApplicationID, cps, func(t string, p int32) (int64, bool) {
		o, ok := ends.Lookup(t, p)
		return o.Offset, ok && o.Err == nil
	}, last)
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].Task < findings[j].Task })
	wipe, unknown := 0, 0
	for _, f := range findings {
		switch f.Verdict {
		case statedir.MustWipe:
			wipe++
		case statedir.Unknown:
			unknown++
		}
	}
	if err := writeStateFindings(s.Out, o.JSON, cfg.ApplicationID, last, findings); err != nil {
		return err
	}
	if wipe > 0 {
		return withCode(exitPartial, fmt.Errorf("%s of application.id %q under %s must be wiped before the application starts",
			plural(wipe, "store", "stores"), cfg.ApplicationID, o.StateDir),
			fmt.Sprintf("stop the instance, then: kafkastreams-dr state wipe --state-dir %s --application-id %s", o.StateDir, cfg.ApplicationID))
	}
	if unknown > 0 {
		// A check that cannot tell is no all-clear.
		return withCode(exitUndecided, fmt.Errorf("%s of application.id %q under %s could not be judged (unknown): this is not an all-clear",
			plural(unknown, "store", "stores"), cfg.ApplicationID, o.StateDir),
			fmt.Sprintf("the REASON column says why; when in doubt, stop the instance and wipe its state: kafkastreams-dr state wipe --state-dir %s --application-id %s", o.StateDir, cfg.ApplicationID))
	}
	return nil
}

// stateWipeOptions are the flags of `state wipe`.
type stateWipeOptions struct {
	StateDir      string
	ApplicationID string
	Yes           bool
	DryRun        bool
	Logger        *slog.Logger
}

func newStateWipeCmd(g *globalOptions, s *iostreams, runF func(context.Context, *stateWipeOptions, *iostreams) error) *cobra.Command {
	o := &stateWipeOptions{}
	cmd := &cobra.Command{
		Use:   "wipe --state-dir DIR --application-id APP",
		Short: "Remove one application's local state, like KafkaStreams#cleanUp()",
		Long: `Remove <state.dir>/<application.id>: every task directory (RocksDB stores,
.checkpoint files) of that application on this instance, so it restores its stores from
the changelogs when it starts, as KafkaStreams#cleanUp() does.

It removes only what is provably that application's Kafka Streams state: the directory
may hold only what Kafka Streams' StateDirectory writes there (task directories
<subtopology>_<partition>, a named topology's __<name>__/<subtopology>_<partition>,
global, .lock, kafka-streams-process-metadata), and below the task directories only
files and directories on the same filesystem. It never follows a symbolic link. It
refuses (exit 2), removing nothing:
  - any other entry in the directory (each one is named);
  - a symbolic link anywhere (the application directory, or below it), a device,
    socket or pipe, a mount point;
  - a filesystem root, a system directory (/etc, /usr/lib, anything directly below /),
    $HOME or one of its ancestors, also after resolving --state-dir's links;
  - a --state-dir that does not exist or is itself one application's directory (pass
    its parent), an application.id that has no directory there (it names those that
    do: another application's state is never touched);
  - a directory a running Kafka Streams instance has locked (stop it first).
It removes only the entries it checked: one replaced or added meanwhile stops the wipe
there (exit 1, saying how far it got; run it again once nothing writes there).

--dry-run lists what would be removed and removes nothing. Without --yes it asks on a
terminal and refuses otherwise.`,
		Example: `  kafkastreams-dr state wipe --state-dir /var/lib/kafka-streams --application-id order-processor --dry-run
  kafkastreams-dr state wipe --state-dir /var/lib/kafka-streams --application-id order-processor --yes`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.StateDir == "" || o.ApplicationID == "" {
				return &usageError{errors.New("state wipe needs --state-dir DIR and --application-id APP")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runStateWipe(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "the instance's state.dir (required)")
	cmd.Flags().StringVar(&o.ApplicationID, "application-id", "", "the application.id whose state to remove (required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "list what would be removed; remove nothing")
	hintRequired(cmd, "state-dir", "DIR", "the instance's state.dir")
	hintRequired(cmd, "application-id", "APP", "the application.id")
	return cmd
}

func runStateWipe(_ context.Context, o *stateWipeOptions, s *iostreams) error {
	plan, err := statedir.PlanWipe(o.StateDir, o.ApplicationID)
	if err != nil {
		return withCode(exitUsage, err, "nothing was removed")
	}
	summary := wipeSummary(plan)
	if o.DryRun {
		printWipeDryRun(s.Out, plan)
		return nil
	}
	if !o.Yes {
		if !s.InTTY {
			return withCode(exitUsage, fmt.Errorf("state wipe removes %s and needs a confirmation, but stdin is not a terminal", summary), "pass --yes (or --dry-run to list what it removes)")
		}
		ok, err := confirm(s, fmt.Sprintf("remove %s? [y/N] ", summary))
		if err != nil {
			return withCode(exitError, err, "")
		}
		if !ok {
			return withCode(exitUsage, errors.New("not confirmed: nothing was removed"), "")
		}
	}
	if _, err := plan.Execute(); err != nil {
		return withCode(exitError, err, fmt.Sprintf("stop whatever writes there, then run: kafkastreams-dr state wipe --state-dir %s --application-id %s", o.StateDir, o.ApplicationID))
	}
	fmt.Fprintf(s.Out, "removed %s\n", summary)
	return nil
}

// unfinishedRestore names the restores into clusterID whose journal is
// not complete (repository.UnfinishedRestores) and is newer than rep, the
// last complete restore (nil: none), of a backup of applicationID (a
// backup whose manifest cannot be read counts: the restore cannot be
// known), and the fix; "" when there is none. The target's changelogs are
// then partly written, so that no store is ok by its changelog alone.
func unfinishedRestore(ctx context.Context, store storage.Backend, applicationID, clusterID string, rep *format.RestoreReport) (string, error) {
	unfinished, err := repository.UnfinishedRestores(ctx, store, clusterID)
	if err != nil {
		return "", err
	}
	var names []string
	for _, u := range unfinished {
		if rep != nil && !u.Journal.UpdatedAt.After(rep.FinishedAt) {
			continue
		}
		if m, err := repository.Manifest(ctx, store, u.Journal.BackupID); err == nil && m.ApplicationID != applicationID {
			continue
		}
		names = append(names, fmt.Sprintf("backup %s (journal %s, updated %s)", u.Journal.BackupID, u.Key, u.Journal.UpdatedAt.UTC().Format(time.RFC3339)))
	}
	if len(names) == 0 {
		return "", nil
	}
	return fmt.Sprintf("the restore of %s into this cluster is unfinished: its changelogs are partly written; run the restore again to completion (the same command: it resumes), then check again", strings.Join(names, ", ")), nil
}
