// Package config reads the YAML file that describes one Kafka Streams
// application's backup: the application.id, the source cluster and its topic
// filters, the repository storage and the backup settings. The accepted keys
// are those of the widely used OSO-style backup config, plus a few of ours.
//
// Every problem is reported with the key path (e.g. "storage.bucket" or
// "source.topics.include[2]") and its line: unknown keys (with the nearest
// known key), wrong types, missing required keys, and values that cannot
// work (a bad topic pattern, an unknown SASL mechanism, a bootstrap server
// without a port, an invalid S3 bucket name, a ".." in storage.prefix).
// ${VAR} in a scalar value expands from the environment; an unset variable
// is an error, a variable set to "" a warning, and $${ writes a literal
// "${". A relative storage.path, TLS file (ca_file, cert_file, key_file)
// or SASL password_file is resolved against the directory of the config
// file (not the working directory).
//
// A minimal file:
//
//	application_id: order-processor
//	source:
//	  bootstrap_servers: [kafka:9092]
//	  topics:
//	    include: [orders, "order-processor-*-changelog"]
//	storage:
//	  backend: filesystem
//	  path: /var/backups/kafka
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Defaults applied by Load and Parse when the key is absent.
const (
	DefaultCompression     = "zstd"
	DefaultSegmentKind     = "record"
	DefaultSegmentMaxBytes = 64 << 20 // 64 MiB
	DefaultConcurrency     = 4
	DefaultClientID        = "kafkastreams-dr"

	// DefaultRequestTimeout bounds one request to a broker, like the Java
	// client's request.timeout.ms (30s); see Cluster.RequestTimeout.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultRetryTimeout is how long retriable failures are retried
	// before a run fails: 2 minutes, as the Java producer's
	// delivery.timeout.ms, and well past a KRaft broker's restart (its
	// broker.session.timeout.ms is 9s; a broker away for 20s must be
	// survived, issue 9); see Cluster.RetryTimeout.
	DefaultRetryTimeout = 2 * time.Minute
	// DefaultCutAttempts is backup.cut_attempts' default: how many times
	// the backup tries to prove its cut.
	DefaultCutAttempts = 100
	// DefaultCutTimeout is backup.cut_timeout's default: the time all the
	// cut's attempts may take, longer than a Streams app's EOS commit
	// interval (commit.interval.ms 100) many times over.
	DefaultCutTimeout = 30 * time.Second
	// MinCutTimeout is the shortest backup.cut_timeout accepted (100ms):
	// the timeout is checked between attempts, so the first attempt
	// always runs, and a bound shorter than one attempt bounds nothing.
	MinCutTimeout = 100 * time.Millisecond
)

// Storage backends (storage.backend).
const (
	BackendS3         = "s3"
	BackendFilesystem = "filesystem"
)

