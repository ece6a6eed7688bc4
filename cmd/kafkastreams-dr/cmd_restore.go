package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgolog"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// restoreOptions are the flags of `restore`.
type restoreOptions struct {
	ConfigFile        string
	BackupID          string            // a backup id or "latest"
	Strategy          restorer.Strategy // changelog or rebuild
	ToTime            *time.Time        // --to-time, parsed; nil without a cut
	Topics            []string          // --topics patterns; empty means every backed-up topic
	ReplicationFactor int               // 0 keeps the backed-up replication factor
	TargetBootstrap   []string          // --target-bootstrap-servers
	DryRun            bool
	SkipInFlight      bool // --skip-in-flight: leave the in-flight tails out (exit 3 when they hold records)
	AllowKafka42      bool // --allow-kafka-4-2: restore a streams group into a Kafka 4.2 target (KAFKA-20254)
	SkipGroupConfigs  bool // --skip-group-configs: commit the offsets without setting the backup's group configs
	Yes               bool
	LockWait          time.Duration            // --lock-wait
	shardFlags        shardFlags               // --shard, --shard-run, --shard-wait
	Shard             *restorer.Shard          // from shardFlags and the environment; nil: not sharded
	Retention         restorer.RetentionChoice // --retention: keep, accept-loss or unset
	Compression       restorer.Compression     // --compression: none, gzip, snappy, lz4, zstd or source
	Precheck          restorer.Precheck        // --precheck: digest or deep
	precheckGiven     bool                     // --precheck was given: a --dry-run runs the pre-check too
	JSON              bool
	Embedded          bool   // restore into a new in-process cluster
	From              string // repository directory of --embedded

	Logger *slog.Logger
	global *globalOptions // --metrics-addr, --push-gateway, --push-job
	tel    *telemetry     // nil: no metrics, bars or summary line (the embedded restore)

	// restore runs one restore; nil means restorer.Run. Tests inject one
	// to see what the command would run, or that it runs nothing.
	restore func(context.Context, restorer.Options) (*restorer.Report, error)
}

