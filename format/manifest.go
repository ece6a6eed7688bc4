package format

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
)

// FormatName is the value of Manifest.Format.
const FormatName = "kafkastreams-dr/backup"

// Manifest states.
const (
	StateRunning  = "running"  // progress.json of a run that has not finished
	StateComplete = "complete" // manifest.json: the backup is whole
)

// Manifest describes one backup completely: a restore needs this object and
// the segments it names, nothing else. Incremental backups name the earlier
// backups' segments they still need, so every manifest stands alone.
// JSON field names are the contract (docs/FORMAT.md).
type Manifest struct {
	Format          string     `json:"format"`
	FormatVersion   int        `json:"format_version"`
	State           string     `json:"state"`
	BackupID        string     `json:"backup_id"`
	ParentBackupID  string     `json:"parent_backup_id,omitempty"`
	SourceClusterID string     `json:"source_cluster_id,omitempty"` // the configured name (backup.source_cluster_id)
	KafkaClusterID  string     `json:"kafka_cluster_id,omitempty"`  // the cluster id the brokers report
	ApplicationID   string     `json:"application_id,omitempty"`
	ToolVersion     string     `json:"tool_version,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	CutAt           time.Time  `json:"cut_at"` // when the end offsets were captured (after the group offsets)
	FinishedAt      time.Time  `json:"finished_at,omitzero"`
	Selection       *Selection `json:"selection,omitempty"`
	Group           *Group     `json:"group,omitempty"`
	Cut             *Cut       `json:"cut,omitempty"` // how the cut was proven; absent before format Changes "cut"
	Topics          []Topic    `json:"topics"`
	// InFlight are the tails of the application's repartition and
	// foreign-key subscription topics (topicfilter.Repartition): records
	// committed into them before the cut that the downstream task had not
	// consumed (docs/DOMAIN.md#in-flight). Each Topic has class
	// "repartition"; each Partition covers [start_offset, end_offset): from
	// the group's committed offset (the log start when the group never
	// committed the partition, or committed below the log start) to the
	// high watermark at the cut, holding the records of the transactions
	// committed at the cut (not those still open). Tails are never chained: every backup
	// captures its own, and their segments are this backup's. Absent in
	// manifests written before tails were captured (docs/FORMAT.md).
	InFlight []Topic  `json:"in_flight,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// ShardRun is set on a backup taken by several processes (backup
	// --shard I/N): the run they share and which partitions each copies.
	// Absent on a backup of one process.
	ShardRun *ShardRun `json:"shard_run,omitempty"`
	// Encryption is set when the backup's own objects (this manifest, its
	// progress.json and the segments it wrote) are encrypted
	// (docs/FORMAT.md, "Encryption"); absent when they are plaintext.
	// The segments of earlier backups it names carry their own
	// Segment.KeyID: KeyIDs lists every key a restore needs.
	Encryption *Encryption `json:"encryption,omitempty"`
}

// ShardRun is one backup split across Shards processes (docs/FORMAT.md,
// "Sharded backups"): shard 0 takes the cut and the assignment and writes
// them into the progress manifest, each shard copies its partitions with a
// progress of its own (ShardProgressKey), and the manifest is written once
// every shard's progress is done.
type ShardRun struct {
	// Run is the identifier the shards of one run share (--shard-run; the
	// Kubernetes Job's controller uid).
	Run string `json:"run"`
	// Shards is N, the number of shards; at least 1.
	Shards int `json:"shards"`
	// Assignment lists, per shard 0..Shards-1, the partitions it copies:
	// disjoint, covering every partition of topics and in_flight.
	Assignment []ShardAssignment `json:"assignment"`
	// Done is set in a shard's progress (ShardProgressKey) once the shard
	// has copied every partition of its assignment; never in progress.json.
	Done bool `json:"done,omitempty"`
}