// SASL mechanisms (source.security.sasl.mechanism).
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Config is one backup config file. Use Load or Parse; a Config they return
// has passed validation and has its defaults filled in.
type Config struct {
	// ApplicationID is the Kafka Streams application.id (one application
	// per config). Optional: without it topics are classified by name
	// suffix only and no consumer-group offsets are read (a warning). The
	// key present with an empty value (`application_id: ${APP}` with APP
	// set to "") is an error: Kafka Streams has no default application.id
	// (StreamsConfig.APPLICATION_ID_CONFIG is required).
	ApplicationID string `yaml:"application_id"`
	// SourceChangelogTopics are input topics that a state store reuses as
	// its changelog (topology.optimization=all, reuse.ktable.source.topics).
	SourceChangelogTopics []string `yaml:"source_changelog_topics"`
	// OtherApplicationIDs are the application.ids of other Kafka Streams
	// applications on the source cluster whose internal topics start with
	// this application's prefix ("orders-app-v1-...-changelog" under
	// application_id orders-app): such topics are never selected, even by
	// an include that matches them (KAFKA-14922). The consumer groups on
	// the cluster are consulted as well, but an application that never
	// committed, or whose group was deleted, has none: list it here.
	// Requires ApplicationID or InternalTopicPrefixes.
	OtherApplicationIDs []string `yaml:"other_application_ids"`
	// InternalTopicPrefixes are the prefixes of this application's
	// internal topics, without the trailing "-", when they are not just
	// the application.id: named topologies use
	// "<application.id>-<topology name>". When set they replace the
	// application.id as the prefix: list it too if it is still in use.
	// Default: [ApplicationID].
	InternalTopicPrefixes []string `yaml:"internal_topic_prefixes"`
	// TopologyFile is a file holding the application's
	// Topology#describe() text (topology.describe().toString(), the
	// multi-line format or the old one-line one): the topology then
	// classifies the topics and, without source.topics.include, selects
	// them (topicfilter.Classifier.Topology). Relative to the config
	// file's directory. Needs ApplicationID. Optional: without it, a
	// streams group's topology on the broker (KIP-1071) serves, or the
	// topics are classified by name. The --topology flag overrides it.
	TopologyFile string `yaml:"topology_file" config:"location"`
	// DeadLetterQueueTopics are the application's dead-letter queue topics
	// (KIP-1034, errors.dead.letter.queue.topic.name): outputs that a
	// topology does not show as sinks; with a topology they are selected
	// as outputs (role dead-letter).
	DeadLetterQueueTopics []string `yaml:"dead_letter_queue_topics"`
	// Source is the cluster the backup reads from. Required.
	Source Cluster `yaml:"source"`
	// Target is the cluster a restore writes to. Optional; validated now,
	// used by the restore command.
	Target *Cluster `yaml:"target"`
	// Storage is where the backup repository lives. Required.
	Storage Storage `yaml:"storage"`
	// Backup holds the settings of a backup run.
	Backup Backup `yaml:"backup"`
	// Drill holds the settings of a drill.
	Drill Drill `yaml:"drill"`
	// SchemaRegistry, when the key is present (even as `schema_registry: {}`),
	// backs up the storage topic of the application's Schema Registry with
	// its topics and restores it before them; nil: no registry topic.
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`

	file     string
	lines    map[string]int
	warnings []warning
	// plainSecrets are the keys holding a secret written in the file, not
	// a ${VAR} reference (source.security.sasl.password, ...).
	plainSecrets []string
}

// Cluster is how to reach one Kafka cluster and which of its topics count.
type Cluster struct {
	// BootstrapServers are the seed brokers, host:port (Kafka's
	// bootstrap.servers). Required.
	BootstrapServers []string `yaml:"bootstrap_servers"`
	// ClientID is the Kafka client.id; default "kafkastreams-dr".
	ClientID string `yaml:"client_id"`
	// Security configures TLS and SASL; empty means plaintext.
	Security Security `yaml:"security"`
	// Topics selects topics. For the source, Include is optional: without
	// it the application's topology (topology_file, --topology, or the
	// broker's streams group) selects; with neither the commands refuse.
	Topics Topics `yaml:"topics"`

	// RequestTimeout bounds one request to a broker, from when it is
	// written until its response is read (Kafka's request.timeout.ms);
	// default 30s. A request whose own timeout field says how long the
	// broker may take (a Fetch's max wait, a Produce's acks timeout) gets
	// that much more. It also bounds a connection attempt (at most 10s,
	// Kafka's socket.connection.setup.timeout.ms). In the file: a Go
	// duration such as "30s" or "1m".
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// RetryTimeout is how long a request that fails retriably (a broker
	// that does not answer or refuses connections, LEADER_NOT_AVAILABLE,
	// NOT_LEADER_OR_FOLLOWER, COORDINATOR_NOT_AVAILABLE, ...) is retried,
	// with backoff from 250ms to 5s, before the run fails naming the
	// broker; default 2m. It is also how long a backup retries a
	// partition whose fetches make no progress. In the file: a Go
	// duration such as "2m" or "90s".
	RetryTimeout time.Duration `yaml:"retry_timeout"`
}

// Security is TLS and SASL for one cluster (Kafka's security.protocol is
// derived: SSL, SASL_PLAINTEXT or SASL_SSL).
type Security struct {
	TLS  TLS  `yaml:"tls"`
	SASL SASL `yaml:"sasl"`
}

// TLS configures the TLS connection to the brokers.
type TLS struct {
	// Enabled turns TLS on. Parse sets it when any other TLS key is set and
	// enabled is not written; enabled: false with other keys is a warning.
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file" config:"location"`   // PEM CA bundle; default: the system roots
	CertFile           string `yaml:"cert_file" config:"location"` // PEM client certificate (mutual TLS); needs key_file
	KeyFile            string `yaml:"key_file" config:"location"`  // PEM client key; needs cert_file
	ServerName         string `yaml:"server_name"`                 // overrides the name checked in the broker certificate
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`        // do not verify the broker certificate (testing only)
}

// SASL configures SASL authentication. Mechanism is one of PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512. Exactly one of Password and PasswordFile is
// set; write the password as ${ENV_VAR} rather than in the file.
type SASL struct {
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file" config:"location"` // read when the client is built; one trailing newline is dropped
}

