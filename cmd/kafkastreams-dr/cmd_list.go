package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
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
the backup wrote itself (own_segments, own_records, own_bytes). Topics, partitions,
records and bytes include the in-flight tails (the application's repartition records in
flight at the cut), as the backup's summary and verify count them; --json gives their
share (in_flight_topics, in_flight_records).

A last line names the application.id of the backups ("application.id: order-processor";
"(none)" for backups taken without application_id). One repository prefix holds the
backups of one application (backup and restore refuse another's); a repository that
holds several anyway (written by an older version) is listed with an APPLICATION
column and a warning naming every application.id. --json: application_id on every
readable backup ("" for none) and application_ids, the distinct ones.

States: complete (restorable); partial (complete and restorable, but the broker kept
answering some partitions' fetches with no records, and the offsets it did not read
are not in this backup; the next backup reads them; --json: state "complete",
partial true, unread_partitions and unread_offsets; describe names the ranges);
running (a backup is running, or was interrupted and
the next backup resumes it; a sharded run says how many shards are done, e.g. "running
(1/3 shards done)", and its figures sum what its shards copied so far; --json: shards and
shards_done); abandoned (an interrupted backup no run will resume:
garbage that prune removes); unreadable (the manifest does not decode). list exits 2
when a manifest is unreadable (damage, as for restore), after listing every backup (run
verify on it); "latest" in the summary is what --backup-id latest means: the newest
backup with a manifest.json, named unreadable when its manifest does not read.

Reads the manifests only (backups/*/manifest.json and progress.json), never a segment.
In an encrypted repository it also reads the envelope header of each restore and drill
report (restores/*/report.json, drills/*/report.json) and ends with a line per key id
they are encrypted with: "restore and drill reports need key id ID: 2 restore reports,
1 drill report", "(not configured)" after an id storage.encryption no longer holds
(estimate and drill history then skip those reports). A key is dropped after a rotation
once no kept backup lists it (KEY IDS) and no such line names it (docs/OPERATIONS.md,
"Encryption"). --json: report_key_ids.

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

func runList(ctx context.Context, o *listOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, "list")
	if err != nil {
		return err
	}
	list, err := catalog.List(ctx, store)
	if err != nil {
		return repositoryError(err, store.Location())
	}
	reports, err := repository.ReportKeyIDs(ctx, store)
	if err != nil {
		return repositoryError(err, store.Location())
	}
	var configured []string
	if ki, ok := store.(storage.KeyInspector); ok {
		configured = ki.ConfiguredKeyIDs()
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if err := writeBackupList(s.Out, o.JSON, store.Location(), list, reportKeys(reports, configured), now); err != nil {
		return err
	}
	return unreadableError(list, o.ConfigFile, store.Location())
}

// unreadableError makes list exit 2 (damageExitCode) when a manifest does not decode: the
// backups it could read are listed, but the repository is damaged (a
// scheduled "list" must not report success over it). It names every
// unreadable manifest and the verify command for the first manifest.json;
// for an interrupted run's progress.json that does not decode (no backup
// resumes it, verify has nothing to check) it says to delete it.
func unreadableError(list []catalog.Summary, file, location string) error {
	var bad, hints []string
	first, progress := "", ""
	for _, b := range list {
		if b.State != catalog.StateUnreadable {
			continue
		}
		bad = append(bad, b.ManifestKey+": "+b.Error)
		if _, isProgress, _ := format.ParseManifestKey(b.ManifestKey); isProgress {
			if progress == "" {
				progress = b.ManifestKey
			}
		} else if first == "" {
			first = b.BackupID
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if first != "" {
		hints = append(hints, fmt.Sprintf("see what is damaged with: kafkastreams-dr verify -c %s --backup-id %s", file, first))
	}
	if progress != "" {
		hints = append(hints, progressHint(location, progress))
	}
	return withCode(damageExitCode, fmt.Errorf("%s unreadable: %s", plural(len(bad), "manifest is", "manifests are"), strings.Join(bad, "; ")),
		strings.Join(hints, "; "))
}