// ShardAssignment is the partitions of one shard and their load: the
// offsets between each partition's first offset to copy and its end at the
// cut (records, aborted and control records included).
type ShardAssignment struct {
	Shard      int               `json:"shard"`
	Offsets    int64             `json:"offsets"`
	Partitions []ShardPartitions `json:"partitions"`
}

// ShardPartitions names partitions of one topic (or in-flight tail).
type ShardPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// Owns reports whether shard copies partition p of topic in r's
// assignment.
func (r *ShardRun) Owns(shard int, topic string, p int32) bool {
	if shard < 0 || shard >= len(r.Assignment) {
		return false
	}
	for _, tp := range r.Assignment[shard].Partitions {
		if tp.Topic == topic && slices.Contains(tp.Partitions, p) {
			return true
		}
	}
	return false
}

// MergeShards returns the manifest of sharded run cut (the progress
// manifest shard 0 wrote: the cut and cut.ShardRun's assignment) with each
// partition of topics and in_flight taken from the progress of the shard
// that owns it: parts[i] is shard i's progress (ShardProgressKey), nil for
// a shard that has none yet (its partitions stay as the cut has them). The
// warnings are the cut's and every shard's, each once, in shard order;
// finished_at is the latest. State and ShardRun (Done cleared) are the
// cut's; neither cut nor parts is changed. The backup's commit step writes
// it as the manifest, list sums a running run's progress with it.
func MergeShards(cut *Manifest, parts []*Manifest) *Manifest {
	m := *cut
	run := *cut.ShardRun
	run.Done = false
	m.ShardRun = &run
	m.Topics, m.InFlight = slices.Clone(cut.Topics), slices.Clone(cut.InFlight)
	for _, ts := range [][]Topic{m.Topics, m.InFlight} {
		for ti := range ts {
			t := &ts[ti]
			t.PartitionCuts = slices.Clone(t.PartitionCuts)
			for pi := range t.PartitionCuts {
				p := &t.PartitionCuts[pi]
				for i, part := range parts {
					if part == nil || !run.Owns(i, t.Name, p.Partition) {
						continue
					}
					if q := part.partition(t.Name, p.Partition); q != nil {
						*p = *q
					}
				}
			}
		}
	}
	m.Warnings = slices.Clone(cut.Warnings)
	for _, part := range parts {
		if part == nil {
			continue
		}
		for _, w := range part.Warnings {
			if !slices.Contains(m.Warnings, w) {
				m.Warnings = append(m.Warnings, w)
			}
		}
		if part.FinishedAt.After(m.FinishedAt) {
			m.FinishedAt = part.FinishedAt
		}
	}
	return &m
}

// partition finds partition p of topic (in topics or in_flight) in m, or
// nil.
func (m *Manifest) partition(topic string, p int32) *Partition {
	for _, ts := range [][]Topic{m.Topics, m.InFlight} {
		for ti := range ts {
			if ts[ti].Name != topic {
				continue
			}
			for i := range ts[ti].PartitionCuts {
				if ts[ti].PartitionCuts[i].Partition == p {
					return &ts[ti].PartitionCuts[i]
				}
			}
			return nil
		}
	}
	return nil
}

// InFlightRecords is the number of records m's in-flight tails hold
// (Partition.Records summed over InFlight); 0 when it has none.
func (m *Manifest) InFlightRecords() int64 {
	var n int64
	for _, t := range m.InFlight {
		for _, p := range t.PartitionCuts {
			n += p.Records
		}
	}
	return n
}