// Enabled reports whether SASL is configured.
func (s SASL) Enabled() bool { return s.Mechanism != "" }

// Topics are the topic filters of one cluster, in topicfilter syntax: an
// anchored glob ("order-processor-*-changelog") or, with a leading "~", an
// anchored regular expression. A topic is selected when it matches an
// Include item and no Exclude item.
type Topics struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// AllowMissing makes a literal include (no wildcard) that does not
	// exist on the cluster a warning instead of an error.
	AllowMissing bool `yaml:"allow_missing"`
	// AllowTopologyMismatch makes a topology input, changelog or source
	// changelog that Include/Exclude leave out a warning instead of a
	// refusal (topicfilter.TopologyMismatchError). Default false.
	AllowTopologyMismatch bool `yaml:"allow_topology_mismatch"`
}

// Storage is where the backup repository lives. Backend "s3" uses Bucket,
// Prefix, Region, Endpoint and PathStyle, with credentials from the standard
// AWS chain (environment, shared config, instance or pod role), never from
// this file. Backend "filesystem" uses Path and Prefix (the repository is
// the directory Path/Prefix).
type Storage struct {
	Backend   string `yaml:"backend"`                  // s3 | filesystem; required
	Bucket    string `yaml:"bucket" config:"location"` // s3: bucket name; required for s3
	Prefix    string `yaml:"prefix" config:"location"` // key prefix (s3) or subdirectory (filesystem); optional; no ".." segment; s3: storage.S3Prefix's rule
	Region    string `yaml:"region"`                   // s3: AWS region; default from the AWS chain
	Endpoint  string `yaml:"endpoint"`                 // s3: URL of an S3-compatible store (MinIO, Ceph, ...)
	PathStyle bool   `yaml:"path_style"`               // s3: path-style addressing, usual for S3-compatible stores
	// Path is the filesystem backend's repository directory; required for
	// filesystem. Parse makes a relative path absolute against the
	// directory of the config file, so that every command given the same
	// file, from any working directory, opens the same repository.
	Path string `yaml:"path" config:"location"`
	// RequestTimeout (s3) bounds each step of one attempt of an S3 request:
	// connecting, waiting for the response headers, and every read and
	// write on the connection, which must move a byte within it (a
	// download that stalls mid-body times out). A Go duration ("30s",
	// "1m"); default 30s. See storage.S3Options.RequestTimeout.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// RetryTimeout (s3) is how long one S3 operation is retried (with
	// backoff) after retryable failures, and how long a download cut short
	// keeps resuming; then the run fails with exit 1 naming the endpoint.
	// Default 2m, longer than a KRaft broker's session timeout. See
	// storage.S3Options.RetryTimeout.
	RetryTimeout time.Duration `yaml:"retry_timeout"`
	// UploadBufferBytes (s3) is the memory in bytes that all uploads of
	// one run share for their part buffers (8 MiB each); a segment upload
	// that finds none free waits for one. The file may say 50331648 or
	// "48MiB"; at least 8MiB; zero (absent) means
	// storage.DefaultS3UploadBufferBytes (48 MiB). See
	// storage.S3Options.UploadBufferBytes and docs/OPERATIONS.md
	// ("Memory").
	UploadBufferBytes ByteSize `yaml:"upload_buffer_bytes"`
	// ServerSideEncryption (s3) is the server-side encryption every
	// PutObject and CreateMultipartUpload asks for. Absent: none is asked,
	// and the bucket's default encryption applies. See
	// storage.S3Options.ServerSideEncryption.
	ServerSideEncryption ServerSideEncryption `yaml:"server_side_encryption"`
	// ObjectLock (s3) is the Object Lock retention put on the objects a
	// complete backup consists of (its manifest.json and segments; never
	// the lock or progress files). Absent: none. The bucket must have
	// Object Lock enabled. See storage.S3Options.Retention and
	// docs/OPERATIONS.md ("Object Lock").
	ObjectLock ObjectLock `yaml:"object_lock"`
	// Encryption turns on client-side encryption of the repository's
	// objects (storage.Encrypt; docs/FORMAT.md "Encryption",
	// docs/OPERATIONS.md "Encryption"); nil (absent) writes plaintext.
	// Either way, an encrypted object is read only with its key.
	Encryption *Encryption `yaml:"encryption"`
}

