// Package restorer brings a Kafka Streams application back on a new cluster
// from a backup repository (docs/FORMAT.md): it checks everything before
// the first write (preflight), creates the topics with the backed-up
// partition counts and configs, produces every record to its original
// partition byte for byte, translates the application.id group's committed
// offsets (package offsets) and commits them through the group
// coordinator, reading them back to verify. Point-in-time restore of
// changelog topics is refused (docs/DOMAIN.md#pitr).
package restorer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Strategy is how the application's state comes back (docs/DOMAIN.md#strategies);
// the type is format.Strategy, stored in restore reports and journals.
type Strategy = format.Strategy

const (
	// StrategyChangelog restores input, output and changelog topics to the
	// end of the backup and translates the group's offsets: the app starts
	// with its state (after wiping its local state directories).
	StrategyChangelog = format.StrategyChangelog
	// StrategyRebuild restores input and output topics (up to ToTime when
	// given), skips changelogs, and sets the group's input offsets to the
	// start of the restored data: the app rebuilds its state from input.
	StrategyRebuild = format.StrategyRebuild
)

// Options configures one restore.
type Options struct {
	Target []kgo.Opt       // franz-go options connecting to the target cluster
	Store  storage.Backend // the backup repository

	BackupID string   // backup to restore; "" or "latest" for the latest complete backup
	Strategy Strategy // default StrategyChangelog
	// ToTime, when non-nil, cuts each partition before its first record
	// with a timestamp after it (point-in-time restore). Refused when any
	// selected topic is a changelog.
	ToTime *time.Time
	// Topics restricts the restore to the backup's topics matching these
	// patterns (topicfilter syntax); empty means every topic.
	Topics []string
	// SourceChangelogTopics are input topics the config declares as store
	// changelogs, in addition to those the manifest marks.
	SourceChangelogTopics []string
	// ApplicationID is the config's application.id; when set it must equal
	// the backup's, or the restore is refused: a backup taken without an
	// application_id is of another application too
	// (repository.SameApplication). "" restores any backup.
	ApplicationID string
	// ReplicationFactor, when > 0, replaces the backed-up replication
	// factor of every created topic (and caps min.insync.replicas at it).
	ReplicationFactor int
	DryRun            bool // plan and check only; write nothing
	// DryRunPrecheck makes a DryRun also run the pre-check a restore runs
	// before its first write (Precheck's mode), so that a dry run can
	// prove the backup restorable (restore --dry-run --precheck MODE);
	// damage is returned as a restore returns it (*DamageError wrapped
	// with ErrNothingWritten). Without it a dry run decodes only the
	// segments its limit and retention checks need.
	DryRunPrecheck bool
	// SkipInFlight leaves the backup's in-flight tails out of a changelog
	// restore (restore --skip-in-flight): the repartition topics are not
	// created, the group's offsets on them are dropped, and the records
	// those tails hold are lost. The plan counts them
	// (Plan.InFlight.Records, the records the tails hold, every
	// partition) and warns. By default (false) a changelog restore
	// restores them (docs/DOMAIN.md#in-flight); the rebuild strategy never
	// does.
	SkipInFlight bool
	// Retention is what to do with records already past the target
	// topic's retention.ms: RetentionUnset refuses the restore when there
	// are any (RefusedError naming each topic's count and oldest
	// timestamp); see RetentionKeep and RetentionAcceptLoss.
	Retention RetentionChoice
	// AllowKafka42 restores a streams group's offsets into a target whose
	// finalized metadata.version is Kafka 4.2's (restore
	// --allow-kafka-4-2), which is refused by default: KAFKA-20254 (4.2.0
	// only, fixed in 4.2.1) can make the streams group fail to load after
	// a broker restart, and the protocol cannot tell 4.2.0 from 4.2.1.
	// Set it when the target's brokers run 4.2.1 or later.
	AllowKafka42 bool
	// SkipGroupConfigs leaves the backup's group configs
	// (format.Group.Configs) unset on the target (--skip-group-configs):
	// for a target that refuses them (e.g. a broker's
	// group.streams.max.standby.replicas below the backup's
	// streams.num.standby.replicas; Kafka's GroupConfigManager). The
	// offsets are still committed; the plan and report name the configs
	// not set (GroupPlan.SkippedConfigs) and a warning says so. Default
	// false: they are set, and a target that refuses them refuses the
	// restore.
	SkipGroupConfigs bool
	// LockWait is how long to wait for another restore into the same
	// target cluster to finish (or its lock to go stale); 0 refuses at
	// once with ErrLocked.
	LockWait time.Duration
	// Shard, when non-nil, makes this process shard Index of a restore
	// split across Count processes (restore --shard I/N; shard.go,
	// docs/DESIGN.md "Sharded restore"): it restores only its partitions,
	// and the group's offsets are committed once every shard has
	// produced. The shards of one Run share the restore lock. Ignored by
	// DryRun.
	Shard       *Shard
	Concurrency int // partitions restored at once; default 4
	// RequestTimeout and RetryTimeout are the target cluster's
	// request_timeout and retry_timeout (config.Cluster.Timeouts; zero
	// means their defaults, 30s and 2m). Target's options already bound
	// every other Kafka call by them; here they bound the produce of each
	// chunk of a partition's records (at most 2000 records or 4 MiB): a
	// chunk not acknowledged within RetryTimeout + RequestTimeout fails the
	// restore, naming the partition's leader (host:port), topic and
	// partition (run it again: it resumes). Produce errors are retried by
	// time, not by a count; kgo.RecordDeliveryTimeout is not usable here,
	// as franz-go counts it from each record's (original, past) timestamp.
	RequestTimeout time.Duration
	RetryTimeout   time.Duration
	// Compression is the codec the restored record batches are produced
	// with (ParseCompression: none, gzip, snappy, lz4, zstd, or source,
	// the default: each topic's source compression.type, else
	// DefaultCompression).
	Compression Compression
	// Precheck is how much of each segment the pre-check before the first
	// write decodes (restore --precheck; ParsePrecheck): PrecheckDigest
	// (the default, ""), the size, SHA-256 and header of every segment
	// the restore reads; or PrecheckDeep, every record too. Ignored by
	// DryRun, which runs no pre-check.
	Precheck Precheck
	// MaxBufferedBytes bounds the record bytes (keys, values, headers)
	// buffered or in flight in each producer, all partitions together:
	// several batches per partition are in flight at once, up to it
	// (kgo.MaxBufferedBytes); default DefaultMaxBufferedBytes (32 MiB).
	MaxBufferedBytes int

	Logger   *slog.Logger
	Observer Observer // nil: none
}

