package format

import (
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
)

// This file holds the objects a restore stores in the repository, under
// restores/ (docs/FORMAT.md, "Restore reports" and "Restore journals"):
// the report of each finished restore and the journal of each restore of a
// backup into a target cluster. Their JSON field names are the contract,
// like the manifest's; the restorer writes them, and the readers (estimate,
// verify --against-cluster, state check, prune) read them through package
// repository.

// Strategy is how a restore brings the application's state back: with its
// changelogs (the stores come back as they were at the backup's cut), or by
// rebuilding the stores from the input topics.
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

// RetentionChoice is what the restore does with records already past the
// target topic's retention.ms (the broker deletes them at its next
// retention check, log.retention.check.interval.ms, 5 minutes by default).
type RetentionChoice string

const (
	// RetentionUnset refuses the restore when any record is past retention.
	RetentionUnset RetentionChoice = ""
	// RetentionKeep restores the topics concerned with retention.ms=-1
	// (set at creation, or altered before the records on an existing
	// topic); the plan names the kafka-configs command that sets it back.
	RetentionKeep RetentionChoice = "keep"
	// RetentionAcceptLoss restores as configured: the broker deletes
	// those records after the restore; the plan warns with their count.
	RetentionAcceptLoss RetentionChoice = "accept-loss"
)

// RestorePlan is everything a restore will do, computed before the first
// write. A dry run prints it; a restore stores it inside its RestoreReport.
type RestorePlan struct {
	BackupID        string         `json:"backup_id"`
	ApplicationID   string         `json:"application_id,omitempty"`
	Strategy        Strategy       `json:"strategy"`
	ToTime          *time.Time     `json:"to_time,omitempty"`
	TargetClusterID string         `json:"target_cluster_id,omitempty"`
	TargetBrokers   int            `json:"target_brokers"`
	Topics          []TopicPlan    `json:"topics"`
	Skipped         []SkippedTopic `json:"skipped,omitempty"`
	Group           *GroupPlan     `json:"group,omitempty"`
	// ShareGroup is the application.id group's id when it was a share
	// group (KIP-932) on the source (Manifest.Group.Type "share"): the
	// backup holds none of it and the restore leaves the target's group
	// alone (Group is nil); "" otherwise.
	ShareGroup string `json:"share_group,omitempty"`
	// InFlight says what the restore does with the records in flight in
	// the application's repartition topics at the backup's cut
	// (docs/DOMAIN.md#in-flight); nil under the rebuild strategy, and when
	// the backup has no repartition topic.
	InFlight *InFlightPlan `json:"in_flight,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Complete is true when an earlier run of this same restore finished:
	// nothing is produced and no offset is committed again (the group may
	// have moved since).
	Complete bool `json:"complete,omitempty"`
}

// Plan is RestorePlan under the name RestoreReport embeds it with: a
// report's plan is rep.Plan, and its fields are the report's own in JSON.
type Plan = RestorePlan

// InFlightPlan is what a changelog restore does with the backup's
// in-flight tails (Manifest.InFlight): restores them (the default: each
// is a TopicPlan of class repartition, and the group's offsets on them are
// committed to the translated start of the tail), or leaves them out
// (restore --skip-in-flight): then Records are lost, and the restore is
// partial (exit 3).
type InFlightPlan struct {
	// Restored is true when every tail is restored.
	Restored bool `json:"restored"`
	// Records are the records in flight: those the tails hold (exact), or
	// with Estimated the sum of the group's end_offset - offset on
	// repartition topics (a backup written before in_flight existed: from
	// the high watermark, committed partitions only).
	Records   int64 `json:"records"`
	Estimated bool  `json:"estimated,omitempty"`
	// Topics are the records in flight per repartition topic, by name.
	Topics []InFlightTopicPlan `json:"topics"`
}

// InFlightTopicPlan is the records in flight in one repartition topic.
type InFlightTopicPlan struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records"`
	Restored   bool   `json:"restored"` // its tail is restored (a TopicPlan of the restore)
}

// Lost is the number of records in flight this restore does not bring
// back: those of the topics not restored. 0 for a nil plan.
func (p *InFlightPlan) Lost() int64 {
	if p == nil {
		return 0
	}
	var n int64
	for _, t := range p.Topics {
		if !t.Restored {
			n += t.Records
		}
	}
	return n
}

