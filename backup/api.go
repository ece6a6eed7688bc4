// Package backup copies the selected topics of one Kafka Streams application
// into a backup repository (see docs/FORMAT.md): the committed offsets of
// the application.id group first, then each partition's records up to the
// end captured after them, as zstd-compressed segments, and a manifest last.
package backup

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Options configures one backup run.
type Options struct {
	// Source are the franz-go options that connect to the source cluster
	// (seed brokers, TLS, SASL). Run adds its own consumer options.
	Source []kgo.Opt
	// Store is the repository's storage backend. Run writes nothing to it
	// (not even its lock) before the selection is accepted: a backup
	// refused for its topics leaves the repository as it was.
	Store storage.Backend
	// OpenStore, when Store is nil, opens the storage backend; Run calls
	// it once, after the selection is accepted (SelectTopics found topics
	// to back up), so that a refused backup creates nothing (opening a
	// directory backend creates the directory). Its error is returned as
	// a PhaseRepository error.
	OpenStore func(context.Context) (storage.Backend, error)
	// KeyID is the id of the key the store encrypts the objects it is
	// given with (storage.Encrypt with a keyring whose primary is KeyID:
	// storage.Keyring.Primary), recorded in the manifest (its
	// "encryption" and every segment this run writes); "" when the store
	// writes plaintext. Run does not check it against the store: the
	// command opens both from one config.
	KeyID string

	// topologyResolved is set by Run once it has resolved Topology
	// (appTopology): SelectTopics then takes Topology as it is, nil too,
	// and does not describe the group again.
	topologyResolved bool

	ApplicationID         string   // the Kafka Streams application.id; may be empty (then no group offsets are read)
	SourceChangelogTopics []string // input topics a store reuses as its changelog
	Include, Exclude      []string // topic filters (topicfilter syntax)
	AllowMissingTopics    bool     // a literal include that does not exist is a warning, not an error

	// SchemaRegistryTopic is the Schema Registry's storage topic
	// (config: schema_registry.topic; "" for none): copied with the
	// selected topics whatever Include and Exclude say, marked
	// schema_registry in the manifest (docs/FORMAT.md), so that a restore
	// writes it first. It must exist, unless AllowMissingTopics.
	SchemaRegistryTopic string

	// InternalPrefixes are the prefixes of the application's internal
	// topics (topicfilter.Classifier.InternalPrefixes); nil: ApplicationID.
	InternalPrefixes []string
	// OtherApplicationIDs are other Streams applications whose internal
	// topics are never selected (KAFKA-14922), in addition to the consumer
	// groups found on the cluster (an application without a group is
	// found only here).
	OtherApplicationIDs []string

	// Topology is the application's topology when one is known (a
	// --topology file, topology_file, or the broker's streams group);
	// nil: topics are classified by name (topicfilter.Classifier.Topology).
	// With a topology an empty Include selects the topology's topics.
	Topology *topicfilter.AppTopology
	// DeadLetterTopics are the application's dead-letter queue topics
	// (KIP-1034; config dead_letter_queue_topics).
	DeadLetterTopics []string
	// AllowTopologyMismatch: a topology topic the patterns do not select
	// is a warning, not a refusal (source.topics.allow_topology_mismatch).
	AllowTopologyMismatch bool
	// IncludeKey and ExcludeKey name the include and exclude lists in a
	// topology mismatch's fixes (topicfilter.PlanOptions), e.g.
	// "source.topics.include (line 12 of backup.yaml)".
	IncludeKey, ExcludeKey string

	// LockWait is how long a run waits for the repository lock while
	// another run holds it (until it is released, or goes stale 2 minutes
	// after its holder's last heartbeat); 0 refuses at once with ErrLocked.
	LockWait time.Duration

	// Full starts a new backup chain: every partition is copied from its
	// log start and the manifest names no earlier backup's segment (after
	// a damaged segment, or to bound how long a chain grows).
	Full bool

	SourceClusterID   string // free-form name of the source cluster, recorded in the manifest
	SegmentMaxBytes   int64  // uncompressed bytes per segment before it is closed; default 64 MiB
	SegmentMaxRecords int64  // records per segment before it is closed; 0: no limit
	// SegmentKind is how segments store records (the config's
	// backup.segment_kind): format.KindRecord ("" too, the default)
	// re-encodes every record into zstd segments; format.KindBatch stores
	// the broker's record batches as fetched, compressed by their producers
	// (docs/FORMAT.md, "Batch segments"; in-flight tails and old message
	// sets stay record segments). Any other value fails the run.
	SegmentKind string
	Concurrency int // partitions copied at once; default 4
	// CompressionLevel is the zstd level of the segments (config key
	// backup.compression_level): "" or format.CompressionDefault (about
	// zstd -3), CompressionFastest, CompressionBetter or CompressionBest.
	// Run refuses another value before it writes anything. A resumed run
	// may use another level than its first run: readers need none.
	CompressionLevel format.CompressionLevel

	// ToolVersion is the version of the program that runs the backup,
	// recorded as the manifest's tool_version (docs/FORMAT.md) of a new
	// backup (a resumed one keeps the version its first run recorded);
	// "" records DefaultToolVersion ("dev"). The command passes its
	// build-time version (-ldflags "-X main.version=...").
	ToolVersion string

	// RetryTimeout bounds how long one partition may go without progress
	// (retriable fetch errors such as NOT_LEADER_OR_FOLLOWER or a broker
	// that does not answer, and fetches answered with no records below the
	// captured end) before the run gives up on it; default
	// DefaultRetryTimeout (2 minutes, longer than a KRaft broker's
	// restart). Errors then fail the run; empty answers end the partition
	// where reading stopped (Result.Unread).
	RetryTimeout time.Duration

	// CutAttempts is how many times the run tries to prove its cut
	// consistent with the application's transactions (group offsets,
	// settle, ends, settle, group offsets again; docs/DESIGN.md invariant
	// 1) before it keeps the last attempt's cut unproven; default
	// DefaultCutAttempts (100). The config's backup.cut_attempts.
	CutAttempts int
	// CutTimeout bounds the time all the attempts take together, waits for
	// transactions in PrepareCommit included; default DefaultCutTimeout
	// (30s). The config's backup.cut_timeout.
	CutTimeout time.Duration

	// Shard, when set, makes this process one shard of a backup split
	// across several (backup --shard I/N; docs/DESIGN.md "Sharded
	// backup"); nil: the whole backup.
	Shard *Shard

	Logger   *slog.Logger // nil: discard
	Observer Observer     // nil: none
}