// The plan and report of a restore are stored in the repository
// (restores/<restore-id>/report.json, docs/FORMAT.md): their types live in
// package format, beside the manifest, and are named here as the restorer
// has always named them.
type (
	// Plan is everything a restore will do, computed before the first write.
	Plan = format.RestorePlan
	// TopicPlan is one topic to restore.
	TopicPlan = format.TopicPlan
	// PartitionPlan is one partition to restore.
	PartitionPlan = format.PartitionPlan
	// SkippedTopic is a backed-up topic the restore leaves out, and why.
	SkippedTopic = format.SkippedTopic
	// GroupPlan is the application.id group's offsets on the target.
	GroupPlan = format.GroupPlan
	// OffsetPlan is one committed offset of the backup and what the
	// restore does with it.
	OffsetPlan = format.OffsetPlan
	// Report is the outcome of a restore, saved in the repository as
	// restores/<restore-id>/report.json (repository.SaveReport).
	Report = format.RestoreReport
	// PartitionReport is one restored partition.
	PartitionReport = format.PartitionReport
)

// RefusedError is returned when preflight refuses the restore; nothing has
// been written. Reasons name the topic, partition and offset concerned.
type RefusedError struct {
	Reasons []string
	Hint    string // the command that does it safely, when there is one
}

func (e *RefusedError) Error() string {
	if len(e.Reasons) == 1 {
		return "restore refused: " + e.Reasons[0]
	}
	return fmt.Sprintf("restore refused for %d reasons:\n  - %s", len(e.Reasons), strings.Join(e.Reasons, "\n  - "))
}