// ServerSideEncryption is storage.server_side_encryption: the
// x-amz-server-side-encryption headers of S3 writes ("Specifying
// server-side encryption" in the S3 User Guide).
type ServerSideEncryption struct {
	// Algorithm is "AES256" (SSE-S3: S3-managed keys) or "aws:kms"
	// (SSE-KMS); required when server_side_encryption is given.
	Algorithm string `yaml:"algorithm"`
	// KMSKeyID (aws:kms only) is the KMS key id, key ARN or alias ARN;
	// absent means the account's AWS managed key aws/s3.
	KMSKeyID string `yaml:"kms_key_id"`
	// BucketKey (aws:kms only) enables an S3 Bucket Key, which cuts the
	// KMS requests. Default false.
	BucketKey bool `yaml:"bucket_key"`
}

// ObjectLock is storage.object_lock: the Object Lock retention of the
// objects a complete backup consists of.
type ObjectLock struct {
	// Mode is GOVERNANCE or COMPLIANCE (S3's x-amz-object-lock-mode);
	// required. Parse upper-cases it.
	Mode string `yaml:"mode"`
	// Retention is how long each object is retained from its upload: whole
	// days ("30d") or whole hours ("36h"); required, at most 36500d (S3's
	// limit). Period parses it.
	Retention string `yaml:"retention"`
}