// DefaultShardWait is Shard.Wait's default: how long shards 1..N-1 wait
// for shard 0's cut.
const DefaultShardWait = 10 * time.Minute

// Shard is one process of a sharded backup: shard Index of Count
// (0 <= Index < Count), of the run named Run. Shard 0 takes the cut and
// assigns the partitions; the others wait for it, up to Wait
// (DefaultShardWait when 0), then each copies its own partitions. The
// backup is complete once every shard has finished; the shard that finds
// every other shard done writes its manifest.
type Shard struct {
	Index, Count int
	Run          string
	Wait         time.Duration
}

// ErrShardMismatch is wrapped when the shards of one run disagree: on N,
// or on the configuration that selects the topics (Manifest.Selection).
// Nothing was written. Test with errors.Is.
var ErrShardMismatch = errors.New("the shards of one run disagree")

// ErrShardCutMissing is wrapped when shard 0's cut did not appear within
// Shard.Wait. Nothing was written.
var ErrShardCutMissing = errors.New("shard 0's cut did not appear")

// Result summarises a finished run.
type Result struct {
	BackupID   string
	ParentID   string
	Manifest   string // key of the manifest object
	Topics     int
	Partitions int
	Records    int64 // records copied by this run (not the whole chain)
	Bytes      int64 // compressed segment bytes written by this run
	// Decisions says, for every topic of the cluster, whether it was
	// selected and why (nil when the run resumed an interrupted backup,
	// whose topics were chosen then).
	Decisions []topicfilter.Decision
	Warnings  []string // what the run noticed: gaps, recreated topics, filter warnings
	// NewGaps counts the offset ranges this run found deleted by the
	// broker before any backup read them: data the backup chain lacks.
	NewGaps int
	// Unread lists the partitions this run could not read to the captured
	// end: the broker answered with no records and no progress until
	// Options.RetryTimeout ran out. Each manifest partition ends where
	// reading stopped, so the next backup reads the rest; a run with
	// Unread ranges is partial, not complete.
	Unread  []Unread
	Resumed bool // the run completed an interrupted backup
	// ShardsPending lists, for a shard of a sharded backup (Options.Shard),
	// the shards that had not finished when this one did: the backup is
	// not complete yet (Manifest is ""), the last shard to finish
	// completes it. Empty once complete.
	ShardsPending []int
	// ShardAlreadyComplete: the shard's run had completed before it
	// started (a shard run again after the backup was written); nothing
	// was copied.
	ShardAlreadyComplete bool
	// InFlightTopics and InFlightRecords are the application's repartition
	// and foreign-key subscription topics whose tails the backup holds
	// (Manifest.InFlight) and the records in those tails: exactly the
	// records in flight between sub-topologies at the cut
	// (docs/DOMAIN.md#in-flight), which a changelog restore brings back.
	InFlightTopics  int
	InFlightRecords int64
	// InFlightPartitions are the partitions of those tails. Topics and
	// Partitions leave the tails out; Records counts their records.
	InFlightPartitions int
}