// Selection is the configuration that chose the backup's topics. A run
// resumes an interrupted backup only when its own selection is equal.
type Selection struct {
	Include               []string `json:"include"`
	Exclude               []string `json:"exclude"`
	SourceChangelogTopics []string `json:"source_changelog_topics,omitempty"`
	AllowMissing          bool     `json:"allow_missing,omitempty"`
	// DeadLetterQueueTopics and AllowTopologyMismatch are the config's
	// dead_letter_queue_topics and source.topics.allow_topology_mismatch.
	DeadLetterQueueTopics []string `json:"dead_letter_queue_topics,omitempty"`
	AllowTopologyMismatch bool     `json:"allow_topology_mismatch,omitempty"`
	// TopologyFrom says where the topology that classified the topics
	// came from (a topology file, a streams group); TopologySHA256 is the
	// hex sha256 of the text it was read from. Both empty when the topics
	// were classified by name.
	TopologyFrom   string `json:"topology_from,omitempty"`
	TopologySHA256 string `json:"topology_sha256,omitempty"`
	// SchemaRegistryTopic is the config's schema_registry.topic: the
	// Schema Registry storage topic backed up with the app ("" for none).
	SchemaRegistryTopic string `json:"schema_registry_topic,omitempty"`
}

// Equal reports whether two selections choose topics alike.
func (s *Selection) Equal(o *Selection) bool {
	if s == nil || o == nil {
		return s == o
	}
	eq := func(a, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	return eq(s.Include, o.Include) && eq(s.Exclude, o.Exclude) &&
		eq(s.SourceChangelogTopics, o.SourceChangelogTopics) && s.AllowMissing == o.AllowMissing &&
		eq(s.DeadLetterQueueTopics, o.DeadLetterQueueTopics) && s.AllowTopologyMismatch == o.AllowTopologyMismatch &&
		s.TopologyFrom == o.TopologyFrom && s.TopologySHA256 == o.TopologySHA256 &&
		s.SchemaRegistryTopic == o.SchemaRegistryTopic
}

// Differences names what differs between s and o, each as
// `<config key> <s's value> vs <o's value>` with the config's key
// (source.topics.include, source.topics.exclude, source_changelog_topics,
// source.topics.allow_missing, dead_letter_queue_topics,
// source.topics.allow_topology_mismatch, the topology, schema_registry.topic);
// empty when Equal. A nil selection is taken as one with nothing set.
func (s *Selection) Differences(o *Selection) []string {
	a, b := cmp.Or(s, &Selection{}), cmp.Or(o, &Selection{})
	var out []string
	list := func(key string, x, y []string) {
		if !slices.Equal(x, y) {
			out = append(out, fmt.Sprintf("%s %q vs %q", key, x, y))
		}
	}
	flag := func(key string, x, y bool) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %t vs %t", key, x, y))
		}
	}
	word := func(key, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s vs %s", key, cmp.Or(x, "(none)"), cmp.Or(y, "(none)")))
		}
	}
	list("source.topics.include", a.Include, b.Include)
	list("source.topics.exclude", a.Exclude, b.Exclude)
	list("source_changelog_topics", a.SourceChangelogTopics, b.SourceChangelogTopics)
	flag("source.topics.allow_missing", a.AllowMissing, b.AllowMissing)
	list("dead_letter_queue_topics", a.DeadLetterQueueTopics, b.DeadLetterQueueTopics)
	flag("source.topics.allow_topology_mismatch", a.AllowTopologyMismatch, b.AllowTopologyMismatch)
	topology := func(x *Selection) string {
		if x.TopologySHA256 == "" {
			return x.TopologyFrom
		}
		return fmt.Sprintf("%s (sha256 %.12s)", x.TopologyFrom, x.TopologySHA256)
	}
	word("topology", topology(a), topology(b))
	word("schema_registry.topic", a.SchemaRegistryTopic, b.SchemaRegistryTopic)
	return out
}

// Cut records how the backup's cut (the group's committed offsets and every
// partition's last stable offset) was taken and whether it was proven to
// hold each committed transaction of the application wholly or not at all
// (docs/DESIGN.md invariant 1). A resumed run keeps the cut of its first run.
type Cut struct {
	// Method is how the cut was taken: CutMethodOffsetsEndsOffsets (group
	// offsets, settle, ends, settle, group offsets again) or CutMethodEnds
	// (no application.id: ends only).
	Method string `json:"method"`
	// Proven is true when the last attempt proved the cut consistent.
	Proven bool `json:"proven"`
	// Attempts is how many times the protocol ran (at least 1).
	Attempts int `json:"attempts"`
	// TransactionsWaited counts the transactions, over all attempts, that
	// were in PrepareCommit when listed and were waited for until their
	// commit markers were written.
	TransactionsWaited int `json:"transactions_waited"`
	// DurationMillis is how long taking the cut took, in milliseconds.
	DurationMillis int64 `json:"duration_ms"`
	// Reason says why the cut is not proven; "" when Proven.
	Reason string `json:"reason,omitempty"`
}

