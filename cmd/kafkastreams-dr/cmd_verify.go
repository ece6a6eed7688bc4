package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// verifyOptions are the flags of `verify`.
type verifyOptions struct {
	ConfigFile      string
	BackupID        string
	Deep            bool
	AgainstCluster  bool
	TargetBootstrap []string
	JSON            bool

	Logger *slog.Logger
}

const verifyLong = `Check a backup in the repository named by the config.

Without flags: every segment the backup's manifest names exists, with the size and
SHA-256 the manifest records (each object is read in full). --deep also decodes every
segment and checks its records: count, first and last offset, timestamp range, and that
each partition's segments add up to its record count inside its cut; and it recomputes
each changelog partition's state digest from the chain's records: one that differs
from the manifest's state_digest is damage (exit 2; a restore would fail its state
check).

--against-cluster compares a restored cluster (the config's target: section, or
--target-bootstrap-servers) with the backup record by record: each restored partition
must hold exactly the backup's records, in order, with equal key, value, headers and
timestamp (offsets differ: a restore renumbers them), and every segment's header must
name the topic and partition the manifest has it under. The backup compared is the one
the latest restore report into this cluster names (restores/<id>/report.json, for the
config's application_id and the target's cluster id; stderr says which), whatever
--backup-id latest would pick: the comparison uses that restore's topics (a rebuild's
changelogs are not expected), stops at its cut (--to-time), and each restored record's
original offset, by the restore's offset map, must be the backup record's. Without a
report, --backup-id is compared (latest: the newest complete backup). A --backup-id that
is not the report's backup is refused (exit 2, naming the restored one) unless a restore
of it into this cluster was started and wrote no report (its journal is there): it is then
compared without a cut or offset maps. A restore report that cannot be listed or read
fails the comparison, exit 1: without its cut and offset maps the result would be wrong.
When the target differs after a restore that did not finish (its journal says incomplete,
or it wrote no report), the hint is to run the same restore again: it resumes.

Each restored changelog (and source-topic changelog) is also checked for its state: the
digest of its latest value per key on the target (every record from its log start to its
end; tombstones remove keys) against the one the backup recorded. One line per state store
says equal, different (a problem: exit 1) or not recorded (a backup written before digests
existed: never equal); the store is the topic less "<application.id>-" and "-changelog".
--json: states[] per partition.

Every problem names the object, topic, partition and offset concerned. A manifest that
does not decode (truncated, damaged, of a newer format) is named too. A damaged backup
(problems found, or its manifest unreadable) exits 2, as a restore refusing it does; a
storage failure exits 1 (run again); --against-cluster differences exit 1.

A partition the backup left unread (a partial backup, exit 3 of backup; list shows it
partial) is a warning, not a problem: those offsets are not in this backup, the next
backup reads them, and verify still exits 0 (--json: warnings).

CONFIG KEYS USED
  storage.* (the repository), target.* (with --against-cluster).`