// Counts returns the topics and partitions this run backed up, the
// in-flight tails' included (Topics+InFlightTopics,
// Partitions+InFlightPartitions): the one count of a backup's stdout
// and "backup complete" log line, which also name the tails'
// share (InFlightTopics, InFlightPartitions). The stderr summary counts
// something else and says so: the partitions with new records.
func (r *Result) Counts() (topics, partitions int) {
	return r.Topics + r.InFlightTopics, r.Partitions + r.InFlightPartitions
}

// Unread is an offset range [From, To) of one partition that a run could
// not read (see Result.Unread).
type Unread struct {
	Topic     string
	Partition int32
	From, To  int64
	Reason    string
}

// Phase names the step of a run that failed; see PhaseError.
type Phase string

const (
	PhaseRepository Phase = "repository" // reading or locking the repository
	PhaseCluster    Phase = "cluster"    // reading topics, configs, groups or offsets from the source cluster
	PhaseCopy       Phase = "copy"       // copying records; the next run resumes the backup
	PhaseManifest   Phase = "manifest"   // writing the manifest; the next run resumes the backup
)

// PhaseError is the error Run returns, telling in which phase it failed.
// Errors of PhaseCopy and PhaseManifest leave a resumable backup.
type PhaseError struct {
	Phase Phase
	Err   error
}

func (e *PhaseError) Error() string { return e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// Resumable reports whether running the same backup again continues it.
func (e *PhaseError) Resumable() bool { return e.Phase == PhaseCopy || e.Phase == PhaseManifest }

// ErrLocked is wrapped by the error Run returns when another run holds the
// repository lock.
var ErrLocked = repository.ErrLocked

// ErrNothingSelected is wrapped by the error Run returns when the filters
// select no topic that can be backed up.
var ErrNothingSelected = errors.New("no topic selected")

// ErrNoTopicsSelector is returned by SelectTopics (and so Run) when
// Options.Include is empty and no topology is known: nothing says which
// topics are the application's. The commands exit 2.
var ErrNoTopicsSelector = errors.New(`no source.topics.include and no topology: give --topology FILE, set topology_file, or run the app as a streams group (group.protocol=streams) so the broker holds its topology`)

// Run performs one backup run. See the package comment for the order of
// operations and docs/FORMAT.md for what it writes.
func Run(ctx context.Context, o Options) (*Result, error) {
	return run(ctx, o)
}
