package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// estimateOptions are the flags of `estimate`.
type estimateOptions struct {
	ConfigFile string
	BackupID   string
	NoCluster  bool
	JSON       bool
	Logger     *slog.Logger
}

const estimateLong = `How long will recovery take? For each strategy — restore from changelogs, rebuild
from input, standby replicas — the data a restore of the latest backup must move (from its
manifest) and the projected time of the restore itself, from the throughput this
repository's own past restores and drills measured (their reports in restores/), or a
stated default of ` + "20000" + ` records/s when there is none yet. Run a restore or a drill into
your real target once to replace the default with a measured figure. A restore report that
does not decode (truncated, overwritten) is skipped with a warning naming it, and --json lists
it under throughput.unreadable; a storage failure reading the reports exits 1 (run it again).

The restore is only part of the recovery time: after a changelog restore Kafka Streams
restores its stores from the restored changelogs; after a rebuild it reprocesses the
restored input. The table says what follows each restore. Below it, the recovery to the
application caught up is projected per strategy from the drills of this application that
started it (drill --app-command; their reports in drills/): the drill's restore rate, the
application's start, and its rehydration (changelog) or reprocessing (rebuild) rate, scaled
to this backup. A strategy no such drill measured is marked uncalibrated: only the tool's
restore time is known for it (--json: recovery.seconds null). When the source cluster
(source.bootstrap_servers) answers, the rebuild row also says how many offsets its input
topics' logs hold now (--no-cluster skips asking).

CONFIG KEYS USED
  storage.* (manifests and restore reports), source.* (current log sizes).`

func newEstimateCmd(g *globalOptions, s *iostreams, runF func(context.Context, *estimateOptions, *iostreams) error) *cobra.Command {
	o := &estimateOptions{}
	cmd := &cobra.Command{
		Use:     "estimate -c FILE",
		Short:   "Project the recovery time of each strategy from the backup and past restores",
		Long:    estimateLong,
		Example: `  kafkastreams-dr estimate -c order-processor.yaml --json`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runEstimate(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.BackupID, "backup-id", "latest", "the backup to estimate (ID), or latest")
	cmd.Flags().BoolVar(&o.NoCluster, "no-cluster", false, "do not ask the source cluster for its current log sizes")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the estimate as JSON")
	return cmd
}

func runEstimate(ctx context.Context, o *estimateOptions, s *iostreams) error {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	store, err := openExistingStorage(ctx, cfg.Storage, "estimate")
	if err != nil {
		return storageError(err)
	}
	opts := estimate.Options{Store: store, BackupID: o.BackupID}
	if !o.NoCluster {
		if sizes, err := logSizes(ctx, cfg.Source.ClientOptions); err != nil {
			o.Logger.Warn("the source cluster's log sizes are unknown; estimating from the backup alone", "err", err)
		} else {
			opts.InputLogRecords = func(t string) (int64, bool) { n, ok := sizes[t]; return n, ok }
		}
	}
	e, err := estimate.Run(ctx, opts)
	if err != nil {
		if errors.Is(err, restorer.ErrNoBackup) {
			return withCode(exitUsage, err, listBackupsHint(store.Location(), ""))
		}
		return repositoryError(fmt.Errorf("estimate: %w", err), store.Location())
	}
	for _, u := range e.Throughput.Unreadable {
		fmt.Fprintf(s.ErrOut, "warning: skipped an unreadable restore report (the throughput is measured without it): %s\n", u)
	}
	for _, u := range e.UnreadableDrills {
		fmt.Fprintf(s.ErrOut, "warning: skipped an unreadable drill report (the recovery is calibrated without it): %s\n", u)
	}
	return writeEstimate(s.Out, o.JSON, e, time.Now())
}

// logSizes returns, per topic of the source cluster, its log end minus log
// start summed over partitions, asking for at most 10 seconds.
func logSizes(ctx context.Context, clientOptions func() ([]kgo.Opt, error)) (map[string]int64, error) {
	opts, err := clientOptions()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := config.Reach(ctx, cl, "source cluster"); err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		if so, ok := starts.Lookup(e.Topic, e.Partition); ok && e.Err == nil && so.Err == nil {
			sizes[e.Topic] += e.Offset - so.Offset
		}
	})
	return sizes, nil
}