// MissingKeysError is returned, before anything is read of the target or
// written (a dry run too), when the backup to restore needs encryption
// keys storage.encryption does not hold: Manifest.KeyIDs (the keys of its
// own segments and of the earlier backups' it names) that the store's
// keyring (storage.KeyInspector) lacks. It wraps storage.ErrNoKey (a
// configuration error: exit 2) and ErrNothingWritten.
type MissingKeysError struct {
	BackupID   string
	Missing    []string // key ids the backup needs that are not configured, sorted
	Configured []string // the configured key ids, the primary first; empty when none
}

func (e *MissingKeysError) Error() string {
	configured := "no encryption key is configured"
	if len(e.Configured) > 0 {
		configured = "configured key ids: " + strings.Join(e.Configured, ", ")
	}
	ids := "key id "
	if len(e.Missing) > 1 {
		ids = "key ids "
	}
	return fmt.Sprintf("backup %s needs %s%s, which storage.encryption does not hold (%s): its segments or those of the earlier backups it names are encrypted with it",
		e.BackupID, ids, strings.Join(e.Missing, ", "), configured)
}

func (e *MissingKeysError) Unwrap() []error { return []error{storage.ErrNoKey, ErrNothingWritten} }

// missingKeys is the *MissingKeysError of restoring m from store, nil when
// store holds every key m needs or cannot tell (not a
// storage.KeyInspector).
func missingKeys(store storage.Backend, m *format.Manifest) error {
	ki, ok := store.(storage.KeyInspector)
	if !ok {
		return nil
	}
	configured := ki.ConfiguredKeyIDs()
	var missing []string
	for _, id := range m.KeyIDs() {
		if !slices.Contains(configured, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &MissingKeysError{BackupID: m.BackupID, Missing: missing, Configured: configured}
}

// ErrNoBackup is wrapped when the repository holds no complete backup (or
// not the one asked for): repository.ErrNoBackup.
var ErrNoBackup = repository.ErrNoBackup

// ErrNothingWritten is wrapped by errors that happened before the restore
// wrote anything to the target (connecting, reading the target's state).
var ErrNothingWritten = errors.New("nothing was written")

// ErrLocked is wrapped when another restore into the same target cluster
// holds the repository's restore lock for it.
var ErrLocked = repository.ErrLocked

// Run plans the restore, runs preflight, and unless DryRun restores. With
// DryRun the returned report holds the plan only. A *RefusedError means
// nothing was written.
func Run(ctx context.Context, o Options) (*Report, error) {
	return run(ctx, o)
}

// WipeInstruction is what must happen to every instance's local state after
// a changelog restore (docs/DOMAIN.md#state-wipe).
func WipeInstruction(applicationID string) string {
	return fmt.Sprintf("before the application starts, every instance must start with an empty state directory for application.id %q "+
		"(delete <state.dir>/%s, or call KafkaStreams#cleanUp() before start): its stores and their positions (.checkpoint files, or inside RocksDB since Kafka 4, KIP-1035) refer to the old cluster's changelog offsets; kafkastreams-dr state check tells which",
		applicationID, applicationID)
}

// PredictOffsets computes, without any target cluster, how the backup's
// group offsets translate when the backup is restored into empty topics
// with the given strategy and cut (the same rule Run applies with the
// offsets it observes). backupID "" or "latest" means the latest backup.
// It decodes the segments of the partitions that have committed offsets.
func PredictOffsets(ctx context.Context, store storage.Backend, backupID string, strategy Strategy, toTime *time.Time) (*GroupPlan, error) {
	return predictOffsets(ctx, store, backupID, strategy, toTime)
}

// LatestReport returns the report of the latest finished restore of
// applicationID into the cluster with id targetClusterID ("" matches any,
// for either) in the repository, or nil when there is none. Restore ids
// sort by start time.
func LatestReport(ctx context.Context, store storage.Backend, applicationID, targetClusterID string) (*Report, error) {
	return repository.LatestReport(ctx, store, applicationID, targetClusterID)
}
