package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// backupOptions are the flags of `backup`.
type backupOptions struct {
	ConfigFile string
	JSON       bool
	Full       bool          // start a new chain
	LockWait   time.Duration // --lock-wait
	Embedded   bool          // back up the sample application from an in-process cluster
	Out        string        // repository directory of --embedded
	Topology   string        // --topology: a Topology#describe() file
	shardFlags shardFlags    // --shard, --shard-run, --shard-wait
	Shard      *backup.Shard // from shardFlags and the environment; nil: not sharded

	Logger *slog.Logger
	global *globalOptions // --metrics-addr, --push-gateway, --push-job
}

func newBackupCmd(g *globalOptions, s *iostreams, runF func(context.Context, *backupOptions, *iostreams) error) *cobra.Command {
	o := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup -c FILE",
		Short: "Back up the application's topics and group offsets",
		Long: `Back up one Kafka Streams application into the repository named by the config:
first the committed offsets of the application.id consumer group, then every
partition of the selected topics up to the end captured after those offsets
(read_committed), as zstd-compressed segments, and the manifest last. An
interrupted backup is resumed by the next run. Repartition topics are never
backed up; see "kafkastreams-dr topics -c FILE" for what is selected and why.

Without a topology file, an application whose group is a streams group
(group.protocol=streams, Kafka 4.1+) is classified by the topology its group
coordinator holds (StreamsGroupDescribe; DESCRIBE on the group), so
source.topics.include may be left out; a group that cannot be described is a
warning and topics are classified by name. When that topology names no outputs
(the brokers keep no KIP-1331 description, e.g. after a restart without
group.streams.topology.description.plugin.class), the outputs and dead-letter
topics of the latest complete backup that still exist are backed up again, with
a warning naming them.

A backup refused for its selection (no include and no topology, a topology
mismatch, a missing literal include, nothing selected; exit 2) writes nothing:
no lock, and no storage.path directory is created.

Every Kafka request is bounded by source.request_timeout (default 30s); retriable
failures (a broker that does not answer or restarts, LEADER_NOT_AVAILABLE,
COORDINATOR_NOT_AVAILABLE) are retried with backoff for source.retry_timeout
(default 2m), then the run fails (exit 1) naming the broker: a cluster that
refuses connections or never answers, no earlier than retry_timeout and no later
than retry_timeout + request_timeout after the first try. A partition whose
fetches the broker keeps answering with no records below the captured end is
not taken as done: after source.retry_timeout the backup ends it where reading
stopped, names the range, and exits 3 (partial); the next backup reads the rest.

The cut (the group's committed offsets and every partition's last stable offset)
is proven to hold each committed transaction of an exactly-once application wholly
or not at all: offsets, wait for the application's transactions in PrepareCommit,
ends, wait again, offsets again, until both readings agree, at most
backup.cut_attempts times (default 100) within backup.cut_timeout (default 30s).
A cut not proven is kept (exit 0), recorded as cut.proven false with its reason in
the manifest, and warned of here and by a changelog restore's plan.

One repository (storage.path, or the bucket, plus storage.prefix) holds the backups
of one application: a backup whose application.id ("" without application_id)
differs from that of the repository's latest backup, or of the interrupted run it
would resume, is refused before it writes anything (exit 2, naming both; --full
too). Give each application a storage.prefix of its own. An application_id key
present but empty (an empty ${APP}) is a config error (exit 2).
An interrupted run whose progress.json does not decode cannot be resumed (exit 2):
delete that backups/<id>/progress.json, and the next backup starts a new run.

SHARDED BACKUP: one backup split across N processes (a Kubernetes Indexed Job,
configs/kubernetes/job-backup-sharded.yaml). --shard I/N (default $JOB_COMPLETION_INDEX
and $KAFKASTREAMS_DR_SHARDS when the latter is set) runs shard I; every shard of one
run gives the same --shard-run ID (default $KAFKASTREAMS_DR_SHARD_RUN, the Job's
controller uid) and the same config. Shard 0 takes the one cut (group offsets, then
ends) and assigns the partitions, balanced by the offsets to copy; shards 1..N-1
wait for it (--shard-wait, default 10m; then exit 1 naming shard 0). The shards
share the repository lock, which keeps any other run out. Each shard copies its
partitions with its own progress (backups/<id>/shards/<I>.json): a killed shard run
again resumes its partitions. The backup is complete, listed and restorable, only
when every shard has finished: the last one writes the manifest; the others print
"not complete yet" and the shards still running (exit 0). Refused before any write
(exit 2): I/N that is not 0 <= I < N, no run id, a run cut for another N or another
selection (include, exclude, topology) than this shard's config. A shard of a run
already complete copies nothing and prints the backup (exit 0).

Prints a summary of the backup on stdout (--json for machines); logs go to stderr,
with progress bars when stderr is a terminal and one summary line at the end.
--metrics-addr serves the run's Prometheus metrics while it lasts; --push-gateway
pushes them when it ends (see "kafkastreams-dr --help").

The application's topology, when known (--topology FILE or topology_file: a
Topology#describe() text; else a streams group's on the broker, KIP-1071),
classifies the topics and, without source.topics.include, selects its inputs,
outputs, dead-letter topics, changelogs and source-topic changelogs; the manifest
records each topic's role and where the topology came from (a changed topology
starts a new backup instead of resuming one). Refused (exit 2, nothing copied):
neither include nor topology; a topology input or changelog the include or
exclude leaves out (the fix is named; source.topics.allow_topology_mismatch: true
warns instead); a topology input missing from the cluster (allow_missing: true
warns instead); a topology file that is not a regular file of at most 1 MiB or
cannot be parsed (a truncated describe() text too); a source_changelog_topics
entry the topology names as a repartition topic, an output or a changelog.

CONFIG KEYS USED
  application_id, source_changelog_topics, other_application_ids,
  internal_topic_prefixes, topology_file, dead_letter_queue_topics,
  source.* (bootstrap_servers, client_id,
  request_timeout, retry_timeout, security, topics.include, topics.exclude,
  topics.allow_missing, topics.allow_topology_mismatch), storage.* (backend, bucket, prefix, region, endpoint,
  path_style, request_timeout, retry_timeout, upload_buffer_bytes, path), backup.* (compression,
  compression_level, source_cluster_id, segment_kind, segment_max_bytes, concurrency, cut_attempts, cut_timeout),
  schema_registry.topic (the registry's storage topic, copied whatever the filters
  say and marked in the manifest, so that restore writes it first).
  S3 credentials come from the AWS default chain (AWS_* environment variables,
  shared config and credentials files, web identity / IRSA, instance roles).
  See "kafkastreams-dr config validate --help" for every key.`,
		Example: `  kafkastreams-dr backup -c order-processor.yaml
  AWS_PROFILE=backup kafkastreams-dr backup -c order-processor.yaml --json

  # No cluster at hand: start an embedded 3-broker Kafka-protocol cluster
  # (franz-go kfake) seeded with a sample Streams app and back it up.
  kafkastreams-dr backup --embedded --out ./kdr-quickstart`,
		Args:        usageArgs(cobra.NoArgs),
		Annotations: map[string]string{interruptHintAnnotation: backupInterruptHint},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Embedded {
				// Its cluster ends with the process: a new run needs a new --out.
				cmd.Annotations[interruptHintAnnotation] = fmt.Sprintf("the embedded cluster ended with the run: remove %s and run the same command again", o.Out)
			}
			switch {
			case o.Embedded && o.ConfigFile != "":
				return &usageError{errors.New("--embedded uses its own sample config: drop --config")}
			case o.Embedded && o.Topology != "":
				return &usageError{errors.New("--embedded backs up its own sample application: drop --topology")}
			case !o.Embedded && cmd.Flags().Changed("out"):
				return &usageError{errors.New("--out goes with --embedded; a config's repository is storage.path or storage.bucket")}
			case !o.Embedded && o.ConfigFile == "":
				return &usageError{errors.New("no config file: use --config FILE (-c FILE), or --embedded to try the tool without a cluster")}
			}
			var err error
			if o.Shard, err = o.shardFlags.shard(cmd, lookupEnv); err != nil {
				return err
			}
			if o.Embedded && o.Shard != nil {
				return &usageError{errors.New("--embedded backs up in one process: drop --shard (and unset " + envShards + ")")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			o.global = g
			if o.Embedded {
				return runEmbeddedBackup(cmd.Context(), o, s)
			}
			return runBackup(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required unless --embedded)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	durationFlag(cmd.Flags(), &o.LockWait, "lock-wait", 3*time.Minute, "refuses at once", "wait this long for the repository lock when another run holds it (a run that died on this host is taken over at once; elsewhere its lock goes stale 2 minutes after its last heartbeat); 0 refuses at once, never negative")
	cmd.Flags().StringVar(&o.Topology, "topology", "", "a file holding the application's Topology#describe() text: it classifies the topics and, without source.topics.include, selects them (overrides topology_file)")
	cmd.Flags().BoolVar(&o.Full, "full", false, "start a new backup chain: copy every partition from its log start, naming no earlier backup's segments (after verify found a damaged segment); the repository's latest backup must still be of this application.id")
	cmd.Flags().BoolVar(&o.Embedded, "embedded", false, "back up a sample Streams app from an embedded in-process cluster (no Kafka or cloud account needed)")
	cmd.Flags().StringVar(&o.Out, "out", "./kdr-quickstart", "with --embedded: the local directory to write the backup repository to (must not hold one yet)")
	o.shardFlags.add(cmd)
	return cmd
}

// backupInterruptHint is printed after "Error: interrupted" (exit 130)
// from a backup, as for a restore: what was copied is kept, the next run
// copies the rest.
const backupInterruptHint = "run the same command again: the backup resumes where it stopped (the segments already written are kept, the rest is copied)"

// backupOptionsFromConfig maps the config onto backup.Options, with this
// build's version as the manifests' tool_version; Source, Store and Logger
// are filled by the caller.
func backupOptionsFromConfig(cfg *config.Config) backup.Options {
	// The primary key's id (a key that cannot be read: openStorage
	// refuses the run before it writes).
	var keyID string
	if ring, err := cfg.Storage.Keyring(); err == nil {
		keyID = ring.Primary()
	}
	return backup.Options{
		KeyID:                 keyID,
		ApplicationID:         cfg.ApplicationID,
		SourceChangelogTopics: cfg.SourceChangelogTopics,
		InternalPrefixes:      cfg.InternalTopicPrefixes,
		OtherApplicationIDs:   cfg.OtherApplicationIDs,
		Include:               cfg.Source.Topics.Include,
		Exclude:               cfg.Source.Topics.Exclude,
		AllowMissingTopics:    cfg.Source.Topics.AllowMissing,
		DeadLetterTopics:      cfg.DeadLetterQueueTopics,
		AllowTopologyMismatch: cfg.Source.Topics.AllowTopologyMismatch,
		IncludeKey:            listKey(cfg, "source.topics.include"),
		ExcludeKey:            listKey(cfg, "source.topics.exclude"),
		SchemaRegistryTopic:   schemaRegistryTopic(cfg),
		SourceClusterID:       cfg.Backup.SourceClusterID,
		SegmentMaxBytes:       int64(cfg.Backup.SegmentMaxBytes),
		SegmentKind:           cfg.Backup.SegmentKind,
		Concurrency:           cfg.Backup.Concurrency,
		CompressionLevel:      format.CompressionLevel(cfg.Backup.CompressionLevel),
		CutAttempts:           cfg.Backup.CutAttempts,
		CutTimeout:            cfg.Backup.CutTimeout,
		RetryTimeout:          cfg.Source.RetryTimeout,
		ToolVersion:           version,
	}
}

// schemaRegistryTopic is the config's schema_registry.topic, "" without a
// schema_registry section.
func schemaRegistryTopic(cfg *config.Config) string {
	if cfg.SchemaRegistry == nil {
		return ""
	}
	return cfg.SchemaRegistry.Topic
}

func runBackup(ctx context.Context, o *backupOptions, s *iostreams) (err error) {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	bo := backupOptionsFromConfig(cfg)
	bo.Full, bo.LockWait, bo.Shard = o.Full, o.LockWait, o.Shard
	if bo.Topology, err = loadTopology(cfg, o.Topology); err != nil {
		return err
	}
	if bo.Source, err = sourceClientOptions(cfg); err != nil {
		return err
	}
	bo.Logger = o.Logger
	tel, err := startTelemetry(o.global, s, "backup", cfg.ApplicationID)
	if err != nil {
		return err
	}
	defer func() { tel.finish(ctx, err) }()
	bo.Observer = tel.backupObserver()
	// The storage is opened once the selection is accepted: a refused
	// backup creates no repository directory.
	var openErr error
	ctx, sse := withSSENote(ctx)
	bo.OpenStore = func(ctx context.Context) (storage.Backend, error) {
		if bo.Store, openErr = openStorage(ctx, cfg.Storage); openErr != nil {
			return nil, openErr
		}
		o.Logger.Info("backup starting", "application_id", cfg.ApplicationID, "repository", bo.Store.Location())
		return bo.Store, nil
	}
	res, err := backup.Run(ctx, bo)
	if openErr != nil {
		return storageError(openErr)
	}
	if err != nil {
		return backupError(err, cfg.File())
	}
	tel.id = res.BackupID
	if o.Shard != nil && res.Manifest == "" {
		if err := writeShardPending(s.Out, o.JSON, bo.Store.Location(), o.Shard, res); err != nil {
			return err
		}
		return gapsError(res)
	}
	// The config's warnings (an application_id that is not set, an empty
	// ${VAR}) went to stderr when it was loaded; they head the result's
	// warnings too, where a CronJob's log reader looks (new-user test: an
	// empty ${APP} gave a backup without group offsets, exit 0, and a
	// stdout warning list without a word of it).
	res.Warnings = append(slices.Clone(cfg.Warnings()), res.Warnings...)
	if w := sse.Warning(); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if m, err := repository.LoadManifest(ctx, bo.Store, res.Manifest); err == nil {
		tel.metrics.SetBackupCut(m.CutAt) // a resumed backup's cut is an earlier run's
	}
	if err := reportBackup(ctx, s, o.JSON, bo.Store, res); err != nil {
		return err
	}
	return gapsError(res)
}

// backupError maps a failed run to an exit code and the next thing to do.
func backupError(err error, file string) error {
	var missing *topicfilter.MissingTopicsError
	var mismatch *topicfilter.TopologyMismatchError
	var registry *topicfilter.SchemaRegistryTopicError
	var pe *backup.PhaseError
	var progress *repository.ProgressError
	switch {
	case errors.As(err, &progress):
		// Before the repository phase: running it again reads the same bytes.
		return withCode(damageExitCode, fmt.Errorf("backup: %w", err), progressHint("", progress.Key))
	case errors.As(err, &missing):
		return withCode(exitUsage, err, fmt.Sprintf("see what the filters match with: kafkastreams-dr topics -c %s", file))
	case errors.As(err, &registry):
		return withCode(exitUsage, err, fmt.Sprintf("see every topic's role with: kafkastreams-dr topics -c %s", file))
	case errors.As(err, &mismatch):
		return withCode(exitUsage, err, fmt.Sprintf("see every topic's role and why it is or is not selected with: kafkastreams-dr topics -c %s", file))
	case errors.Is(err, backup.ErrNoTopicsSelector):
		return withCode(exitUsage, err, "")
	case errors.Is(err, backup.ErrNothingSelected):
		return withCode(exitUsage, err, fmt.Sprintf("fix source.topics.include (or source.topics.exclude); see every topic and why it is or is not selected with: kafkastreams-dr topics -c %s", file))
	case errors.Is(err, repository.ErrOtherApplication):
		// One repository prefix holds one application's chain; --full does
		// not help (the new chain would still share "latest").
		return withCode(exitUsage, fmt.Errorf("backup refused, the repository holds another application's backups: %w", err), otherApplicationHint(file))
	case errors.Is(err, backup.ErrShardMismatch):
		return withCode(exitUsage, err, "nothing was written")
	case errors.Is(err, backup.ErrShardCutMissing):
		return withCode(exitError, err, "nothing was written; run this shard again once shard 0 runs")
	case errors.Is(err, backup.ErrLocked):
		return withCode(exitLocked, err, "another run holds the repository lock; nothing was copied: the next run proceeds once it is released, or goes stale 2 minutes after its holder's last heartbeat (wait longer with --lock-wait)")
	case errors.As(err, &pe):
		switch pe.Phase {
		case backup.PhaseCluster:
			return withCode(exitError, fmt.Errorf("backup: %w", err), fmt.Sprintf("check source.bootstrap_servers and source.security, and that the brokers are reachable: kafkastreams-dr topics -c %s", file))
		case backup.PhaseRepository:
			if storage.IsTransient(err) {
				return withCode(exitError, fmt.Errorf("backup: %w", err), "nothing was copied; "+storage.TransientHint("the storage"))
			}
			return withCode(exitError, fmt.Errorf("backup: %w", err), "check the repository (storage.* in the config) and the message above; nothing was copied")
		default:
			return withCode(exitError, fmt.Errorf("backup: %w", err), "run the same command again: it resumes this backup where it stopped")
		}
	}
	return withCode(exitError, fmt.Errorf("backup: %w", err), "")
}

// gapsError makes a backup exit with 3 (partial) when its data was not all
// captured: partitions it could not read to the captured end (the broker
// answered with no records and no progress until source.retry_timeout ran
// out; the next backup reads the rest), or records deleted by the broker
// before any backup read them.
func gapsError(res *backup.Result) error {
	if len(res.Unread) > 0 {
		ranges := make([]string, len(res.Unread))
		for i, u := range res.Unread {
			ranges[i] = fmt.Sprintf("topic %q partition %d offsets %d..%d", u.Topic, u.Partition, u.From, u.To-1)
		}
		msg := fmt.Sprintf("backup %s is partial: %s not read to the captured end: %s (see the warnings)",
			res.BackupID, plural(len(res.Unread), "partition was", "partitions were"), strings.Join(ranges, "; "))
		if res.NewGaps > 0 {
			msg += fmt.Sprintf("; and %s deleted by the broker before any backup read them", plural(res.NewGaps, "offset range was", "offset ranges were"))
		}
		return withCode(exitPartial, errors.New(msg),
			"run the backup again: it continues each partition where this one stopped; if the same partitions stay unread, check their leader's logs (the warning names the broker and what it answered)")
	}
	if res.NewGaps == 0 {
		return nil
	}
	return withCode(exitPartial, fmt.Errorf("backup %s is complete, but %s deleted by the broker before any backup read them (see the warnings)",
		res.BackupID, plural(res.NewGaps, "offset range was", "offset ranges were")),
		"back up more often than the shortest retention.ms of the backed-up topics")
}

// reportBackup prints the finished backup (writeBackupResult), read back
// from the manifest just written.
func reportBackup(ctx context.Context, s *iostreams, asJSON bool, store storage.Backend, res *backup.Result) error {
	m, err := repository.LoadManifest(ctx, store, res.Manifest)
	if err != nil {
		return withCode(exitError, fmt.Errorf("read back the manifest just written: %w", err), "")
	}
	return writeBackupResult(s.Out, asJSON, store.Location(), res, m)
}

// otherApplicationHint is the way out of repository.ErrOtherApplication
// for the config file: one repository per application.
func otherApplicationHint(file string) string {
	return fmt.Sprintf("nothing was written; give each application a repository of its own: a storage.prefix of its own in %s (e.g. storage.prefix: <application.id>), or another storage.path or bucket; see whose backups the repository holds with: kafkastreams-dr list -c %s", file, file)
}
