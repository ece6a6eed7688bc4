package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
)

// describeOptions are the flags of `describe`.
type describeOptions struct {
	ConfigFile string
	BackupID   string // a backup id or "latest"
	JSON       bool

	Logger *slog.Logger
}

const describeLong = `Describe one complete backup from its manifest: per topic its class (the Schema
Registry's topic marked "(schema registry: restored first)", --json
"schema_registry": true), partitions, replication factor and recorded configs (every config not at its default, plus
cleanup.policy, max.message.bytes, min.insync.replicas, message.timestamp.type and
retention.ms always, at their defaults too: a restore sets them on the new topic);
per partition the log start and high
watermark the backup saw, the offsets the chain covers [START, END), the records it
holds (not END - START: compaction, transaction markers and aborted records leave
offsets without a record), its segments and stored bytes, the timestamp range and the
gaps (offsets the broker deleted before any backup read them) and UNREAD, the range
[END, to) this backup could not read (the broker kept answering its fetches with no
records: not in this backup, the next backup reads it; the header then says partial;
--json: partition_cuts[].unread); then the group's committed offsets and the backup's
warnings.

The header's "cut proven" row says whether the backup's cut was proven consistent
with the application's transactions: yes or NO with its method, attempts,
transactions waited for and duration, and the reason when not (a manifest written
before the cut was recorded: "not recorded", treated as not proven); "in flight"
gives the records the backup's tails of the repartition topics hold, in total and
per topic (--json: cut, in_flight).

Reads the backup's manifest only, never a segment.

CONFIG KEYS USED
  storage.* (the repository). No cluster is contacted.`

func newDescribeCmd(g *globalOptions, s *iostreams, runF func(context.Context, *describeOptions, *iostreams) error) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe -c FILE [--backup-id ID]",
		Short: "Show a backup's topics, partitions, offsets, gaps, configs and group offsets",
		Long:  describeLong,
		Example: `  kafkastreams-dr describe -c order-processor.yaml
  kafkastreams-dr describe -c order-processor.yaml --backup-id 20240501T120000.000Z-1a2b3c4d --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if err := checkBackupIDFlag(o.BackupID); err != nil {
				return err
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runDescribe(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.BackupID, "backup-id", "latest", `backup to describe (ID), or "latest", the latest complete backup`)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the description as JSON")
	return cmd
}

func runDescribe(ctx context.Context, o *describeOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, "describe")
	if err != nil {
		return err
	}
	m, err := loadBackupManifest(ctx, store, o.BackupID)
	if err != nil {
		return repositoryError(err, store.Location())
	}
	d := catalog.Describe(m)
	if o.JSON {
		return writeJSON(s.Out, d)
	}
	printDescription(s.Out, d, m)
	return nil
}