func newVerifyCmd(g *globalOptions, s *iostreams, runF func(context.Context, *verifyOptions, *iostreams) error) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify -c FILE",
		Short: "Check a backup's objects and checksums, or a restored cluster against the backup",
		Long:  verifyLong,
		Example: `  kafkastreams-dr verify -c order-processor.yaml
  kafkastreams-dr verify -c order-processor.yaml --backup-id 20240501T120000.000Z-1a2b3c4d --deep
  kafkastreams-dr verify -c order-processor.yaml --against-cluster --target-bootstrap-servers kafka-dr:9092`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if o.BackupID != "" && o.BackupID != "latest" && !format.ValidBackupID(o.BackupID) {
				return &usageError{fmt.Errorf(`invalid --backup-id %q: want "latest" or a backup id like 20240501T120000.000Z-1a2b3c4d`, o.BackupID)}
			}
			if len(o.TargetBootstrap) > 0 && !o.AgainstCluster {
				return &usageError{errors.New("--target-bootstrap-servers goes with --against-cluster")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runVerify(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.BackupID, "backup-id", "latest", "the backup to check (ID), or latest (with --against-cluster: the backup of the latest restore into the target)")
	cmd.Flags().BoolVar(&o.Deep, "deep", false, "also decode every segment and check its records")
	cmd.Flags().BoolVar(&o.AgainstCluster, "against-cluster", false, "compare the restored target cluster with the backup, record by record")
	cmd.Flags().StringSliceVar(&o.TargetBootstrap, "target-bootstrap-servers", nil, "with --against-cluster: the target's brokers (HOST:PORT,...), instead of target.bootstrap_servers")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

func runVerify(ctx context.Context, o *verifyOptions, s *iostreams) error {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	store, err := openExistingStorage(ctx, cfg.Storage, "verify")
	if err != nil {
		return storageError(err)
	}
	if o.AgainstCluster {
		return runVerifyAgainstCluster(ctx, o, s, cfg, store)
	}
	m, err := verifyManifest(ctx, store, o.BackupID, o.ConfigFile)
	if err != nil {
		return err
	}
	res, err := verify.Repository(ctx, store, m, o.Deep)
	if err != nil {
		return repositoryError(fmt.Errorf("verify: %w", err), store.Location())
	}
	if err := writeVerifyResult(s.Out, o.JSON, m.BackupID, store.Location(), o.Deep, false, res); err != nil {
		return err
	}
	if !res.OK() {
		hint := fmt.Sprintf("a damaged or missing segment stays in every later incremental backup that names it: "+
			"restore an older backup by naming it (--backup-id, see kafkastreams-dr list -c %s), or start a new chain with kafkastreams-dr backup -c %s --full", o.ConfigFile, o.ConfigFile)
		if !slices.ContainsFunc(res.Problems, func(p verify.Problem) bool { return !p.StateDigest }) {
			hint = fmt.Sprintf("the manifest's state digests do not match the backup's records, so a restore of it fails its state check: "+
				"restore an older backup by naming it (--backup-id, see kafkastreams-dr list -c %s), or take a new backup with kafkastreams-dr backup -c %s --full, whose digests are computed from the records", o.ConfigFile, o.ConfigFile)
		}
		if !slices.ContainsFunc(res.Problems, func(p verify.Problem) bool { return p.KeyID == "" }) {
			// Every problem is a key not configured: nothing is damaged.
			var ids, configured []string
			for _, p := range res.Problems {
				ids = append(ids, p.KeyID)
			}
			if ki, ok := store.(storage.KeyInspector); ok {
				configured = ki.ConfiguredKeyIDs()
			}
			slices.Sort(ids)
			hint = keyHint(&storage.KeyError{KeyID: strings.Join(slices.Compact(ids), ", "), Configured: configured})
		}
		if tails := inFlightOnly(m, res.Problems); len(tails) > 0 {
			// Tails are never chained (docs/FORMAT.md): each backup
			// captures its own, so the damage is in this backup only.
			hint = fmt.Sprintf("the damaged segments are in-flight tails, which are in this backup only (tails are never chained: every later backup captures its own): "+
				"%s; or restore an older backup by naming it (--backup-id, see kafkastreams-dr list -c %s)", inFlightDamageWayOut(tails), o.ConfigFile)
		}
		return withCode(damageExitCode, fmt.Errorf("verification of backup %s failed: %s", m.BackupID, plural(len(res.Problems), "problem", "problems")), hint)
	}
	return nil
}

// inFlightOnly returns the topics of problems when every one is in an
// in-flight tail of m (Manifest.InFlight), else nil.
func inFlightOnly(m *format.Manifest, problems []verify.Problem) []string {
	var tails []string
	for _, p := range problems {
		if !slices.ContainsFunc(m.InFlight, func(t format.Topic) bool { return t.Name == p.Topic }) {
			return nil
		}
		if !slices.Contains(tails, p.Topic) {
			tails = append(tails, p.Topic)
		}
	}
	return tails
}

// verifyManifest loads the manifest of backup id ("latest": the newest
// complete backup, readable or not: verify reports its damage,
// repository.LatestAsID), with verify's exit codes and hints; the hints'
// commands name config file.
func verifyManifest(ctx context.Context, store storage.Backend, id, file string) (*format.Manifest, error) {
	m, err := repository.Manifest(ctx, store, id, repository.LatestAsID())
	if err != nil {
		if pe, ok := errors.AsType[*repository.ProgressError](err); ok {
			return nil, withCode(damageExitCode, err, progressHint(store.Location(), pe.Key))
		}
		if errors.Is(err, restorer.ErrNoBackup) {
			return nil, withCode(exitUsage, err, listBackupsHint(store.Location(), ""))
		}
		if errors.Is(err, repository.ErrDamaged) && !storage.IsTransient(err) {
			// Not repositoryHint: it says to run verify, which just failed.
			return nil, withCode(damageExitCode, fmt.Errorf("verify: %w", err),
				"the manifest is damaged or truncated: this backup cannot be verified or restored; "+damagedManifestWaysOutOf(file))
		}
		return nil, repositoryError(fmt.Errorf("verify: %w", err), store.Location())
	}
	return m, nil
}

// runVerifyAgainstCluster compares the target cluster with a backup. The
// backup is the one the latest restore report into the target names
// (repository.LatestReport for the config's application_id and the
// target's cluster id), so that the comparison uses that restore's
// topics, cut and offset maps; without a report it is --backup-id (the
// newest complete backup for latest). An explicit --backup-id other than
// the report's is refused (exit 2) unless a restore of it into the target
// left a journal (restores/journals/<backup-id>/<cluster-id>.json: it was
// started there and did not write its report); it is then compared without
// a cut or offset maps.
func runVerifyAgainstCluster(ctx context.Context, o *verifyOptions, s *iostreams, cfg *config.Config, store storage.Backend) error {
	target, err := restoreTarget(cfg, o.TargetBootstrap)
	if err != nil {
		return err
	}
	opts, err := target.ClientOptions()
	if err != nil {
		return withCode(exitUsage, err, "")
	}
	clusterID, err := targetClusterID(ctx, opts)
	if err != nil {
		return withCode(exitError, err, fmt.Sprintf("check target.bootstrap_servers and target.security in %s, or --target-bootstrap-servers", cfg.File()))
	}
	var rep *restorer.Report
	if clusterID != "" {
		// Without the report's cut and offset maps the comparison is
		// wrong: a report that cannot be read fails the command.
		if rep, err = repository.LatestReport(ctx, store, cfg.ApplicationID, clusterID); err != nil {
			hint := "restore the backup again into an empty cluster: it writes a new report"
			if storage.IsTransient(err) {
				hint = storage.TransientHint(store.Location())
			}
			return withCode(exitError, fmt.Errorf("verify against the cluster: the latest restore into cluster %s: %w", clusterID, err), hint)
		}
	}
	id := o.BackupID
	explicit := id != "" && id != "latest"
	switch {
	case rep != nil && !explicit:
		id = rep.BackupID
		fmt.Fprintf(s.ErrOut, "the latest restore into cluster %s is restore %s, of backup %s: comparing with backup %s\n", clusterID, rep.RestoreID, rep.BackupID, rep.BackupID)
	case rep != nil && id != rep.BackupID:
		j, err := repository.LoadJournal(ctx, store, id, clusterID)
		if je, ok := errors.AsType[*repository.JournalError](err); ok {
			return withCode(damageExitCode, fmt.Errorf("verify against the cluster: backup %s into cluster %s: %w", id, clusterID, err), journalHint(store.Location(), je.Key))
		}
		if err != nil {
			return withCode(exitError, fmt.Errorf("verify against the cluster: backup %s into cluster %s: %w", id, clusterID, err), storage.TransientHint(store.Location()))
		}
		if j == nil {
			return withCode(exitUsage, fmt.Errorf("verify against the cluster: backup %s was never restored into cluster %s: its latest restore, %s, is of backup %s; "+
				"comparing with another backup reports every difference between the two as a problem", id, clusterID, rep.RestoreID, rep.BackupID),
				fmt.Sprintf("compare with the restored backup: kafkastreams-dr verify -c %s --against-cluster (or --backup-id %s)", o.ConfigFile, rep.BackupID))
		}
		fmt.Fprintf(s.ErrOut, "warning: the latest finished restore into cluster %s is of backup %s; a restore of backup %s was started there but wrote no report: comparing without its cut and offset maps\n",
			clusterID, rep.BackupID, id)
	}
	m, err := verifyManifest(ctx, store, id, o.ConfigFile)
	if err != nil {
		return err
	}
	var cut verify.Cut
	var maps verify.OffsetMaps
	var topics []string
	if rep != nil && rep.BackupID == m.BackupID {
		cuts := map[string]map[int32]int64{}
		for _, tp := range rep.Topics {
			topics = append(topics, tp.Topic)
			cuts[tp.Topic] = map[int32]int64{}
			for _, pp := range tp.PartitionPlans {
				cuts[tp.Topic][pp.Partition] = pp.CutAt
			}
		}
		cut = func(t string, p int32) int64 {
			if c, ok := cuts[t][p]; ok {
				return c
			}
			return -1
		}
		restored := map[string]map[int32]*offsets.Map{}
		for _, pr := range rep.Partitions {
			if restored[pr.Topic] == nil {
				restored[pr.Topic] = map[int32]*offsets.Map{}
			}
			restored[pr.Topic][pr.Partition] = pr.Map
		}
		maps = func(t string, p int32) *offsets.Map { return restored[t][p] }
		fmt.Fprintf(s.ErrOut, "comparing with the topics, cut and offset maps of restore %s\n", rep.RestoreID)
	}
	res, err := verify.AgainstRestore(ctx, store, m, opts, topics, cut, maps)
	if err != nil && isDamage(err) {
		// New-user test: a damaged segment said "check
		// target.bootstrap_servers", exit 1.
		return withCode(damageExitCode, fmt.Errorf("verify against the cluster: %w", err), damagedSegmentsHint(o.ConfigFile, m.BackupID))
	}
	if err != nil && storage.IsTransient(err) {
		return withCode(exitError, fmt.Errorf("verify against the cluster: %w", err), storage.TransientHint(store.Location()))
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("verify against the cluster: %w", err), "check target.bootstrap_servers and target.security")
	}
	if err := writeVerifyResult(s.Out, o.JSON, m.BackupID, store.Location(), o.Deep, true, res); err != nil {
		return err
	}
	if !res.OK() {
		return withCode(exitError, fmt.Errorf("verification of backup %s failed: %s", m.BackupID, plural(len(res.Problems), "problem", "problems")),
			differsHint(ctx, o, store, m.BackupID, clusterID, rep))
	}
	return nil
}

// differsHint is what to do when the target differs from backup backupID:
// after a restore of it into the cluster clusterID that did not finish (its
// journal says incomplete, or no report of it came after the journal),
// run the same restore again, which resumes it; otherwise restore again
// into an empty cluster.
func differsHint(ctx context.Context, o *verifyOptions, store storage.Backend, backupID, clusterID string, rep *restorer.Report) string {
	if rep != nil && rep.BackupID == backupID && slices.ContainsFunc(rep.Partitions, func(pr restorer.PartitionReport) bool {
		return pr.StateDigestResult == format.StateDigestDifferent
	}) {
		// Running that restore again checks again and fails again: the
		// resume hint below would send the user round in a loop.
		return fmt.Sprintf("restore %s found the state different too: if records above differ, something else wrote into the target: delete the restored topics and restore again (or into an empty cluster); "+
			"if only the state differs, the digests recorded in backup %s do not match its records: restore an older backup with --backup-id and take a new backup", rep.RestoreID, backupID)
	}
	if clusterID != "" {
		j, err := repository.LoadJournal(ctx, store, backupID, clusterID)
		if err != nil {
			o.Logger.Warn("cannot read the restore journal: the hint may be wrong", "backup", backupID, "cluster", clusterID, "err", err)
		}
		if j != nil && (!j.Complete || rep == nil || rep.BackupID != backupID) {
			return fmt.Sprintf("the restore of backup %s into cluster %s did not finish (its journal says incomplete, or it wrote no report): "+
				"run the same restore again: it resumes (kafkastreams-dr restore -c %s --backup-id %s, with the same --strategy and --to-time), then verify again",
				backupID, clusterID, o.ConfigFile, backupID)
		}
	}
	return "the target differs from the backup: restore it again into an empty cluster"
}

// targetClusterID waits for the target cluster (config.Reach) and returns
// its cluster ID, or "" when the brokers do not tell it.
func targetClusterID(ctx context.Context, opts []kgo.Opt) (string, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "target cluster"); err != nil {
		return "", err
	}
	bm, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", nil // the comparison goes on without the restore's cut
	}
	return bm.Cluster, nil
}