const restoreLong = `Restore one Kafka Streams application from a backup into a cluster: the config's
target section, or --target-bootstrap-servers. It creates the backed-up topics with
their partition counts and configs, produces every record to its original partition
byte for byte, then translates the committed offsets of the application.id group to
the new numbering, commits them through the group coordinator and reads them back.
A Schema Registry storage topic the backup holds (schema_registry in the backup's
config) is written first, every record of it before any other topic's, so that a
registry started on the target afterwards resolves every schema id; a target whose
copy of that topic already holds records is refused (exit 2): start the registry
only after the restore.

Everything is checked before the first write (preflight): a refused restore writes
nothing and says why (exit 2). Before the first topic is created, every segment the
restore will read is read in full and checked against the manifest (--precheck digest,
the default: exists, size, SHA-256, the topic, partition and kind in its header): a
damaged backup is refused (exit 2) naming every damaged object; run verify, or restore
an older --backup-id. Its records are decoded once, by the restore's own read, which
checks each segment's record count and offsets at its trailer: records that differ
from the manifest in bytes that match it (a writer's fault, not storage damage) fail
the restore there (exit 1, the target holds part of it). --precheck deep decodes every
record before the first write too, refusing those as well (exit 2), at the cost of one
more decode of all the data. A restore journal that does not decode
(restores/journals/<backup-id>/<cluster-id>.json) exits 2 naming it, with --dry-run
too: delete it, and the restore treats the topics it created as not its own (delete
them on the target, or restore into an empty cluster). --dry-run runs no such pre-check unless --precheck is given (then it runs it, and refuses
damage as the restore would, exit 2); without it, it decodes only the segments whose
statistics say a record may break a target limit or be past retention.ms (when one of
those is damaged, it checks every segment to name them all); verify --deep checks every
segment. --dry-run shows the plan (topics, records per
partition, the group's offsets before and after translation) and stops there.
Without --yes the restore shows the plan and asks before writing when stdin is a
terminal; when it is not (scripts, CI, Kubernetes jobs) it refuses: pass --yes, or
--dry-run to see the plan. A restore that fails or is interrupted (exit 1, 130)
resumes when the same command is run again: the topics it created are recognized
and only the records still missing are produced.

STRATEGIES (--strategy)
  changelog  (default) restore input, output and changelog topics to the end of the
             backup and translate the group's offsets: the application starts with
             its state. Every instance must first wipe its local state directory
             (the restore prints what to delete): the old .checkpoint files point
             into the lost cluster's changelog offsets.
  rebuild    restore input and output topics (up to --to-time when given), skip the
             changelogs, and set the group's input offsets to the start of the
             restored data: the application rebuilds its state from its input.

RECORDS IN FLIGHT (--skip-in-flight)
  A backup holds the tail of each repartition and foreign-key subscription topic of
  the application: records committed into it that the downstream task had not yet
  consumed at the cut. A changelog restore creates those topics as Kafka Streams
  does (the source's partitions; cleanup.policy=delete, retention.ms=-1,
  segment.bytes=52428800, message.timestamp.type=CreateTime, then the source's own
  configs), produces the tails, and commits the group's offset on each of their
  partitions to the first restored record, so the application goes on where it was.
  --skip-in-flight leaves them out: the plan and the report's warnings count the
  records lost (per topic and in total), the report is headed PARTIAL and the
  restore exits 3 (partial); so does
  --topics when it does not match them (named as the cause). A backup taken before
  tails were captured has none: its loss is an estimate from the high watermark,
  said to be one, and the restore exits 3 when it is above 0. The rebuild strategy
  never restores them and loses none (the application recreates its internal
  topics and reprocesses its input); --skip-in-flight with it is a usage error.

POINT-IN-TIME RESTORE (--to-time)
  Cuts each partition before its first record with a timestamp after the given time
  (RFC 3339, e.g. 2024-05-01T12:00:00Z, or epoch milliseconds). Refused for changelog
  topics whose state is restored (the changelog strategy), including input topics
  that a store reuses as its changelog: a changelog cut at a time does not match the
  input offsets and the outputs at that time. The safe point-in-time restore is
  --strategy rebuild --to-time T: it leaves changelogs out, and cuts source-topic
  changelogs as the inputs they are there (their stores are rebuilt from the cut).

RECORDS PAST RETENTION (--retention)
  Records older than the target topic's retention.ms (cleanup.policy delete or
  compact,delete) would be deleted by the broker minutes after the restore. When any
  record is, the restore is refused (exit 2) with each topic's count and oldest
  timestamp, until you choose:
  keep         create the topics concerned with retention.ms=-1 (an existing empty
               topic is altered before the records); the plan and the report give the
               kafka-configs command that sets retention.ms back once they may go.
  accept-loss  restore as configured: the broker deletes those records.

STATE CHECK
  After the records are in, every restored changelog partition is read back from the
  target and the digest of its state (latest value per key, tombstones remove keys)
  compared with the one the backup recorded. The summary's state line and the report
  (partitions[].state_digest_result) say equal, different, not recorded (a backup
  written before digests existed: never equal) or loss accepted (--retention
  accept-loss). A state that differs fails the restore, exit 1, after the report is
  saved: do not start the application; verify --against-cluster tells a target that
  something else wrote into (restore again) from a backup whose digest was altered
  (restore an older --backup-id).

STREAMS GROUPS (KIP-1071)
  The configs set on the application's group (the GROUP config resource:
  streams.num.standby.replicas, streams.session.timeout.ms, ...) are validated on the
  target in preflight (refused, exit 2, when the target does not accept them) and set
  and read back before the offsets are committed. A target that already holds the
  application's streams group takes the offsets while the group has no members (a
  killed instance stays a member until its session times out, 45 s by default). On a
  target whose metadata.version is Kafka 4.2's, a plan that commits a streams group's offsets is refused
  (exit 2; KAFKA-20254: on 4.2.0 the group can fail to load after a broker restart,
  fixed in 4.2.1): upgrade its brokers, or pass --allow-kafka-4-2 when they run 4.2.1
  or later. A target that refuses the backup's group configs (a broker's
  group.streams.max.standby.replicas below the backup's streams.num.standby.replicas)
  refuses the restore (exit 2) naming the broker settings that bound them:
  --skip-group-configs commits the offsets without them (the plan and report name them). A share group (KIP-932) under the application's id is left alone.

BROKER LIMITS
  Preflight checks every record against the target's limits as the broker computes
  them: its record batch (61-byte header + record) against the topic's
  max.message.bytes (the producer's batches follow each topic's limit), its
  CreateTime timestamp against message.timestamp.before.max.ms and .after.max.ms
  (timestamp -1 is never checked; the plan counts those records), and null keys
  against a compacted topic. A refusal names the first record, the count and the fix.

PRODUCER COMPRESSION (--compression)
  The restored record batches are compressed with the source topic's codec (its
  compression.type in the backup: gzip, snappy, lz4, zstd or uncompressed), else snappy
  (source, the default), or with the codec --compression names for every topic (none,
  gzip, snappy, lz4, zstd). Records are restored byte for byte whatever the codec; a
  target topic whose compression.type names another codec recompresses every batch on
  the broker. Several batches per partition are in flight at once (at most 32 MiB of
  records buffered per producer).

SHARDED RESTORE: one restore split across N processes (a Kubernetes Indexed Job,
configs/kubernetes/job-restore-sharded.yaml). --shard I/N (default $JOB_COMPLETION_INDEX
and $KAFKASTREAMS_DR_SHARDS when the latter is set) runs shard I; every shard of one
run gives the same --shard-run ID (default $KAFKASTREAMS_DR_SHARD_RUN), config and
--backup-id (shard 0 resolves "latest" once; the others restore the backup it chose).
Shard 0 plans, assigns the partitions (balanced by records) and creates the topics;
shards 1..N-1 wait for that (--shard-wait, default 10m; then exit 1 naming shard 0).
Each shard produces only its partitions; a killed shard run again resumes them. Shard 0
prechecks every segment before it creates the topics; once they are created, each shard
prechecks only the segments of its own partitions. The
group's offsets are committed once, by the shard that finds every shard finished,
which prints the one restore report; the others exit 0 printing "not complete yet"
and the shards pending (--json: "complete": false, shards_pending). A shard whose N
or --backup-id differs from its run's is refused (exit 2), nothing written.

CONFIG KEYS USED
  target.bootstrap_servers, target.client_id, target.security: the cluster to restore
    into. --target-bootstrap-servers replaces target.bootstrap_servers and keeps
    target.security and target.client_id when the config has a target section.
  target.request_timeout (default 30s), target.retry_timeout (default 2m): the bound
    on one request and how long retriable failures are retried: a target that refuses
    connections or never answers fails the restore (exit 1, nothing written) no earlier
    than retry_timeout and no later than retry_timeout + request_timeout; a chunk of
    records (2000 or 4 MiB) the target does not acknowledge within both exits 1 naming
    the broker, and the restore resumes when run again.
  storage.* (backend, bucket, prefix, region, endpoint, path_style, request_timeout,
    retry_timeout, path): the repository. S3 credentials come from the AWS default chain.
  application_id: must equal the backup's, or the restore is refused (exit 2); a
    backup taken without application_id is another application's too. Without
    application_id any backup is restored.
  source_changelog_topics: input topics that are also store changelogs, in addition
    to those the backup marked.
  See "kafkastreams-dr config validate --help" for every key.`