// Period is Retention as a duration: whole days ("30d", a day being 24
// hours) or whole hours ("36h"); 0 when storage.object_lock is absent. Go
// durations in other units are refused: "1m" would be one minute to Go and
// one month to a reader. It fails on a value Parse refuses.
func (o ObjectLock) Period() (time.Duration, error) {
	s := strings.TrimSpace(o.Retention)
	if s == "" {
		return 0, nil
	}
	unit := time.Hour
	n, ok := strings.CutSuffix(s, "h")
	if !ok {
		n, ok = strings.CutSuffix(s, "d")
		unit = 24 * time.Hour
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || v < 0 || strings.HasPrefix(n, "+") {
		return 0, fmt.Errorf("%q is neither whole days (30d) nor whole hours (36h)", s)
	}
	if v == 0 {
		return 0, fmt.Errorf("%q is not greater than zero", s)
	}
	if v > int64(storage.MaxRetentionPeriod/unit) {
		return 0, fmt.Errorf("%q is above S3's limit of 36500d (100 years)", s)
	}
	return time.Duration(v) * unit, nil
}

// Encryption is storage.encryption: the repository key that encrypts the
// objects a run writes (key_file or key_env), and the previous keys of a
// rotation, which only decrypt. A key is 32 bytes in standard base64
// (`openssl rand -base64 32`); its id (storage.KeyID) is what manifests,
// list and describe show, never the key.
type Encryption struct {
	// KeyFile is a file holding the key in base64 (one line; white space
	// around it is ignored), relative to the config file. Exactly one of
	// KeyFile and KeyEnv is set.
	KeyFile string `yaml:"key_file" config:"location"`
	// KeyEnv is the name of an environment variable holding the key in
	// base64, e.g. KDR_REPOSITORY_KEY (a Kubernetes Secret mounted as an
	// environment variable).
	KeyEnv string `yaml:"key_env"`
	// PreviousKeys are keys that only decrypt: the earlier primary keys,
	// kept until no kept backup names an object under them (list shows
	// each backup's key ids).
	PreviousKeys []EncryptionKey `yaml:"previous_keys"`
}

// EncryptionKey is one of storage.encryption.previous_keys: key_file or
// key_env, as the primary key's.
type EncryptionKey struct {
	KeyFile string `yaml:"key_file" config:"location"`
	KeyEnv  string `yaml:"key_env"`
}

// Backup holds the settings of a backup run.
type Backup struct {
	// Compression of segments; only "zstd" for now (the default).
	Compression string `yaml:"compression"`
	// CompressionLevel is the zstd level of record-mode segments (config
	// key backup.compression_level): fastest, default, better or best,
	// klauspost/compress's zstd.EncoderLevel names (format.CompressionLevel);
	// "" when absent: the default level, "default" (about zstd -3).
	// Readers do not need it.
	CompressionLevel string `yaml:"compression_level"`
	// SourceClusterID is a free-form name of the source cluster, recorded
	// in the manifest.
	SourceClusterID string `yaml:"source_cluster_id"`
	// SegmentKind is how segments store records: "record" (the default)
	// re-encodes every record into a zstd segment; "batch" stores the
	// broker's record batches as fetched, compressed by their producers,
	// which costs the backup no compression work (docs/FORMAT.md, "Batch
	// segments"). Any other value is refused.
	SegmentKind string `yaml:"segment_kind"`
	// SegmentMaxBytes is the uncompressed size in bytes at which a segment
	// is closed; default 64 MiB. The file may say 67108864 or "64MiB".
	SegmentMaxBytes ByteSize `yaml:"segment_max_bytes"`
	// Concurrency is how many partitions are copied at once; default 4.
	Concurrency int `yaml:"concurrency"`
	// CutAttempts is how many times the backup tries to prove its cut
	// consistent (group offsets, settle, ends, settle, group offsets again;
	// docs/DESIGN.md invariant 1) before it keeps the last attempt's cut
	// unproven; default DefaultCutAttempts (100), at least 1.
	CutAttempts int `yaml:"cut_attempts"`
	// CutTimeout bounds the time all attempts together take, waits for
	// transactions in PrepareCommit included; default DefaultCutTimeout
	// (30s). In the file: a Go duration such as "30s".
	CutTimeout time.Duration `yaml:"cut_timeout"`
}

// DefaultSchemaRegistryTopic is schema_registry.topic's default: the
// storage topic of Confluent Schema Registry (kafkastore.topic) and of the
// registries compatible with it.
const DefaultSchemaRegistryTopic = "_schemas"

// SchemaRegistry is the Schema Registry whose storage topic a backup copies
// (config key schema_registry). Records of Avro, Protobuf and JSON Schema
// applications carry a schema id (magic byte 0, then the id as 4 bytes big
// endian) that only this topic resolves: restored first and record for
// record, it gives a registry started on the target the same ids.
type SchemaRegistry struct {
	// Topic is the registry's storage topic: Confluent's kafkastore.topic,
	// Karapace's topic_name, Apicurio's apicurio.kafkasql.topic. Default
	// DefaultSchemaRegistryTopic ("_schemas").
	Topic string `yaml:"topic"`
}

// Drill holds the settings of `drill`.
type Drill struct {
	// App is the application the drill starts on the drill target after
	// the restore, to measure the recovery time to the application.
	App DrillApp `yaml:"app"`
}

// DrillApp is the application a drill starts and watches (drill.App).
type DrillApp struct {
	// Command is a shell command (run as /bin/sh -c COMMAND) that starts
	// the application against the drill target, whose bootstrap servers
	// it gets as $KAFKASTREAMS_DR_BOOTSTRAP_SERVERS and the application.id
	// as $KAFKASTREAMS_DR_APPLICATION_ID. Write them without braces: this
	// file expands ${VAR} when it is read ($${VAR} is a literal ${VAR}).
	// The application must start with an empty state directory. Optional:
	// without it (and without --app-command) the drill ends at restored
	// and verified. Required when drill.app is present.
	Command string `yaml:"command"`
	// Timeout bounds the wait from the command's start to the application
	// caught up; default 10m. A Go duration ("10m", "90s").
	Timeout time.Duration `yaml:"timeout"`
	// StopGrace is how long the drill waits after SIGTERM before SIGKILL
	// when it stops the application at the end; default 30s.
	StopGrace time.Duration `yaml:"stop_grace"`
}

// Defaults of DrillApp, applied when the key is absent.
const (
	DefaultDrillAppTimeout   = 10 * time.Minute
	DefaultDrillAppStopGrace = 30 * time.Second
)

// Load reads and parses the config file at path. See Parse. It does not
// read the files the config names; see LoadAndCheckFiles. Only a regular
// file of at most MaxFileBytes (1 MiB) is read: a FIFO, a device or a
// directory is refused before it is opened, a larger file before more
// than the limit is read; the error (an ErrorList of one) names the file.
//
// A file that group or others may read (any of mode 0044) and that holds
// a secret in plain text (a SASL password literal, not ${VAR}) draws a
// warning naming the file, the keys and chmod 600.
func Load(path string) (*Config, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	c.warnReadableSecrets(path)
	return c, nil
}

// LoadAndCheckFiles is Load that also reads every file the config names,
// as Cluster.ClientOptions would: the TLS CA bundle, client certificate and
// key, and the SASL password file, of the source and of the target. Each
// unreadable or malformed file is one more Error, at its key and line, in
// the same ErrorList as every other problem (one bad file does not hide
// the next).
func LoadAndCheckFiles(path string) (*Config, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(data, path, os.LookupEnv, true)
	if err != nil {
		return nil, err
	}
	c.warnReadableSecrets(path)
	return c, nil
}

// warnReadableSecrets adds a warning when the file at path can be read by
// group or others and holds a secret in plain text.
func (c *Config) warnReadableSecrets(path string) {
	if len(c.plainSecrets) == 0 {
		return
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o044 == 0 {
		return
	}
	who := "group and others"
	switch fi.Mode().Perm() & 0o044 {
	case 0o040:
		who = "its group"
	case 0o004:
		who = "others"
	}
	c.warnings = append(c.warnings, warning{msg: fmt.Sprintf(
		"%s can be read by %s (mode %04o) and holds %s in plain text: run chmod 600 %s, or write password: ${ENV_VAR} or password_file instead",
		path, who, fi.Mode().Perm(), strings.Join(c.plainSecrets, " and "), path)})
}

// Parse parses and validates a config; name is the file name used in
// messages. On failure the error is an ErrorList holding every problem
// found, each with its key path and line.
func Parse(data []byte, name string) (*Config, error) {
	return parse(data, name, os.LookupEnv, false)
}

// File returns the name the config was loaded from.
func (c *Config) File() string { return c.file }

// Warnings returns problems that do not stop a run, such as a missing
// application_id or storage keys that the chosen backend ignores, each
// naming the key and its line.
func (c *Config) Warnings() []string {
	var out []string
	for _, w := range c.warnings {
		out = append(out, w.msg)
	}
	return out
}

// WarningsAbout is Warnings about the keys under the top-level keys given
// (e.g. "storage") and about the file itself (its mode), for a command
// that uses nothing else: list reads the repository only, and a warning
// about source.retry_timeout says nothing to it.
func (c *Config) WarningsAbout(topKeys ...string) []string {
	var out []string
	for _, w := range c.warnings {
		top, _, _ := strings.Cut(w.key, ".")
		top, _, _ = strings.Cut(top, "[")
		if w.key == "" || slices.Contains(topKeys, top) {
			out = append(out, w.msg)
		}
	}
	return out
}

// warning is one of Warnings: its message and the key it is about ("" for
// the file itself).
type warning struct {
	key, msg string
}

// Line returns the line of the key path in the file (e.g.
// "source.topics.include[2]"), or 0 if the key is not in the file.
func (c *Config) Line(key string) int { return c.lines[key] }

// Describe names the repository location for people, e.g.
// "s3://kafka-backups/streams/order-processor (region us-east-1)" or
// "/var/backups/kafka". It never contains secrets.
func (s Storage) Describe() string {
	switch s.Backend {
	case BackendS3:
		loc := "s3://" + s.Bucket
		if p := strings.Trim(s.Prefix, "/"); p != "" {
			loc += "/" + p
		}
		var extra []string
		if s.Region != "" {
			extra = append(extra, "region "+s.Region)
		}
		if s.Endpoint != "" {
			extra = append(extra, "endpoint "+s.Endpoint)
		}
		if s.PathStyle {
			extra = append(extra, "path-style")
		}
		if len(extra) > 0 {
			loc += " (" + strings.Join(extra, ", ") + ")"
		}
		return loc
	case BackendFilesystem:
		return s.FilesystemDir()
	default:
		return s.Backend + " storage"
	}
}

// FilesystemDir is the repository directory of the filesystem backend:
// Path joined with Prefix.
func (s Storage) FilesystemDir() string {
	if s.Prefix == "" {
		return s.Path
	}
	return filepath.Join(s.Path, filepath.FromSlash(s.Prefix))
}
