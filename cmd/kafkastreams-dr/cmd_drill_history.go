package main

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
)

// withDrillSubcommands adds drill's subcommands, verify-report and
// history, to the drill command cmd.
func withDrillSubcommands(cmd *cobra.Command, s *iostreams) *cobra.Command {
	cmd.AddCommand(newDrillVerifyReportCmd(s, nil), newDrillHistoryCmd(s, nil))
	return cmd
}

// drillHistoryOptions are the flags of `drill history`.
type drillHistoryOptions struct {
	ConfigFile   string
	JSON         bool
	Threshold    float64 // --rto-growth-threshold, in percent
	FailOnGrowth bool
}

const drillHistoryLong = `Print the trend of the drills recorded in the repository (drills/<drill-id>/report.json)
of the config's application_id, oldest to newest: per drill its RTO, RPO and volume, and
the change against the drill before, so that a slowly growing recovery time is seen before
the day it matters.

RTO is the furthest figure the drill measured: rto_app_caught_up (with an application
command), else rto_app_running, else rto_data_restored (see drill --help); its change is
against the previous drill's figure of the same name ("-" when that drill has none). The
latest drill's RTO is compared with the median of the same figure over the earlier drills
that passed with the same strategy (a rebuild after changelog drills is another method, not
a slower recovery): more than --rto-growth-threshold percent (default 20) above it is flagged,
"RTO GREW", in the table and as trend.grew in --json. RPO, bytes, topics and partitions
are "-" for drills recorded before they were (kafkastreams-dr 2026-12).

EXIT STATUS of history: 0 (a grown RTO too, unless --fail-on-growth: then 1); 2 for usage
and config errors and a repository that does not exist; 1 when it cannot be read.

CONFIG KEYS USED
  application_id, storage.* (the repository, opened read-only).`

func newDrillHistoryCmd(s *iostreams, runF func(context.Context, *drillHistoryOptions, *iostreams) error) *cobra.Command {
	o := &drillHistoryOptions{}
	cmd := &cobra.Command{
		Use:     "history -c FILE",
		Short:   "Show the trend of RTO, RPO and volume across the recorded drills",
		Long:    drillHistoryLong,
		Example: `  kafkastreams-dr drill history -c order-processor.yaml --rto-growth-threshold 10 --fail-on-growth`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if o.Threshold < 0 || math.IsNaN(o.Threshold) || math.IsInf(o.Threshold, 0) {
				return &usageError{fmt.Errorf("--rto-growth-threshold %g: want a percentage of 0 or more, e.g. 20", o.Threshold)}
			}
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runDrillHistory(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigFile, "config", "c", "", "config `FILE` (required)")
	f.BoolVar(&o.JSON, "json", false, "print the rows and the trend as JSON")
	f.Float64Var(&o.Threshold, "rto-growth-threshold", drill.DefaultRTOGrowthThreshold*100, "flag the latest RTO when it is more than `PERCENT` above the median of the earlier drills'")
	f.BoolVar(&o.FailOnGrowth, "fail-on-growth", false, "exit 1 when the latest RTO is flagged")
	return cmd
}

// drillHistoryResult is what history prints with --json.
type drillHistoryResult struct {
	ApplicationID string             `json:"application_id"`
	Drills        []drill.HistoryRow `json:"drills"`
	Trend         drill.RTOTrend     `json:"trend"`
	Warnings      []string           `json:"warnings,omitempty"`
}

func runDrillHistory(ctx context.Context, o *drillHistoryOptions, s *iostreams) error {
	cfg, err := loadRepositoryConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	store, err := openExistingStorage(ctx, cfg.Storage, "drill history")
	if err != nil {
		return storageError(err)
	}
	rows, warnings, err := drill.History(ctx, store, cfg.ApplicationID)
	if err != nil {
		return repositoryError(fmt.Errorf("drill history: %w", err), store.Location())
	}
	for _, w := range warnings {
		fmt.Fprintf(s.ErrOut, "warning: skipped an unreadable drill report: %s\n", w)
	}
	res := drillHistoryResult{ApplicationID: cfg.ApplicationID, Drills: rows, Trend: drill.Trend(rows, o.Threshold/100), Warnings: warnings}
	if res.Drills == nil {
		res.Drills = []drill.HistoryRow{}
	}
	if o.JSON {
		if err := writeJSON(s.Out, res); err != nil {
			return err
		}
	} else {
		printDrillHistory(s.Out, &res, store.Location())
	}
	if res.Trend.Grew && o.FailOnGrowth {
		return withCode(exitError, fmt.Errorf("the latest drill's RTO grew %.0f%% over the median of the earlier drills' (more than %g%%)", *res.Trend.Growth*100, o.Threshold),
			"see which phase grew: kafkastreams-dr drill --json, and the restore throughput: kafkastreams-dr estimate -c "+quoteArgs([]string{cfg.File()})[0])
	}
	return nil
}