func newRestoreCmd(g *globalOptions, s *iostreams, runF func(context.Context, *restoreOptions, *iostreams) error) *cobra.Command {
	o := &restoreOptions{}
	var strategy, toTime string
	var topics []string
	cmd := &cobra.Command{
		Use:   "restore -c FILE",
		Short: "Restore the application's topics and group offsets into a new cluster",
		Long:  restoreLong,
		// An interrupted restore resumes when run again (restorer: the
		// journal and the target's end offsets say what was written).
		Annotations: map[string]string{interruptHintAnnotation: "run the same command again: the restore resumes where it stopped"},
		Example: `  kafkastreams-dr restore -c order-processor.yaml --dry-run
  kafkastreams-dr restore -c order-processor.yaml --yes
  kafkastreams-dr restore -c order-processor.yaml --backup-id 20240501T120000.000Z-1a2b3c4d \
      --target-bootstrap-servers kafka-dr-1:9092,kafka-dr-2:9092 --replication-factor 3 --yes

  # Point in time: inputs and outputs up to T, no changelogs; the app rebuilds its state.
  kafkastreams-dr restore -c order-processor.yaml --strategy rebuild --to-time 2024-05-01T12:00:00Z --yes

  # No cluster at hand: restore the repository made by "backup --embedded" into a
  # new embedded cluster and compare the group's offsets before and after.
  kafkastreams-dr restore --embedded --from ./kdr-quickstart`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(cmd, strategy, toTime, topics); err != nil {
				return err
			}
			if bs, err := o.shardFlags.shard(cmd, lookupEnv); err != nil {
				return err
			} else if bs != nil {
				if o.Embedded {
					return &usageError{errors.New("--shard does not go with --embedded: a sharded restore is of a repository and target the shards share")}
				}
				o.Shard = &restorer.Shard{Index: bs.Index, Count: bs.Count, Run: bs.Run, Wait: bs.Wait}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			o.global = g
			if o.Embedded {
				return runEmbeddedRestore(cmd.Context(), o, s)
			}
			return runRestore(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigFile, "config", "c", "", "config file (required unless --embedded)")
	f.StringVar(&o.BackupID, "backup-id", "latest", "backup to restore: an `ID` (the backups/<id>/ directory of the repository) or \"latest\", the latest complete backup")
	f.StringVar(&strategy, "strategy", string(restorer.StrategyChangelog), "`STRATEGY` is changelog (topics and state, offsets translated) or rebuild (no changelogs: the app rebuilds its state)")
	f.StringVar(&toTime, "to-time", "", "point-in-time restore: cut each partition before its first record after `TIME` (RFC 3339 or epoch milliseconds); refused for changelog topics whose state is restored (the changelog strategy)")
	f.StringArrayVar(&topics, "topics", nil, "restore only the backed-up topics and in-flight tails matching `PATTERN`s (globs or ~regex, comma-separated or repeated; a ~regex is taken whole)")
	f.IntVar(&o.ReplicationFactor, "replication-factor", 0, "replication factor `N` of every created topic (default: the backed-up one); caps min.insync.replicas")
	f.StringSliceVar(&o.TargetBootstrap, "target-bootstrap-servers", nil, "`HOST:PORT,...` of the cluster to restore into (default: target.bootstrap_servers)")
	f.BoolVar(&o.DryRun, "dry-run", false, "show the plan and run the preflight checks a restore runs (a refusal exits 2); no segment pre-check: only the segments whose statistics flag a limit or retention are decoded (verify --deep checks every segment); write nothing")
	f.BoolVar(&o.SkipInFlight, "skip-in-flight", false, "changelog strategy: do not restore the repartition topics' in-flight tails; their records are lost (counted in the plan and the warnings; exit 3)")
	f.Var(newRetentionValue(&o.Retention), "retention", "`CHOICE` is keep (restore records already past the target topic's retention.ms with retention.ms=-1) or accept-loss (the broker deletes them); required when there are any")
	f.BoolVar(&o.AllowKafka42, "allow-kafka-4-2", false, allowKafka42Usage)
	f.BoolVar(&o.SkipGroupConfigs, "skip-group-configs", false, skipGroupConfigsUsage)
	o.shardFlags.add(cmd)
	durationFlag(f, &o.LockWait, "lock-wait", 0, "refuses at once", "wait this long when another restore into the same target cluster holds its lock, e.g. 2m (0: refuse at once; never negative)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "restore without asking for confirmation (needed when stdin is not a terminal)")
	f.StringVar(&o.Precheck, "precheck", restorer.PrecheckDigest, "`MODE` of the pre-check before the first write: digest (every segment's size, SHA-256 and header) or deep (every record decoded too: one more decode of all the data)")
	f.StringVar(&o.Compression, "compression", restorer.CompressionSource, "`CODEC` of the produced record batches: none, gzip, snappy, lz4, zstd, or source (each topic's source compression.type, else snappy)")
	f.BoolVar(&o.JSON, "json", false, `print the report (or with --dry-run the plan) as JSON; the report's "status" is complete, partial or failed; the plan's "segments_precheck" is the --precheck mode every segment passed, or "none" when not checked`)
	f.BoolVar(&o.Embedded, "embedded", false, `restore a repository made by "backup --embedded" into a new embedded in-process cluster (no Kafka needed); nothing is written into the repository (no restores/ report or journal)`)
	f.StringVar(&o.From, "from", "./kdr-quickstart", "with --embedded: the repository `DIR` to restore from")
	return cmd
}

// complete checks the flags that go together and parses the ones that need
// it; every problem is a usage error naming the flag.
func (o *restoreOptions) complete(cmd *cobra.Command, strategy, toTime string, topics []string) error {
	changed := cmd.Flags().Changed
	if o.Embedded {
		if o.ConfigFile != "" {
			return &usageError{errors.New("--embedded restores into its own new cluster from --from DIR: drop --config")}
		}
		for _, name := range []string{"target-bootstrap-servers", "strategy", "to-time", "topics", "replication-factor", "compression"} {
			if changed(name) {
				return &usageError{fmt.Errorf("--%s does not go with --embedded (the embedded restore uses the changelog strategy, every topic, into a new 3-broker cluster)", name)}
			}
		}
	} else {
		if changed("from") {
			return &usageError{errors.New("--from goes with --embedded; a config's repository is storage.path or storage.bucket")}
		}
		if o.ConfigFile == "" {
			return &usageError{errors.New("no config file: use --config FILE (-c FILE), or --embedded --from DIR to try the tool without a cluster")}
		}
	}
	if o.BackupID != "latest" && !format.ValidBackupID(o.BackupID) {
		return &usageError{fmt.Errorf(`invalid --backup-id %q: want "latest" or a backup id like 20240501T120000.000Z-1a2b3c4d`, o.BackupID)}
	}
	c, err := restorer.ParseCompression(o.Compression)
	if err != nil {
		return &usageError{fmt.Errorf("invalid --compression: %w", err)}
	}
	o.Compression = c
	o.precheckGiven = changed("precheck")
	if changed("precheck") && strings.TrimSpace(o.Precheck) == "" {
		// An empty value is a mistake (an unset variable), not the default.
		return &usageError{errors.New("invalid --precheck: no value: use digest (size, SHA-256 and header of every segment) or deep (every record decoded too)")}
	}
	if o.Precheck, err = restorer.ParsePrecheck(o.Precheck); err != nil {
		return &usageError{fmt.Errorf("invalid --precheck: %w", err)}
	}
	o.Strategy, o.ToTime, o.Topics, err = parseRestoreFlags(strategy, toTime, topics, o.ReplicationFactor, o.TargetBootstrap)
	if err == nil && o.SkipInFlight && o.Strategy == restorer.StrategyRebuild {
		return &usageError{errors.New("--skip-in-flight applies to the changelog strategy only: the rebuild strategy never restores the in-flight tails (the application reprocesses them from its reset input, nothing is lost); drop --skip-in-flight")}
	}
	return err
}

func parseStrategy(s string) (restorer.Strategy, error) {
	switch st := restorer.Strategy(strings.ToLower(s)); st {
	case restorer.StrategyChangelog, restorer.StrategyRebuild:
		return st, nil
	}
	return "", fmt.Errorf("invalid --strategy %q: want changelog or rebuild", s)
}

// parseToTime parses --to-time: RFC 3339 or epoch milliseconds; "" is no
// cut. A number of 10 digits or fewer is refused: it reads as epoch
// seconds, which as milliseconds would mean January 1970.
func parseToTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms >= 0 && ms < 1e11 {
			return nil, fmt.Errorf("invalid --to-time %q: this looks like epoch seconds; --to-time takes epoch milliseconds (%s000) or RFC 3339", s, s)
		}
		t := time.UnixMilli(ms).UTC()
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("invalid --to-time %q: want RFC 3339 (2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00) or epoch milliseconds (1714564800000)", s)
	}
	return &t, nil
}

// parseTopicPatterns splits comma-separated --topics values (topic names
// cannot hold a comma; a ~regex can, so it is taken whole) and checks the
// patterns with the topic filter's own parser.
func parseTopicPatterns(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, "~") {
			out = append(out, v)
			continue
		}
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	if len(values) > 0 && len(out) == 0 {
		return nil, errors.New("--topics: no pattern given")
	}
	if _, err := topicfilter.NewFilter(out, nil); err != nil {
		return nil, fmt.Errorf("--topics: %w", err)
	}
	return out, nil
}