// Cut methods (Cut.Method).
const (
	CutMethodOffsetsEndsOffsets = "offsets-ends-offsets"
	CutMethodEnds               = "ends"
)

// Group is the application.id consumer group as read at the start of the run,
// before any end offset was captured (docs/DOMAIN.md#consistent-cut).
type Group struct {
	GroupID  string        `json:"group_id"`
	State    string        `json:"state,omitempty"`    // e.g. Empty, Stable, Dead; "" when the group does not exist
	Type     string        `json:"type,omitempty"`     // classic, consumer or streams (KIP-848 / KIP-1071), when the broker says
	Protocol string        `json:"protocol,omitempty"` // protocol type, "consumer" for Kafka Streams on the classic protocol
	ReadAt   time.Time     `json:"read_at"`
	Offsets  []GroupOffset `json:"offsets"`
	// Configs are the group's GROUP-resource configs (DescribeConfigs
	// with resource type GROUP, KIP-848 / KIP-1071; Kafka's GroupConfig:
	// e.g. streams.num.standby.replicas, streams.session.timeout.ms)
	// whose source is DYNAMIC_GROUP_CONFIG (set on this group), keyed by
	// name, in the shape of Topic.Configs. A restore sets them on the
	// target's group before it commits the offsets. Empty when none is
	// set; absent in manifests written before they were recorded, and
	// when the source broker could not describe them (a warning says so).
	Configs map[string]TopicConfig `json:"configs,omitempty"`
}

// ConfigSourceDynamicGroup is the source of a config set on a group
// (Group.Configs): Kafka's DescribeConfigsResponse.ConfigSource
// DYNAMIC_GROUP_CONFIG (8; franz-go's kmsg.ConfigSourceGroupConfig).
const ConfigSourceDynamicGroup = "DYNAMIC_GROUP_CONFIG"

// Group types as ListGroups reports them (Group.Type; KIP-848, KIP-932,
// KIP-1071).
const (
	GroupTypeClassic  = "classic"
	GroupTypeConsumer = "consumer"
	GroupTypeStreams  = "streams"
	GroupTypeShare    = "share"
)

// GroupOffset is one committed offset of the group.
type GroupOffset struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"` // -1 when unknown
	Metadata    string `json:"metadata,omitempty"`
	Class       string `json:"class,omitempty"` // classification of the topic; repartition offsets cannot be restored
	// EndOffset is, for a repartition topic, the end of its in-flight
	// tail: the high watermark captured with the cut (also in manifests
	// written before Manifest.InFlight, where
	// EndOffset - Offset estimates the records in flight that the backup
	// does not hold). 0 for other topics.
	EndOffset int64 `json:"end_offset,omitempty"`
}

