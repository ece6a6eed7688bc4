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
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Strategy is how the application's state comes back (docs/DOMAIN.md#strategies).
type Strategy string

const (
	// StrategyChangelog restores input, output and changelog topics to the
	// end of the backup and translates the group's offsets: the app starts
	// with its state (after wiping its local state directories).
	StrategyChangelog Strategy = "changelog"
	// StrategyRebuild restores input and output topics (up to ToTime when
	// given), skips changelogs, and sets the group's input offsets to the
	// start of the restored data: the app rebuilds its state from input.
	StrategyRebuild Strategy = "rebuild"
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
	// the backup's.
	ApplicationID string
	// ReplicationFactor, when > 0, replaces the backed-up replication
	// factor of every created topic (and caps min.insync.replicas at it).
	ReplicationFactor int
	DryRun            bool // plan and check only; write nothing
	// Retention is what to do with records already past the target
	// topic's retention.ms: RetentionUnset refuses the restore when there
	// are any (RefusedError naming each topic's count and oldest
	// timestamp); see RetentionKeep and RetentionAcceptLoss.
	Retention RetentionChoice
	// LockWait is how long to wait for another restore into the same
	// target cluster to finish (or its lock to go stale); 0 refuses at
	// once with ErrLocked.
	LockWait    time.Duration
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

	Logger   *slog.Logger
	Observer Observer // nil: none
}

// Plan is everything a restore will do, computed before the first write.
type Plan struct {
	BackupID        string         `json:"backup_id"`
	ApplicationID   string         `json:"application_id,omitempty"`
	Strategy        Strategy       `json:"strategy"`
	ToTime          *time.Time     `json:"to_time,omitempty"`
	TargetClusterID string         `json:"target_cluster_id,omitempty"`
	TargetBrokers   int            `json:"target_brokers"`
	Topics          []TopicPlan    `json:"topics"`
	Skipped         []SkippedTopic `json:"skipped,omitempty"`
	Group           *GroupPlan     `json:"group,omitempty"`
	Warnings        []string       `json:"warnings,omitempty"`
	// Complete is true when an earlier run of this same restore finished:
	// nothing is produced and no offset is committed again (the group may
	// have moved since).
	Complete bool `json:"complete,omitempty"`
}

// TopicPlan is one topic to restore.
type TopicPlan struct {
	Topic             string            `json:"topic"`
	Class             string            `json:"class"`
	SourceChangelog   bool              `json:"source_changelog,omitempty"`
	Action            string            `json:"action"` // "create", "resume" (this restore created it before) or "fill" (exists empty with the right partition count)
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`                 // set at creation
	FinalConfigs      map[string]string `json:"final_configs,omitempty"` // altered after the records are in (message.timestamp.type=LogAppendTime)
	// PreConfigs are altered on an existing ("fill") topic before the
	// records go in: message.timestamp.type=CreateTime so the broker keeps
	// the records' timestamps (LogAppendTime comes back in FinalConfigs),
	// retention.ms=-1 with --retention keep.
	PreConfigs map[string]string `json:"pre_configs,omitempty"`
	// MaxMessageBytes is the target topic's effective max.message.bytes
	// (topic config, else the broker's message.max.bytes): the largest
	// record batch, in bytes, the broker accepts and the producer sends.
	MaxMessageBytes int64 `json:"max_message_bytes"`
	// Retention is set when records to restore are already past the
	// target topic's retention.ms.
	Retention      *RetentionPlan  `json:"retention,omitempty"`
	PartitionPlans []PartitionPlan `json:"partition_plans"`
}

// PartitionPlan is one partition to restore.
type PartitionPlan struct {
	Partition    int32 `json:"partition"`
	Records      int64 `json:"records"`       // records to restore (after a --to-time cut)
	SourceEnd    int64 `json:"source_end"`    // end offset of the backup's cut
	CutAt        int64 `json:"cut_at"`        // original offset where a --to-time cut ends the partition; -1 without cut
	AlreadyThere int64 `json:"already_there"` // records a resumed restore finds on the target
	// NoTimestamp counts records with timestamp -1 (RecordBatch.NO_TIMESTAMP):
	// the broker stores them without range check; consumers see -1.
	NoTimestamp int64 `json:"no_timestamp"`
	// PastRetention counts records older than the target topic's
	// retention.ms at preflight (see TopicPlan.Retention).
	PastRetention int64 `json:"past_retention,omitempty"`
}

// SkippedTopic is a backed-up topic the restore leaves out, and why.
type SkippedTopic struct {
	Topic  string `json:"topic"`
	Reason string `json:"reason"`
}

// GroupPlan is the application.id group's offsets on the target.
type GroupPlan struct {
	GroupID     string       `json:"group_id"`
	TargetState string       `json:"target_state"` // as found on the target: "" (absent), Empty, Dead, ...
	TargetType  string       `json:"target_type,omitempty"`
	Offsets     []OffsetPlan `json:"offsets"`
}

// OffsetPlan is one committed offset of the backup and what the restore
// does with it.
type OffsetPlan struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Committed  int64  `json:"committed"`      // on the source
	Translated int64  `json:"translated"`     // to commit on the target; -1 when dropped
	Current    int64  `json:"current"`        // committed on the target now; -1 when none
	Action     string `json:"action"`         // "commit" or "drop"
	Note       string `json:"note,omitempty"` // why dropped, or what the translation means
}

// Report is the outcome of a restore, saved in the repository as
// restores/<restore-id>/report.json.
type Report struct {
	Plan
	RestoreID  string            `json:"restore_id"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	Partitions []PartitionReport `json:"partitions"`
	Committed  bool              `json:"committed"`  // the group offsets were committed and read back equal
	WipeState  bool              `json:"wipe_state"` // changelogs were restored: local state must be wiped
	Records    int64             `json:"records"`    // records produced by this run
}

// PartitionReport is one restored partition.
type PartitionReport struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Class     string       `json:"class"`
	SourceEnd int64        `json:"source_end"` // the backup's end offset (old log end)
	NewEnd    int64        `json:"new_end"`    // log end on the target after the restore
	Records   int64        `json:"records"`
	Map       *offsets.Map `json:"offset_map"`
}

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

// ErrNoBackup is wrapped when the repository holds no complete backup (or
// not the one asked for).
var ErrNoBackup = errors.New("no such backup")

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
	return latestReport(ctx, store, applicationID, targetClusterID)
}

// LoadBackup loads and validates the manifest of a complete backup; id ""
// or "latest" means the greatest backup id with a manifest.json. A backup
// that does not exist is an error wrapping ErrNoBackup; a damaged manifest
// is an error naming its key.
func LoadBackup(ctx context.Context, store storage.Backend, id string) (*format.Manifest, error) {
	return loadBackup(ctx, store, id)
}