// checkBootstrapServer checks one host:port.
func checkBootstrapServer(s string) error {
	if strings.Contains(s, "://") {
		return fmt.Errorf("%q is a listener URL: write host:port, e.g. kafka:9092", s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port (e.g. kafka:9092, [::1]:9092)", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
	}
	return nil
}

// parseRestoreFlags checks and parses the flags restore and drill share:
// --strategy, --to-time, --topics, --replication-factor and
// --target-bootstrap-servers. Errors are usage errors naming the flag.
func parseRestoreFlags(strategy, toTime string, topics []string, rf int, bootstrap []string) (restorer.Strategy, *time.Time, []string, error) {
	st, err := parseStrategy(strategy)
	if err != nil {
		return "", nil, nil, &usageError{err}
	}
	at, err := parseToTime(toTime)
	if err != nil {
		return "", nil, nil, &usageError{err}
	}
	pats, err := parseTopicPatterns(topics)
	if err != nil {
		return "", nil, nil, &usageError{err}
	}
	if rf < 0 || rf > 32767 {
		return "", nil, nil, &usageError{fmt.Errorf("invalid --replication-factor %d: want 1 to 32767, or 0 for the backed-up one", rf)}
	}
	for _, b := range bootstrap {
		if err := checkBootstrapServer(b); err != nil {
			return "", nil, nil, &usageError{fmt.Errorf("--target-bootstrap-servers: %w", err)}
		}
	}
	return st, at, pats, nil
}

// restoreTarget is the cluster to restore into: the config's target
// section, with --target-bootstrap-servers replacing its bootstrap servers
// (security and client id are kept; with no target section there is none).
func restoreTarget(cfg *config.Config, override []string) (config.Cluster, error) {
	var c config.Cluster
	if cfg.Target != nil {
		c = *cfg.Target
	}
	if len(override) > 0 {
		c.BootstrapServers = override
	}
	if len(c.BootstrapServers) == 0 {
		return c, withCode(exitUsage, fmt.Errorf("no target cluster: set target.bootstrap_servers in %s, or pass --target-bootstrap-servers host1:port,host2:port", cfg.File()), "")
	}
	return c, nil
}

// allowKafka42Usage is the help of restore's and drill's --allow-kafka-4-2.
const skipGroupConfigsUsage = "do not set the backup's group configs (e.g. streams.num.standby.replicas) on the target's group, for a target that refuses them: the offsets are still committed; the plan and report name the configs not set"

const allowKafka42Usage = "restore a streams group's offsets into a target whose metadata.version is Kafka 4.2's, refused by default (KAFKA-20254, fixed in 4.2.1): only when its brokers run 4.2.1 or later"

// restoreOptionsFromConfig maps the config onto restorer.Options; Target,
// Store, the flags and Logger are filled by the caller.
func restoreOptionsFromConfig(cfg *config.Config) restorer.Options {
	return restorer.Options{
		ApplicationID:         cfg.ApplicationID,
		SourceChangelogTopics: cfg.SourceChangelogTopics,
	}
}

func runRestore(ctx context.Context, o *restoreOptions, s *iostreams) (err error) {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	target, err := restoreTarget(cfg, o.TargetBootstrap)
	if err != nil {
		return err
	}
	targetOpts, err := target.ClientOptions()
	if err != nil {
		return clientOptionsError(cfg, "target", err)
	}
	targetName := strings.Join(target.BootstrapServers, ",")
	if !o.DryRun && !o.Yes && !s.InTTY {
		return withCode(exitUsage, fmt.Errorf("restore into %s needs a confirmation, and stdin is not a terminal: nothing was done", targetName),
			"pass --yes to restore without asking, or --dry-run to see the plan first")
	}
	if slices.Equal(slices.Sorted(slices.Values(target.BootstrapServers)), slices.Sorted(slices.Values(cfg.Source.BootstrapServers))) {
		fmt.Fprintf(s.ErrOut, "warning: the target bootstrap servers are the source's (%s): a restore writes to the source cluster\n", targetName)
	}
	if o.tel, err = startTelemetry(o.global, s, "restore", cfg.ApplicationID); err != nil {
		return err
	}
	defer func() { o.tel.finish(ctx, err) }()
	store, err := openExistingStorage(ctx, cfg.Storage, readOnlyWhen(o.DryRun, "restore --dry-run"))
	if err != nil {
		return storageError(err)
	}

	ro := restoreOptionsFromConfig(cfg)
	ro.Target = append(targetOpts, kgolog.Opt(o.Logger))
	ro.RequestTimeout, ro.RetryTimeout = target.Timeouts()
	ro.Observer = o.tel.restoreObserver()
	ro.Store = store
	ro.BackupID = o.BackupID
	ro.Strategy = o.Strategy
	ro.ToTime = o.ToTime
	ro.Topics = o.Topics
	ro.ReplicationFactor = o.ReplicationFactor
	ro.LockWait = o.LockWait
	ro.Shard = o.Shard
	ro.Retention = o.Retention
	ro.SkipInFlight = o.SkipInFlight
	ro.AllowKafka42 = o.AllowKafka42
	ro.SkipGroupConfigs = o.SkipGroupConfigs
	ro.Compression = o.Compression
	ro.Precheck = o.Precheck
	ro.Logger = o.Logger
	return restoreAndReport(ctx, o, s, ro, targetName, "list")
}

// restoreAndReport runs the restore (the plan only with --dry-run; the plan,
// a question and the restore without --yes) and prints the outcome. The
// embedded restore shares it with noBackupHint "embedded".
func restoreAndReport(ctx context.Context, o *restoreOptions, s *iostreams, ro restorer.Options, targetName, noBackupHint string) error {
	restore := o.restore
	if restore == nil {
		restore = restorer.Run
	}
	location := ro.Store.Location()
	if o.DryRun || !o.Yes {
		ro.DryRun = true
		ro.DryRunPrecheck = o.DryRun && o.precheckGiven
		o.Logger.Info("restore planning", "repository", location, "backup_id", ro.BackupID, "target", targetName)
		rep, err := restore(ctx, ro)
		if err != nil {
			return restoreErrorOf(err, o.ConfigFile, location, noBackupHint, true)
		}
		if o.DryRun && o.tel != nil {
			o.tel.noPush = true // a plan is no restore: keep the last one's metrics in the Pushgateway
			o.tel.line = dryRunSummary(&rep.Plan)
		}
		if o.DryRun {
			return writeDryRun(s.Out, o.JSON, &rep.Plan, targetName, ro)
		}
		ro.DryRunPrecheck = false
		printPlan(s.ErrOut, &rep.Plan, targetName)
		ok, err := confirm(s, fmt.Sprintf("\nrestore into %s? [y/N] ", targetName))
		if err != nil {
			return err
		}
		if !ok {
			return withCode(exitUsage, errors.New("restore not confirmed: nothing was written"), "")
		}
		ro.DryRun = false
	}
	o.Logger.Info("restore starting", "repository", location, "backup_id", ro.BackupID, "target", targetName)
	rep, err := restore(ctx, ro)
	if sde, ok := errors.AsType[*restorer.StateDigestError](err); ok && rep != nil {
		// The records are in and the report saved: show it, then fail.
		if werr := writeReport(s.Out, s.ErrOut, o.JSON, rep, targetName); werr != nil {
			return werr
		}
		return withCode(exitError, fmt.Errorf("restore: %w", err), stateDigestHint(o.ConfigFile, sde.BackupID))
	}
	if err != nil {
		return restoreErrorOf(err, o.ConfigFile, location, noBackupHint, false)
	}
	if o.tel != nil {
		o.tel.id = cmp.Or(rep.RestoreID, rep.BackupID)
	}
	if len(rep.ShardsPending) > 0 {
		return writeRestoreShardPending(s.Out, o.JSON, location, ro.Shard, rep)
	}
	if err := writeReport(s.Out, s.ErrOut, o.JSON, rep, targetName); err != nil {
		return err
	}
	return inFlightLossError(rep)
}

// inFlightLossError is the partial outcome (exit 3) of a restore that left
// records in flight out (--skip-in-flight, or --topics without some
// repartition topics), or of a backup that predates in-flight capture
// (its loss an estimate from the high watermark, said to be one); nil when
// none were lost.
func inFlightLossError(rep *restorer.Report) error {
	p := rep.InFlight
	if p.Lost() == 0 {
		return nil
	}
	if p.Estimated {
		return withCode(exitPartial, fmt.Errorf("restore of backup %s is partial: about %s in flight in repartition topics at the backup are lost: this backup predates in-flight capture, so they are not in it (an estimate from the high watermark; see the warnings)",
			rep.BackupID, plural64(p.Lost(), "record", "records")),
			"restore a newer backup (one taken since in-flight capture holds them), or --strategy rebuild, under which the application reprocesses its input and loses none")
	}
	return withCode(exitPartial, fmt.Errorf("restore of backup %s is partial: %s in flight in repartition topics at the backup were not restored and are lost (see the warnings)",
		rep.BackupID, plural64(p.Lost(), "record", "records")),
		inFlightLossHint(rep))
}

// inFlightLossHint is the way back to the records in flight a restore left
// out: add the tails to --topics when it did not match them, else restore
// without --skip-in-flight, unless the tails are the damaged part (the
// restore did not read them, so the hint says both).
func inFlightLossHint(rep *restorer.Report) string {
	for _, sk := range rep.Skipped {
		for _, t := range rep.InFlight.Topics {
			if t.Topic == sk.Topic && !t.Restored {
				return "add the repartition topics to --topics, or restore without --topics (into an empty cluster, or after deleting the restored topics), to bring them back"
			}
		}
	}
	return "restore without --skip-in-flight (into an empty cluster, or after deleting the restored topics) to bring them back; " +
		"when the tails are what is damaged (verify --deep names the segments), restoring without --skip-in-flight cannot bring them back: " +
		"those records are lost with this backup (tails are never chained), an older backup holds its own tails"
}

// confirm asks question on stderr and reads the answer from stdin: "y" or
// "yes" (any case) confirms; anything else, or no answer, does not.
func confirm(s *iostreams, question string) (bool, error) {
	fmt.Fprint(s.ErrOut, question)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// restoreError maps a failed restore to an exit code and the next thing to
// do: refused (nothing written), a damaged backup found before the first
// write, a damaged manifest or restore journal and no such backup exit 2; another restore holding the target's lock
// exits 11; anything else exits 1 and, unless it was a dry run or the backup
// is damaged, says that running the same command again resumes the restore.
// No hint sends the user round in a loop: a damaged backup never gets the
// resume hint.
func restoreError(err error, location, noBackupHint string, dryRun bool) error {
	return restoreErrorOf(err, "", location, noBackupHint, dryRun)
}

// restoreErrorOf is restoreError for a restore with config file: the
// damage hint's commands name it, so that they run as printed.
func restoreErrorOf(err error, file, location, noBackupHint string, dryRun bool) error {
	if je, ok := errors.AsType[*repository.JournalError](err); ok {
		return withCode(damageExitCode, fmt.Errorf("restore: %w", err), journalHint(location, je.Key))
	}
	var refused *restorer.RefusedError
	switch damage, isDamage := errors.AsType[*restorer.DamageError](err); {
	case isDamage:
		return withCode(damageExit(damage), fmt.Errorf("restore: %w", err), damageHint(damage, file))
	case errors.As(err, &refused):
		return withCode(exitUsage, err, refused.Hint)
	case errors.Is(err, restorer.ErrNoBackup):
		return withCode(exitUsage, err, listBackupsHint(location, noBackupHint))
	case errors.Is(err, restorer.ErrShardMismatch):
		return withCode(exitUsage, err, "nothing was written")
	case errors.Is(err, restorer.ErrShardRunMissing):
		return withCode(exitError, err, "nothing was written; run this shard again once shard 0 runs")
	case (dryRun || errors.Is(err, restorer.ErrNothingWritten)) && storage.IsTransient(err):
		// Before the Canceled case: a storage request that timed out
		// wraps context.DeadlineExceeded, and is no cancellation.
		return withCode(exitError, fmt.Errorf("restore plan: %w", err), "nothing was written; "+storage.TransientHint(location))
	case errors.Is(err, context.Canceled):
		// The user's interrupt (run prints the interrupt hint); a
		// deadline that ran out below is an error like any other.
		return err
	case errors.Is(err, restorer.ErrLocked):
		return withCode(exitLocked, err, "another restore into this target cluster is running: wait for it (nothing was written)")
	case errors.Is(err, repository.ErrDamaged):
		return withCode(damageExitCode, fmt.Errorf("restore: %w", err), repositoryHint(err, location))
	case dryRun || errors.Is(err, restorer.ErrNothingWritten):
		return withCode(exitError, fmt.Errorf("restore plan: %w", err),
			"nothing was written; check target.bootstrap_servers and target.security, the repository (storage.*), and the message above")
	}
	return withCode(exitError, fmt.Errorf("restore: %w", err), "run the same command again: the restore resumes where it stopped")
}

// journalHint is the way out of a restore journal at key that does not
// decode (repository.JournalError): the same restore reads it again, so
// delete it; the restore then treats the topics it created as not its own.
func journalHint(location, key string) string {
	rm := "rm " + quoteArgs([]string{strings.TrimSuffix(location, "/") + "/" + key})[0]
	if strings.HasPrefix(location, "s3://") {
		rm = "aws s3 rm " + strings.TrimSuffix(location, "/") + "/" + key
	}
	return fmt.Sprintf("the restore journal %s is damaged: the same restore fails again (nothing was written). Delete it (%s); "+
		"the restore then treats the topics it created as not its own: delete them on the target and restore again, or restore into an empty cluster", key, rm)
}

// damageExit is 2 (refused) for damage the pre-check found before the
// first write, 1 for damage found after it (an object changed since).
func damageExit(e *restorer.DamageError) int {
	if e.Written {
		return exitError
	}
	return exitUsage
}

// damageHint is the next step after a restore with config file found its
// backup damaged: running it again cannot help; verify shows the damage,
// an older backup may be whole.
func damageHint(e *restorer.DamageError, file string) string {
	id := e.BackupID
	if id == "" {
		id = "ID"
	}
	if file == "" {
		file = "FILE"
	}
	file = quoteArgs([]string{file})[0]
	h := fmt.Sprintf("the backup is damaged: the same restore fails again. See every problem with kafkastreams-dr verify -c %s --deep --backup-id %s, "+
		"and restore an older backup with --backup-id (kafkastreams-dr list -c %s shows them)", file, id, file)
	var tails []string
	for _, d := range e.Damaged {
		if !d.InFlight {
			tails = nil
			break
		}
		if !slices.Contains(tails, d.Topic) {
			tails = append(tails, d.Topic)
		}
	}
	if len(tails) > 0 {
		h += "; " + inFlightDamageWayOut(tails)
	}
	if e.Written {
		h += "; the target holds part of this restore: delete its restored topics first (or restore into an empty cluster); --precheck deep checks every record before the first write"
	} else if e.RunWritten {
		h += "; this shard wrote nothing, but its run did: shard 0 created every topic on the target and other shards may have restored their partitions: delete the restored topics first (or restore into an empty cluster)"
	} else {
		h += "; nothing was written"
	}
	return h
}

// inFlightDamageWayOut is the way past damage found only in the in-flight
// tails of topics: --skip-in-flight does not read them, at their cost.
func inFlightDamageWayOut(topics []string) string {
	return fmt.Sprintf("the damage is only in the in-flight tails of %s: restore --skip-in-flight restores everything else (the records in flight in those tails are lost, exit 3)", strings.Join(topics, ", "))
}

// listBackupsHint tells how to see which backups a repository holds (a
// backup is complete when backups/<id>/manifest.json exists).
func listBackupsHint(location, kind string) string {
	if kind == "embedded" {
		// backup --embedded --out refuses a directory that is not empty
		// (checkEmptyRepository): then propose a new one.
		if entries, err := os.ReadDir(location); err == nil && len(entries) > 0 {
			return fmt.Sprintf("%s is not empty, so backup --embedded --out refuses it: make one in a new directory: kafkastreams-dr backup --embedded --out NEW_DIR, then restore --embedded --from NEW_DIR", location)
		}
		return fmt.Sprintf("make one first: kafkastreams-dr backup --embedded --out %s", location)
	}
	// list reads the repository as the config says: an S3 endpoint and
	// its credentials included, which an "aws s3 ls" line would lack.
	h := "see which backups the repository holds: kafkastreams-dr list -c FILE"
	if !strings.HasPrefix(location, "s3://") {
		h += " (or ls " + strings.TrimSuffix(location, "/") + "/" + format.BackupsPrefix() + ": complete ones have a manifest.json)"
	}
	return h
}

// retentionValue is the --retention flag, parsed when set so that a bad
// value is a usage error naming the flag.
type retentionValue struct{ c *restorer.RetentionChoice }

func newRetentionValue(c *restorer.RetentionChoice) *retentionValue { return &retentionValue{c} }

func (v *retentionValue) String() string { return string(*v.c) }
func (v *retentionValue) Type() string   { return "string" }
func (v *retentionValue) Set(s string) error {
	c, err := restorer.ParseRetentionChoice(s)
	if err == nil && c == restorer.RetentionUnset {
		err = errors.New("want keep or accept-loss")
	}
	if err != nil {
		return err
	}
	*v.c = c
	return nil
}

// stateDigestHint is the way out of a restore whose changelogs, read back
// from the target, do not hold the state backup id recorded
// (restorer.StateDigestError, exit 1 as for a target that differs from its
// backup): verify against the cluster tells a target written to by
// something else (records differ: restore again into an empty cluster)
// from a backup whose digest does not match its own records (no record
// differs: the backup is damaged).
func stateDigestHint(file, id string) string {
	if file == "" {
		file = "FILE"
	}
	file = quoteArgs([]string{file})[0]
	return fmt.Sprintf("the restored changelogs do not hold the backup's state: do not start the application on them. Run kafkastreams-dr verify -c %s --against-cluster: "+
		"if it names records that differ, something else wrote into the target: delete the restored topics and restore again (or into an empty cluster); "+
		"if no record differs, the digests recorded in backup %s do not match its records: restore an older backup with --backup-id and take a new backup", file, id)
}