// TopicConfig is one topic configuration entry from DescribeConfigs.
type TopicConfig struct {
	Value     *string `json:"value"` // nil when sensitive or null
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// Topic is one backed-up topic.
type Topic struct {
	Name            string `json:"name"`
	TopicID         string `json:"topic_id,omitempty"` // the broker's topic id (base64 or hex UUID as the broker reports it)
	Class           string `json:"class"`              // changelog or external; repartition only in Manifest.InFlight
	SourceChangelog bool   `json:"source_changelog,omitempty"`
	// Role is the topic's role in the application's topology (input,
	// output, changelog, source-changelog, dead-letter, global-input;
	// repartition in InFlight), when one was known
	// (topicfilter.Decision.Role); "" when classified by name.
	Role string `json:"role,omitempty"`
	// SchemaRegistry marks the Schema Registry's storage topic
	// (schema_registry.topic): class external, at most one per manifest,
	// never in in_flight; a restore writes it before every other topic.
	SchemaRegistry    bool                   `json:"schema_registry,omitempty"`
	Partitions        int                    `json:"partitions"`
	ReplicationFactor int                    `json:"replication_factor"`
	Configs           map[string]TopicConfig `json:"configs"`
	PartitionCuts     []Partition            `json:"partition_cuts"`
}

// Partition is the cut of one partition: what the backup chain holds of it.
type Partition struct {
	Partition      int32     `json:"partition"`
	LogStartOffset int64     `json:"log_start_offset"` // at this run's cut
	HighWatermark  int64     `json:"high_watermark"`   // at this run's cut
	StartOffset    int64     `json:"start_offset"`     // first offset the chain covers (log start when the chain began)
	EndOffset      int64     `json:"end_offset"`       // last stable offset at the cut: the chain covers [start_offset, end_offset)
	Records        int64     `json:"records"`          // records held for [start_offset, end_offset); not end-start (holes, markers, aborted records)
	Gaps           []Gap     `json:"gaps,omitempty"`
	Segments       []Segment `json:"segments"`

	// StateDigest is, for a changelog partition (class changelog, or a
	// source-topic changelog), the digest of the state its records in
	// [StartOffset, EndOffset) encode (docs/FORMAT.md, "State digest"):
	// what the chain holds, gaps and an unread range left out. Written in
	// manifest.json only, never in progress.json; nil for other topics and
	// in manifests written before it existed.
	StateDigest *StateDigest `json:"state_digest,omitempty"`

	// Unread, when set, is the range [EndOffset, Unread.To) below the last
	// stable offset at the cut that this run could not read: the broker
	// kept answering fetches there with no records and no progress until
	// the run's retry budget ran out. EndOffset is where the chain stops,
	// so the next backup reads the range; it is not a Gap.
	Unread *Gap `json:"unread,omitempty"`
}

// StateDigest is the digest of one changelog partition's state
// (statedigest.StateDigest: its algorithm and its type live together in
// that leaf package).
type StateDigest = statedigest.StateDigest

// UnreadRange names p's unread range as the backup's own warning does,
// e.g. `topic "orders" partition 3 offsets 1200..1499`; "" when p has
// none.
func UnreadRange(topic string, p *Partition) string {
	if p.Unread == nil {
		return ""
	}
	return fmt.Sprintf("topic %q partition %d offsets %d..%d", topic, p.Partition, p.Unread.From, p.Unread.To-1)
}

// Gap is an offset range [From, To) inside [start_offset, end_offset) whose
// records the chain does not hold because the broker deleted them (retention,
// DeleteRecords) before a backup read them.
type Gap struct {
	From     int64  `json:"from"`
	To       int64  `json:"to"`
	BackupID string `json:"backup_id"` // the run that found the gap
	Reason   string `json:"reason"`
}

// Segment is one segment object.
type Segment struct {
	Key            string `json:"key"`       // object key relative to the repository prefix
	BackupID       string `json:"backup_id"` // the run that wrote it
	Size           int64  `json:"size"`      // stored (compressed) bytes
	SHA256         string `json:"sha256"`    // hex SHA-256 of the stored bytes
	RawSize        int64  `json:"raw_size"`  // uncompressed stream bytes
	Records        int64  `json:"records"`
	FirstOffset    int64  `json:"first_offset"`
	LastOffset     int64  `json:"last_offset"`
	MinTimestamp   int64  `json:"min_timestamp"`
	MaxTimestamp   int64  `json:"max_timestamp"`
	MaxRecordBytes int64  `json:"max_record_bytes"`
	NullKeys       int64  `json:"null_keys"`
	// Kind is the segment's encoding: absent (or KindRecord) for a record
	// segment, KindBatch for a batch segment (docs/FORMAT.md, "Batch
	// segments"). A manifest naming a batch segment has format_version 2.
	Kind string `json:"kind,omitempty"`
	// KeyID is the id (storage.KeyID, 16 hex digits) of the key the
	// segment object is encrypted with (docs/FORMAT.md, "Encryption");
	// absent for a plaintext segment. Size and SHA256 are of the
	// plaintext object, the bytes the envelope holds.
	KeyID string `json:"key_id,omitempty"`
}

// Encryption is a manifest's "encryption": how the backup's own objects
// are encrypted.
type Encryption struct {
	// Algorithm is EncryptionAlgorithm.
	Algorithm string `json:"algorithm"`
	// KeyID is the id of the key that encrypted the backup's own objects.
	KeyID string `json:"key_id"`
}

// EncryptionAlgorithm names the envelope of docs/FORMAT.md ("Encryption"),
// version 1: AES-256-GCM over 64 KiB chunks, per-object keys from
// HKDF-SHA-256.
const EncryptionAlgorithm = "aes-256-gcm-hkdf-sha256-stream64k-v1"

// KeyIDs returns the ids of every key a restore of m needs, sorted: the
// key of m's own objects and those of every segment it names (its own and
// its ancestors'); empty when nothing m names is encrypted.
func (m *Manifest) KeyIDs() []string {
	var ids []string
	if m.Encryption != nil && m.Encryption.KeyID != "" {
		ids = append(ids, m.Encryption.KeyID)
	}
	for _, t := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range t.PartitionCuts {
			for _, s := range p.Segments {
				if s.KeyID != "" {
					ids = append(ids, s.KeyID)
				}
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// hasBatchSegments reports whether m names a segment of kind batch (its
// own or an earlier backup's it still needs).
func (m *Manifest) hasBatchSegments() bool {
	for _, t := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range t.PartitionCuts {
			for _, s := range p.Segments {
				if s.Kind == KindBatch {
					return true
				}
			}
		}
	}
	return false
}

var backupIDRe = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// backupIDTime is the layout of a backup id's time part (UTC, milliseconds).
const backupIDTime = "20060102T150405.000Z"

// ValidBackupID reports whether s has the form of a backup id: UTC time
// with milliseconds "20060102T150405.000Z", a dash and 8 hex digits.
func ValidBackupID(s string) bool { return backupIDRe.MatchString(s) }

// NewBackupID makes a backup id from t (truncated to milliseconds) and 4
// random bytes. Ids of a repository sort in the order their backups
// started: the writer, holding the repository lock, picks a t later than
// every existing id's (NextBackupID).
func NewBackupID(t time.Time, rnd [4]byte) string {
	return fmt.Sprintf("%s-%x", t.UTC().Format(backupIDTime), rnd[:])
}

// BackupIDTime returns the time encoded in a valid backup id.
func BackupIDTime(id string) (time.Time, error) {
	if !ValidBackupID(id) {
		return time.Time{}, fmt.Errorf("invalid backup id %q", id)
	}
	return time.Parse(backupIDTime, id[:len(backupIDTime)])
}

// NextBackupID returns a new backup id for a run starting at now that sorts
// after latest (the greatest existing id, or ""): its time is now, or one
// millisecond after latest's when the clock has not passed it.
func NextBackupID(now time.Time, latest string, rnd [4]byte) string {
	if lt, err := BackupIDTime(latest); err == nil && !now.Truncate(time.Millisecond).After(lt) {
		now = lt.Add(time.Millisecond)
	}
	return NewBackupID(now, rnd)
}

// Marshal encodes m as indented JSON with a trailing newline. Topics and
// partitions are sorted so equal manifests encode to equal bytes.
func (m *Manifest) Marshal() ([]byte, error) {
	m.prepare()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalCompact encodes m as Marshal does (sorted, a trailing newline)
// but without indentation: one line. The backup writes progress manifests
// with it, often and for many partitions, where indenting cost most of
// the encoding (issue 13); readers decode both forms alike.
func (m *Manifest) MarshalCompact() ([]byte, error) {
	m.prepare()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// prepare readies m for either encoding: sorted, and format_version 2
// (VersionBatch) once it names a batch segment, so that a reader of
// version 1 refuses it as newer and Validate accepts its batch segments
// (a progress manifest as much as the final one).
func (m *Manifest) prepare() {
	m.sort()
	if m.FormatVersion < VersionBatch && m.hasBatchSegments() {
		m.FormatVersion = VersionBatch
	}
}

func (m *Manifest) sort() {
	for _, ts := range [][]Topic{m.Topics, m.InFlight} {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		for i := range ts {
			p := ts[i].PartitionCuts
			sort.Slice(p, func(a, b int) bool { return p[a].Partition < p[b].Partition })
		}
	}
	if m.Group != nil {
		o := m.Group.Offsets
		sort.Slice(o, func(a, b int) bool {
			if o[a].Topic != o[b].Topic {
				return o[a].Topic < o[b].Topic
			}
			return o[a].Partition < o[b].Partition
		})
	}
}

// ReadManifest decodes and validates a manifest. Unknown fields are accepted
// (a newer writer may add fields within a format version); a newer
// format_version is refused.
func ReadManifest(r io.Reader) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", JSONError(err))
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the manifest's internal consistency: format, version, ids;
// group.type empty, classic, consumer, streams or share;
// every topic named once across topics and in_flight, in_flight topics of
// class repartition and no other; at most one schema_registry topic, of
// class external, not in in_flight; every partition listed once, inside the
// topic's partition count, with 0 <= start_offset <= end_offset; and that
// segments are ordered, inside [start_offset, end_offset), and that their
// record counts add up.
func (m *Manifest) Validate() error {
	if m.Format != FormatName {
		return fmt.Errorf("manifest: format %q is not %q", m.Format, FormatName)
	}
	if m.FormatVersion < 1 || m.FormatVersion > VersionBatch {
		return fmt.Errorf("manifest: format_version %d is not supported by this version (reads 1..%d): upgrade kafkastreams-dr", m.FormatVersion, VersionBatch)
	}
	if !ValidBackupID(m.BackupID) {
		return fmt.Errorf("manifest: invalid backup_id %q", m.BackupID)
	}
	if m.State != StateComplete && m.State != StateRunning {
		return fmt.Errorf("manifest %s: invalid state %q", m.BackupID, m.State)
	}
	if g := m.Group; g != nil {
		switch g.Type {
		case "", GroupTypeClassic, GroupTypeConsumer, GroupTypeStreams, GroupTypeShare:
		default:
			return fmt.Errorf("manifest %s: group.type %q is not classic, consumer, streams or share (ListGroups' group types, KIP-848, KIP-932, KIP-1071; empty when unknown)", m.BackupID, g.Type)
		}
	}
	names := map[string]bool{}
	registry := ""
	for i, t := range slices.Concat(m.Topics, m.InFlight) {
		inFlight := i >= len(m.Topics)
		if names[t.Name] {
			return fmt.Errorf("manifest %s: topic %q is listed twice (in topics or in_flight)", m.BackupID, t.Name)
		}
		names[t.Name] = true
		if t.SchemaRegistry {
			switch {
			case registry != "":
				return fmt.Errorf("manifest %s: topics %q and %q are both marked schema_registry: a backup holds one registry's storage topic", m.BackupID, registry, t.Name)
			case inFlight || t.Class != "external":
				return fmt.Errorf("manifest %s: schema_registry topic %q has class %q, not external", m.BackupID, t.Name, t.Class)
			}
			registry = t.Name
		}
		if inFlight != (t.Class == "repartition") {
			if inFlight {
				return fmt.Errorf("manifest %s: in-flight topic %q has class %q, not repartition", m.BackupID, t.Name, t.Class)
			}
			return fmt.Errorf("manifest %s: topic %q has class repartition: repartition topics are only in in_flight", m.BackupID, t.Name)
		}
		parts := map[int32]bool{}
		for _, p := range t.PartitionCuts {
			if parts[p.Partition] || p.Partition < 0 || (t.Partitions > 0 && int(p.Partition) >= t.Partitions) {
				return fmt.Errorf("manifest %s: topic %q: partition %d is listed twice or outside its %d partitions", m.BackupID, t.Name, p.Partition, t.Partitions)
			}
			parts[p.Partition] = true
			if p.StartOffset < 0 || p.StartOffset > p.EndOffset {
				return fmt.Errorf("manifest %s: topic %q partition %d: start_offset %d is not in 0..end_offset %d", m.BackupID, t.Name, p.Partition, p.StartOffset, p.EndOffset)
			}
			var n int64
			prev := p.StartOffset - 1
			for _, s := range p.Segments {
				switch {
				case s.Kind != "" && s.Kind != KindRecord && s.Kind != KindBatch:
					return fmt.Errorf("manifest %s: topic %q partition %d: segment %s has kind %q, not record or batch: upgrade kafkastreams-dr",
						m.BackupID, t.Name, p.Partition, s.Key, s.Kind)
				case s.Kind == KindBatch && m.FormatVersion < VersionBatch:
					return fmt.Errorf("manifest %s: topic %q partition %d: segment %s has kind batch in a manifest of format_version %d (batch segments need %d)",
						m.BackupID, t.Name, p.Partition, s.Key, m.FormatVersion, VersionBatch)
				}
				if s.FirstOffset <= prev || s.LastOffset < s.FirstOffset || s.Records < 1 || s.Records > s.LastOffset-s.FirstOffset+1 {
					return fmt.Errorf("manifest %s: topic %q partition %d: segment %s has offsets %d..%d (%d records) after %d",
						m.BackupID, t.Name, p.Partition, s.Key, s.FirstOffset, s.LastOffset, s.Records, prev)
				}
				if m.State == StateComplete && s.LastOffset >= p.EndOffset {
					return fmt.Errorf("manifest %s: topic %q partition %d: segment %s ends at %d, past end_offset %d",
						m.BackupID, t.Name, p.Partition, s.Key, s.LastOffset, p.EndOffset)
				}
				prev = s.LastOffset
				n += s.Records
			}
			if n != p.Records {
				return fmt.Errorf("manifest %s: topic %q partition %d: records %d but segments hold %d",
					m.BackupID, t.Name, p.Partition, p.Records, n)
			}
		}
	}
	return nil
}

// JSONError rewords a JSON type error of a stored object for the user: the
// field's path and the JSON type found against the one the format wants
// (`field "cut.proven" holds a string, where the format wants a bool`),
// instead of encoding/json's Go struct and type names; a syntax error as
// "it is not valid JSON at byte N (<decoder's text>)", and an object cut
// short as "it ends early: its JSON is cut short (truncated?)". Other
// errors are returned as they are. The returned error wraps err.
func JSONError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if se.Error() == "unexpected end of JSON input" {
			return &jsonTypeError{msg: "it ends early: its JSON is cut short (truncated?)", err: err}
		}
		return &jsonTypeError{msg: fmt.Sprintf("it is not valid JSON at byte %d (%v)", se.Offset, se), err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &jsonTypeError{msg: "it ends early: its JSON is cut short (truncated?)", err: err}
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	want := te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		want = "number"
	case reflect.Slice, reflect.Array:
		want = "array"
	case reflect.Struct, reflect.Map:
		want = "object"
	}
	return &jsonTypeError{msg: fmt.Sprintf("field %q holds a %s, where the format wants a %s (at byte %d)", te.Field, te.Value, want, te.Offset), err: err}
}

type jsonTypeError struct {
	msg string
	err error
}

func (e *jsonTypeError) Error() string { return e.msg }
func (e *jsonTypeError) Unwrap() error { return e.err }