// TopicPlan is one topic to restore.
type TopicPlan struct {
	Topic           string `json:"topic"`
	Class           string `json:"class"`
	SourceChangelog bool   `json:"source_changelog,omitempty"`
	// SchemaRegistry marks the Schema Registry's storage topic (the
	// manifest topic's schema_registry): first in the plan, its records
	// are written before any other topic's.
	SchemaRegistry bool        `json:"schema_registry,omitempty"`
	Action         TopicAction `json:"action"`
	// Resumed marks a "fill" an earlier run of this restore began: the
	// journal's filled names the topic's id, and the records not there
	// yet are produced (PartitionPlan.AlreadyThere), as for "resume".
	Resumed bool `json:"resumed,omitempty"`
	// TargetTopicID is the id of the existing topic a "fill" writes into
	// (32 hex digits), recorded in the journal's filled before its first
	// record; "" for other actions.
	TargetTopicID     string            `json:"target_topic_id,omitempty"`
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

// RetentionPlan is what preflight found about time-based retention of one
// topic on the target (cleanup.policy with delete, retention.ms >= 0).
type RetentionPlan struct {
	RetentionMs   int64 `json:"retention_ms"`   // the target topic's effective retention.ms
	PastRetention int64 `json:"past_retention"` // restored records older than retention.ms at preflight
	// OldestTimestamp is the smallest timestamp (epoch ms) among them.
	OldestTimestamp int64           `json:"oldest_timestamp"`
	Choice          RetentionChoice `json:"choice,omitempty"`
	// Override is the config the restore sets (retention.ms=-1) with
	// --retention keep, and SetBack the kafka-configs command that undoes
	// it once the records may go.
	Override string `json:"override,omitempty"`
	SetBack  string `json:"set_back,omitempty"`
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
	// Configs are the group's configs (Group.Configs of the backup) the
	// restore sets on the target's GROUP config resource
	// (IncrementalAlterConfigs) before it commits the offsets, name to
	// value; absent when the backup records none.
	Configs map[string]string `json:"configs,omitempty"`
	// SkippedConfigs are the names of the backup's group configs the
	// restore did not set because it was told to (--skip-group-configs),
	// sorted; absent otherwise.
	SkippedConfigs []string `json:"skipped_configs,omitempty"`
	// TargetConfigs are the configs set on the target's group before the
	// restore (DescribeConfigs, source DYNAMIC_GROUP_CONFIG), name to
	// value; absent when none is set or the target could not say. Those
	// the backup holds are overwritten; the others are left as they are.
	TargetConfigs map[string]string `json:"target_configs,omitempty"`
}

// OffsetPlan is one committed offset of the backup and what the restore
// does with it.
type OffsetPlan struct {
	Topic      string       `json:"topic"`
	Partition  int32        `json:"partition"`
	Committed  int64        `json:"committed"`  // on the source
	Translated int64        `json:"translated"` // to commit on the target; -1 when dropped
	Current    int64        `json:"current"`    // committed on the target now; -1 when none
	Action     OffsetAction `json:"action"`
	Note       string       `json:"note,omitempty"` // why dropped, or what the translation means
	// NeverCommitted is true for a restored in-flight partition the group
	// never committed on the source (the lost cluster): Committed is then
	// the tail's start offset, not a committed offset.
	NeverCommitted bool `json:"never_committed,omitempty"`
}

// TopicAction is what a restore does with one topic of its plan
// (TopicPlan.Action, "action" in the JSON).
type TopicAction string

const (
	// ActionCreate: the topic does not exist on the target; the restore
	// creates it with the backup's partition count and configs.
	ActionCreate TopicAction = "create"
	// ActionResume: an earlier run of this restore created it (the
	// journal holds its topic id); the records not there yet are produced.
	ActionResume TopicAction = "resume"
	// ActionFill: it exists empty on the target with the backup's
	// partition count; the restore produces into it, keeping its configs.
	ActionFill TopicAction = "fill"
)

// OffsetAction is what a restore does with one committed offset of the
// backup (OffsetPlan.Action, "action" in the JSON).
type OffsetAction string

const (
	// OffsetCommit: the offset is translated and committed on the target.
	OffsetCommit OffsetAction = "commit"
	// OffsetDrop: the offset is not committed (OffsetPlan.Note says why).
	OffsetDrop OffsetAction = "drop"
)

// RestoreReport is the outcome of a restore, stored in the repository as
// restores/<restore-id>/report.json (RestoreReportKey) once the restore
// has finished: its plan's fields, then the run's. Restore ids have the
// form of backup ids and sort by start time.
type RestoreReport struct {
	Plan
	RestoreID string `json:"restore_id"`
	// ShardsPending, never stored, lists the shards of a sharded restore
	// that have not finished producing when this shard did (restore
	// --shard): the report is then this shard's only, and no offset was
	// committed yet.
	ShardsPending []int             `json:"-"`
	StartedAt     time.Time         `json:"started_at"`
	FinishedAt    time.Time         `json:"finished_at"`
	Partitions    []PartitionReport `json:"partitions"`
	Committed     bool              `json:"committed"`  // the group offsets were committed and read back equal
	WipeState     bool              `json:"wipe_state"` // changelogs were restored: local state must be wiped
	Records       int64             `json:"records"`    // records produced by this run
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

	// StateDigest is, for a restored changelog partition (class changelog
	// or a source-topic changelog), the state digest of the partition as
	// read back from the target after the records went in (read_committed,
	// from its log start to NewEnd; docs/FORMAT.md, "State digest"), and
	// StateDigestResult its comparison with the manifest's
	// (partition_cuts[].state_digest): StateDigestEqual,
	// StateDigestDifferent, StateDigestNotRecorded (the manifest has
	// none: a backup written before digests existed), StateDigestCut (a
	// --to-time cut left part of the partition out) or
	// StateDigestLossAccepted. Both empty for other partitions.
	StateDigest       *StateDigest `json:"state_digest,omitempty"`
	StateDigestResult string       `json:"state_digest_result,omitempty"`
}

// Values of PartitionReport.StateDigestResult.
const (
	StateDigestEqual       = "equal"        // the target's state is the backup's
	StateDigestDifferent   = "different"    // it is not: the restore failed
	StateDigestNotRecorded = "not recorded" // the manifest holds no digest to compare with; never "equal"
	StateDigestCut         = "cut"          // not compared: --to-time restored a prefix of the partition
	// StateDigestLossAccepted: the state differs, and the partition had
	// records past retention.ms restored under --retention accept-loss,
	// which the broker may have deleted already: the loss the plan warned of.
	StateDigestLossAccepted = "loss accepted"
)

// RestoreJournal records which topics a restore of one backup into one
// target cluster created, so that running the same restore again resumes
// it instead of refusing the now non-empty topics it wrote. It is stored as
// restores/journals/<backup-id>/<target-cluster-id>.json
// (RestoreJournalKey), written again after each topic the restore creates
// and when it completes.
type RestoreJournal struct {
	BackupID        string            `json:"backup_id"`
	TargetClusterID string            `json:"target_cluster_id"`
	Strategy        Strategy          `json:"strategy"`
	ToTime          *time.Time        `json:"to_time,omitempty"`
	Topics          map[string]string `json:"topics"` // topic -> topic id created by this restore
	// Filled maps each topic that existed empty on the target and that
	// this restore wrote into (TopicAction "fill") to its topic id,
	// recorded before its first record: a run killed after writing some
	// resumes it like a topic it created.
	Filled map[string]string `json:"filled,omitempty"`
	// FilledConfigs holds, for each filled topic whose plan alters configs
	// before its records (TopicPlan.PreConfigs: message.timestamp.type,
	// retention.ms), those configs as the target described them before the
	// restore altered them (Value nil: null or sensitive), recorded with
	// Filled, before the alteration. A re-run plans the resumed fill from
	// them, not from the altered topic: a run killed between the
	// pre-configs and the final configs still ends with the final ones.
	FilledConfigs map[string]map[string]TopicConfig `json:"filled_configs,omitempty"`
	// RestoreID is the restore id of the run that began this restore
	// (written with the journal's first save): a run that resumes it
	// keeps it, so the restore's report has one key whichever run writes
	// it. Empty in journals written before it was recorded.
	RestoreID string `json:"restore_id,omitempty"`
	// Complete is set once the records are in and the offsets committed;
	// Committed holds those offsets ("topic/partition" -> offset).
	Complete  bool             `json:"complete,omitempty"`
	Committed map[string]int64 `json:"committed,omitempty"`
	UpdatedAt time.Time        `json:"updated_at"`
}
