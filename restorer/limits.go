package restorer

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
)

// This file holds the preflight checks of the limits a Kafka broker
// enforces on every produced record, computed as the broker computes them:
// the record batch size against max.message.bytes (UnifiedLog
// analyzeAndValidateRecords), the CreateTime range against
// message.timestamp.before.max.ms / after.max.ms and keys of compacted
// topics (LogValidator validateTimestamp / validateKey), and the records
// that time-based retention (retention.ms with cleanup.policy delete) would
// delete right after the restore.

// RetentionChoice is what the restore does with records already past the
// target topic's retention.ms (format.RetentionChoice: the plan stores it).
type RetentionChoice = format.RetentionChoice

const (
	// RetentionUnset refuses the restore when any record is past retention.
	RetentionUnset = format.RetentionUnset
	// RetentionKeep restores the topics concerned with retention.ms=-1
	// (set at creation, or altered before the records on an existing
	// topic); the plan names the kafka-configs command that sets it back.
	RetentionKeep = format.RetentionKeep
	// RetentionAcceptLoss restores as configured: the broker deletes
	// those records after the restore; the plan warns with their count.
	RetentionAcceptLoss = format.RetentionAcceptLoss
)

// ParseRetentionChoice parses --retention: keep or accept-loss ("" is unset).
func ParseRetentionChoice(s string) (RetentionChoice, error) {
	switch c := RetentionChoice(strings.ToLower(strings.TrimSpace(s))); c {
	case RetentionUnset, RetentionKeep, RetentionAcceptLoss:
		return c, nil
	}
	return "", fmt.Errorf("invalid --retention %q: want keep (restore with retention.ms=-1 on the topics concerned) or accept-loss (the broker deletes the records past retention.ms)", s)
}

// RetentionPlan is what preflight found about time-based retention of one
// topic on the target (cleanup.policy with delete, retention.ms >= 0).
type RetentionPlan = format.RetentionPlan

// Kafka's record batch framing (org.apache.kafka.common.record.DefaultRecordBatch
// and DefaultRecord, message format v2).
const (
	// recordBatchOverhead is DefaultRecordBatch.RECORD_BATCH_OVERHEAD: the
	// batch header, base offset and length included, in bytes.
	recordBatchOverhead = 61
	// v8BatchExtra is what franz-go counts on top of Kafka's batch size
	// when it caps batches (ProducerBatchMaxBytes) on Produce v3 to v8:
	// the produce request's records field's length, an int32.
	v8BatchExtra = 4
	// flexibleBatchExtra is the cap's margin over Kafka's batch size on
	// the flexible versions (v9+, KIP-482), where the records field's
	// length is a compact uvarint(size+1) of 1 to 5 bytes: the only
	// margin that never lets a batch pass the limit (see maxProduceVersion).
	flexibleBatchExtra = 1
	// maxProduceVersion is the newest Produce request version the
	// restore's producers send when every target broker offers it
	// (batchLimits.v8): 8, the last before the flexible versions, on
	// which a cap of max.message.bytes + v8BatchExtra is exact both
	// ways. On a flexible version no cap is: franz-go counts the batch
	// with the width of its uvarint before the record is added (kgo
	// sink.go recBatch.tryBuffer, flexibleWireLength), 1 byte below 127
	// bytes of batch, 2 below 16,383, 3 below 2 MiB. A record that takes
	// a batch of less than 127 bytes to max.message.bytes + 1 is counted
	// 1 byte short of that, so only a margin of 1 refuses it; but before
	// its broker's first produce response franz-go counts the 4-byte
	// length of v3-v8, so with a margin of 1 it refuses itself a record
	// within 3 bytes of the limit, which the broker would take. The
	// margin of 4 let full batches be 1 byte over the default 1048588
	// and over 16384, 2 over 8000, refused with MESSAGE_TOO_LARGE (make
	// bench's restore of a compacted topic). Kafka 4 accepts v3 to v13
	// (ProduceRequest.json; KIP-896 removed v0-v2); v9-v13 add nothing
	// the restore uses (tagged fields, KIP-951's leader hints, KIP-890's
	// transaction errors, KIP-516's topic ids).
	maxProduceVersion = 8
	// defaultSocketRequestMaxBytes is socket.request.max.bytes, also
	// franz-go's BrokerMaxWriteBytes default: no produce request is larger.
	defaultSocketRequestMaxBytes = 100 << 20
	// produceRequestSlack bounds the produce request around one batch
	// (headers, client id, topic name up to 249 bytes).
	produceRequestSlack = 512
)

// singleRecordBatchBytes is the size in bytes of a v2 record batch holding
// only rec, as the broker measures it against max.message.bytes
// (RecordBatch.sizeInBytes: 61 bytes of batch header and the record with
// its varint framing, DefaultRecord.sizeInBytes, offset and timestamp
// deltas 0). The restore's producer puts a record that does not fit a
// batch with others into a batch of its own, so this is the smallest batch
// the record can travel in.
func singleRecordBatchBytes(rec *format.Record) int64 {
	varlen := func(b []byte) int {
		if b == nil {
			return kbin.VarintLen(-1)
		}
		return kbin.VarintLen(int32(len(b))) + len(b)
	}
	body := 1 + // attributes
		kbin.VarlongLen(0) + // timestamp delta
		kbin.VarintLen(0) + // offset delta
		varlen(rec.Key) + varlen(rec.Value) +
		kbin.VarintLen(int32(len(rec.Headers)))
	for _, h := range rec.Headers {
		body += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + varlen(h.Value)
	}
	return int64(recordBatchOverhead + kbin.VarintLen(int32(body)) + body)
}

// noTimestamp is RecordBatch.NO_TIMESTAMP: a record without a timestamp,
// which the broker does not range-check.
const noTimestamp = -1

// timestampRejected reports whether a broker validating at time now (epoch
// ms) rejects a CreateTime record with timestamp ts under
// message.timestamp.before.max.ms and message.timestamp.after.max.ms,
// exactly as Kafka's LogValidator.validateTimestamp does (Kafka 3.6+,
// KIP-937): NO_TIMESTAMP (-1) is never checked, and the difference is
// computed in wrapping 64-bit arithmetic as Java computes it, so
// Long.MAX_VALUE limits never reject and do not overflow.
func timestampRejected(now, ts, before, after int64) bool {
	if ts == noTimestamp {
		return false
	}
	diff := now - ts // wraps like Java's long
	return diff > before || -1*diff > after
}

// producerCanSend reports whether the restore's producer sends ts
// unchanged (kgotime.ProducerCanSend).
func producerCanSend(ts int64) bool { return kgotime.ProducerCanSend(ts) }

// timestampMargin is how far the broker's clock at validation may be from
// this host's at preflight and still get the same verdict without a
// warning: the broker checks each record when it is produced (its own
// time.milliseconds()), later in a long restore, and its clock may be off.
const timestampMargin = int64(time.Hour / time.Millisecond)

// nearlyRejected reports whether the broker would reject ts at some time
// within timestampMargin of now (the before limit at a later time, the
// after limit at an earlier one).
func nearlyRejected(now, ts int64, l topicLimits) bool {
	return timestampRejected(now, ts, l.before.v, l.after.v) ||
		timestampRejected(now+timestampMargin, ts, l.before.v, l.after.v) ||
		timestampRejected(now-timestampMargin, ts, l.before.v, l.after.v)
}

// pastRetention reports whether time-based retention deletes a record with
// timestamp ts at time now: UnifiedLog deletes a segment once now minus its
// largest timestamp exceeds retention.ms; a segment whose timestamps are
// all negative (NO_TIMESTAMP) is judged by its file's modification time,
// so such records are not counted. retentionMs < 0 means no time limit.
func pastRetention(now, ts, retentionMs int64) bool {
	return retentionMs >= 0 && ts >= 0 && now-ts > retentionMs
}

// brokerDefaults are the target broker's settings that topics inherit.
type brokerDefaults struct {
	messageMaxBytes   int64 // message.max.bytes
	socketRequestMax  int64 // socket.request.max.bytes
	tsBefore, tsAfter int64 // log.message.timestamp.before/after.max.ms
	retentionMs       int64 // log.retention.ms, else .minutes or .hours
	retentionBytes    int64 // log.retention.bytes, -1 by default
	cleanupPolicy     string
	timestampType     string // log.message.timestamp.type
	describeFailed    error
}

// brokerDefaultsOf reads one broker's full config (defaults included). A
// broker that cannot describe its configs gets Kafka's defaults, noted in
// describeFailed.
func (r *restore) brokerDefaultsOf(ctx context.Context) brokerDefaults {
	d := brokerDefaults{messageMaxBytes: defaultMessageMaxBytes, socketRequestMax: defaultSocketRequestMaxBytes,
		tsBefore: math.MaxInt64, tsAfter: 3600000, retentionMs: 7 * 24 * 3600000, retentionBytes: -1, cleanupPolicy: "delete", timestampType: "CreateTime"}
	rcs, err := r.adm.DescribeBrokerConfigs(ctx, r.bm.Brokers[0].NodeID)
	for _, rc := range rcs {
		if err == nil && rc.Err != nil {
			err = rc.Err
		}
	}
	if err != nil {
		d.describeFailed = err
		return d
	}
	var ms, minutes, hours *string
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			switch c.Key {
			case "message.max.bytes":
				d.messageMaxBytes = parseInt64(c.Value, d.messageMaxBytes)
			case "socket.request.max.bytes":
				d.socketRequestMax = parseInt64(c.Value, d.socketRequestMax)
			case "log.message.timestamp.before.max.ms":
				d.tsBefore = parseInt64(c.Value, d.tsBefore)
			case "log.message.timestamp.after.max.ms":
				d.tsAfter = parseInt64(c.Value, d.tsAfter)
			case "log.message.timestamp.type":
				if c.Value != nil {
					d.timestampType = *c.Value
				}
			case "log.cleanup.policy":
				if c.Value != nil {
					d.cleanupPolicy = *c.Value
				}
			case "log.retention.ms":
				ms = c.Value
			case "log.retention.minutes":
				minutes = c.Value
			case "log.retention.bytes":
				d.retentionBytes = parseInt64(c.Value, d.retentionBytes)
			case "log.retention.hours":
				hours = c.Value
			}
		}
	}
	// LogConfig: log.retention.ms, else minutes, else hours.
	switch {
	case ms != nil:
		d.retentionMs = parseInt64(ms, d.retentionMs)
	case minutes != nil:
		d.retentionMs = parseInt64(minutes, 0) * 60000
	case hours != nil:
		d.retentionMs = parseInt64(hours, 0) * 3600000
	}
	return d
}

// topicLimit names which config sets a limit: "topic max.message.bytes" or
// "broker message.max.bytes".
type topicLimit struct {
	v      int64
	source string
}

// topicLimits are the effective settings of one target topic while the
// restore produces to it (always CreateTime: LogAppendTime is switched on
// after the records).
type topicLimits struct {
	maxMessage    topicLimit
	before, after topicLimit
	retentionMs   int64 // -1: no time-based deletion (no delete in cleanup.policy, or retention.ms=-1)
	// retentionBytes is retention.bytes per partition, -1 without a
	// size limit (or without delete in cleanup.policy).
	retentionBytes topicLimit
	compacted      bool
}

// limitsOf resolves a topic's limits from the target's view of it: the
// existing topic's described configs, else the configs validated for its
// creation, else the configs it is created with, else the broker's.
func limitsOf(cfg func(key string) (string, bool, bool), bd brokerDefaults) topicLimits {
	get := func(key, brokerKey string, def int64) topicLimit {
		v, ok, topicLevel := cfg(key)
		switch {
		case ok && topicLevel:
			return topicLimit{parseInt64(&v, def), "topic " + key}
		case ok:
			return topicLimit{parseInt64(&v, def), "broker " + brokerKey}
		}
		return topicLimit{def, "broker " + brokerKey}
	}
	l := topicLimits{
		maxMessage: get("max.message.bytes", "message.max.bytes", bd.messageMaxBytes),
		before:     get("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", bd.tsBefore),
		after:      get("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", bd.tsAfter),
	}
	policy := bd.cleanupPolicy
	if v, ok, _ := cfg("cleanup.policy"); ok {
		policy = v
	}
	l.compacted = strings.Contains(policy, "compact")
	l.retentionMs = -1
	if strings.Contains(policy, "delete") {
		l.retentionMs = get("retention.ms", "log.retention.ms", bd.retentionMs).v
		l.retentionBytes = get("retention.bytes", "log.retention.bytes", bd.retentionBytes)
	} else {
		l.retentionBytes = topicLimit{-1, "cleanup.policy"}
	}
	return l
}

// partitionFindings counts, for one partition's records to restore, what
// the target's limits make of them.
type partitionFindings struct {
	tooLarge, firstTooLarge, largest int64 // batch bytes of the largest
	badTS, firstBadTS, badTSValue    int64
	nearTS, firstNearTS              int64 // accepted now, rejected within timestampMargin
	unsendable, firstUnsendable      int64 // outside kgotime.ProducerMin..Max
	unsendableValue                  int64
	noTS                             int64
	nullKeys, firstNullKey           int64
	pastRetention, oldest            int64
}

// scanLimits checks the records of partition p below cut (-1: no cut)
// against l at time now. It decodes only the segments whose statistics say
// they may hold a record that matters.
func (r *restore) scanLimits(ctx context.Context, topic string, p *format.Partition, cut int64, l topicLimits, produceMax, now int64) (partitionFindings, error) {
	f := partitionFindings{firstTooLarge: -1, firstBadTS: -1, firstNullKey: -1, oldest: math.MaxInt64}
	for _, s := range p.Segments {
		if cut >= 0 && s.FirstOffset >= cut {
			break
		}
		whole := cut < 0 || s.LastOffset < cut
		// Record framing adds at most 5 bytes per length and 20 for the
		// rest; 512 leaves room for a few dozen headers.
		mayTooLarge := s.MaxRecordBytes+recordBatchOverhead+512 > produceMax
		mayNullKey := l.compacted && s.NullKeys > 0
		// With both ends at or after 0, the accepted timestamps form
		// one interval and the ends decide; otherwise read the records.
		mayBadTS := s.MinTimestamp < 0 || nearlyRejected(now, s.MinTimestamp, l) || nearlyRejected(now, s.MaxTimestamp, l) ||
			!producerCanSend(s.MinTimestamp) || !producerCanSend(s.MaxTimestamp)
		// A negative minimum (no timestamp) hides the smallest real one.
		mayPast := l.retentionMs >= 0 && (s.MinTimestamp < 0 || pastRetention(now, s.MinTimestamp, l.retentionMs))
		if whole && mayPast && s.MinTimestamp >= 0 && pastRetention(now, s.MaxTimestamp, l.retentionMs) {
			// Every record is past retention: no need to read them for that.
			f.pastRetention += s.Records
			f.oldest = min(f.oldest, s.MinTimestamp)
			mayPast = false
		}
		if !mayTooLarge && !mayNullKey && !mayBadTS && !mayPast {
			continue
		}
		err := readSegment(ctx, r.store, topic, p.Partition, s, func(rec *format.Record) error {
			if cut >= 0 && rec.Offset >= cut {
				return repository.ErrStopReading
			}
			if mayTooLarge {
				if n := singleRecordBatchBytes(rec); n > produceMax {
					if f.tooLarge == 0 {
						f.firstTooLarge = rec.Offset
					}
					f.tooLarge++
					f.largest = max(f.largest, n)
				}
			}
			if mayNullKey && rec.Key == nil {
				if f.nullKeys == 0 {
					f.firstNullKey = rec.Offset
				}
				f.nullKeys++
			}
			if mayBadTS {
				if !producerCanSend(rec.Timestamp) {
					if f.unsendable == 0 {
						f.firstUnsendable, f.unsendableValue = rec.Offset, rec.Timestamp
					}
					f.unsendable++
				}
				if rec.Timestamp == noTimestamp {
					f.noTS++
				} else if timestampRejected(now, rec.Timestamp, l.before.v, l.after.v) {
					if f.badTS == 0 {
						f.firstBadTS, f.badTSValue = rec.Offset, rec.Timestamp
					}
					f.badTS++
				} else if nearlyRejected(now, rec.Timestamp, l) {
					if f.nearTS == 0 {
						f.firstNearTS = rec.Offset
					}
					f.nearTS++
				}
			}
			if mayPast && pastRetention(now, rec.Timestamp, l.retentionMs) {
				f.pastRetention++
				f.oldest = min(f.oldest, rec.Timestamp)
			}
			return nil
		})
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// batchLimits holds the producer's record batch cap per topic: the target
// topic's max.message.bytes as franz-go counts it. preflight fills it; the
// producer reads it (kgo.ProducerBatchMaxBytesFn) when it first produces
// to a partition. Safe for concurrent use.
type batchLimits struct {
	mu  sync.Mutex
	max map[string]int32
	// v8 says every target broker offers Produce v8 (targetOffersV8): the
	// producers send v8 at most (producerVersions) and the caps are
	// max.message.bytes + v8BatchExtra; else they send the version
	// franz-go negotiates and the caps are + flexibleBatchExtra.
	v8 bool
	// oneByOne holds the topics whose records go one batch each
	// (oneAtATime).
	oneByOne map[string]bool
}

// defaultBatchMax is the cap for a topic preflight did not plan: franz-go's
// own default (Kafka's message.max.bytes default).
const defaultBatchMax = 1000012

// producerVersions is the kgo.MaxVersions option of the restore's
// producers, nil for franz-go's own: Produce v8 at most when every target
// broker offers it (b.v8), on which franz-go counts a batch exactly
// (maxProduceVersion).
func (b *batchLimits) producerVersions() kgo.Opt {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.v8 {
		return nil
	}
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Produce.Int16(), maxProduceVersion)
	return kgo.MaxVersions(versions)
}

// targetOffersV8 says whether every target broker answers ApiVersions with
// Produce v8 among its versions; false too when one cannot be asked (the
// restore then uses the cap that is safe on any version).
func (r *restore) targetOffersV8(ctx context.Context) bool {
	vs, err := r.adm.ApiVersions(ctx)
	if err != nil || len(vs) == 0 {
		return false
	}
	for _, v := range vs.Sorted() {
		lo, hi, ok := v.KeyVersions(kmsg.Produce.Int16())
		if v.Err != nil || !ok || lo > maxProduceVersion || hi < maxProduceVersion {
			return false
		}
	}
	return true
}

// set caps topic's batches at kafkaLimit, its max.message.bytes, as
// franz-go counts the batch on the Produce versions b.v8 picks. Call it
// after setting b.v8.
func (b *batchLimits) set(topic string, kafkaLimit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max == nil {
		b.max = map[string]int32{}
	}
	extra := int64(flexibleBatchExtra)
	if b.v8 {
		extra = v8BatchExtra
	}
	// franz-go accepts [512, 1 GiB] and caps at its BrokerMaxWriteBytes.
	b.max[topic] = int32(min(max(kafkaLimit+extra, franzMinBatchMax), 1<<30))
	if kafkaLimit+extra < franzMinBatchMax {
		if b.oneByOne == nil {
			b.oneByOne = map[string]bool{}
		}
		b.oneByOne[topic] = true
	}
}

// franzMinBatchMax is the smallest batch cap franz-go accepts
// (ProducerBatchMaxBytesFn: [512, 1 GiB]).
const franzMinBatchMax = 512

// oneAtATime says whether topic's max.message.bytes is below franz-go's
// smallest cap (franzMinBatchMax): franz-go would put records that fit
// alone into batches the broker refuses, so the restore produces them one
// at a time, each after the one before is acknowledged (restorePartition).
func (b *batchLimits) oneAtATime(topic string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.oneByOne[topic]
}

func (b *batchLimits) get(topic string) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.max[topic]; ok {
		return v
	}
	return defaultBatchMax
}

func fmtMillis(ms int64) string {
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format(time.RFC3339Nano))
}

// kafkaConfigsCmd is the kafka-configs command that sets (value non-nil)
// or removes a topic config on the target.
func kafkaConfigsCmd(topic, key string, value *string) string {
	if value == nil {
		return fmt.Sprintf("kafka-configs.sh --bootstrap-server <target> --alter --entity-type topics --entity-name %s --delete-config %s", topic, key)
	}
	return fmt.Sprintf("kafka-configs.sh --bootstrap-server <target> --alter --entity-type topics --entity-name %s --add-config %s=%s", topic, key, *value)
}

// checkLimits runs the record-level checks of every planned topic against
// the target's limits, fills the plan's counts and the producer's batch
// caps, applies the retention choice, and returns the refusals.
// validated holds the configs the target reported for topics to create
// (CreateTopics with validateOnly); existing the described configs of
// existing topics.
func (r *restore) checkLimits(ctx context.Context, plan *Plan, bd brokerDefaults, existing map[string]map[string]kadm.Config, validated map[string]map[string]kadm.Config) ([]string, error) {
	var refusals []string
	refuse := func(format string, args ...any) { refusals = append(refusals, fmt.Sprintf(format, args...)) }
	now := time.Now().UnixMilli()
	if bd.describeFailed != nil {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("the target broker's configs could not be read (%v): its limits are checked with Kafka's defaults", bd.describeFailed))
	}
	produceMaxCap := min(bd.socketRequestMax, defaultSocketRequestMaxBytes) - produceRequestSlack
	offersV8 := r.targetOffersV8(ctx)
	r.batches.mu.Lock()
	r.batches.v8 = offersV8
	r.batches.mu.Unlock()
	type pastTopic struct {
		topic         string
		n, oldest, ms int64
	}
	var past []pastTopic
	for i := range plan.Topics {
		tp := &plan.Topics[i]
		t := topicOf(r.sel, tp.Topic)
		if bad := illegalTopicName(tp.Topic); bad != "" {
			refuse("topic %q cannot exist on Kafka: %s (org.apache.kafka.common.internals.Topic)", tp.Topic, bad)
			continue
		}
		// cfg returns the topic's effective value of key, and whether
		// the topic sets it itself (else it is the broker's).
		// A topic an earlier run of this restore created (resume) is
		// planned with the configs it was created with (tp.Configs, then
		// the broker's), not those the target describes now
		// (retention.ms=-1 under --retention keep, CreateTime), so that
		// the resumed plan is the first run's.
		cfg := func(key string) (v string, ok, topicLevel bool) {
			if cs, ok := existing[tp.Topic]; ok && tp.Action != format.ActionResume {
				if c, ok := cs[key]; ok && c.Value != nil {
					return *c.Value, true, c.Source == kmsg.ConfigSourceDynamicTopicConfig
				}
				return "", false, false
			}
			if v, ok := tp.Configs[key]; ok {
				return v, true, true
			}
			if c, ok := validated[tp.Topic][key]; ok && c.Value != nil {
				return *c.Value, true, c.Source == kmsg.ConfigSourceDynamicTopicConfig
			}
			return "", false, false
		}
		r.keepTimestampsOnCreate(plan, tp, t, bd, validated[tp.Topic])
		l := limitsOf(cfg, bd)
		tp.MaxMessageBytes = l.maxMessage.v
		r.batches.set(tp.Topic, l.maxMessage.v)
		if r.batches.oneAtATime(tp.Topic) {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q: %s %d is below the smallest record batch the restore's producer can cap (franz-go, %d bytes): its records are produced one at a time, one round trip each",
				tp.Topic, l.maxMessage.source, l.maxMessage.v, franzMinBatchMax))
		}
		produceMax := min(l.maxMessage.v, produceMaxCap)
		var pastN int64
		oldest := int64(math.MaxInt64)
		for pi := range tp.PartitionPlans {
			pp := &tp.PartitionPlans[pi]
			var p *format.Partition
			for k := range t.PartitionCuts {
				if t.PartitionCuts[k].Partition == pp.Partition {
					p = &t.PartitionCuts[k]
				}
			}
			if p == nil {
				continue
			}
			f, err := r.scanLimits(ctx, tp.Topic, p, pp.CutAt, l, produceMax, now)
			if err != nil {
				return nil, err
			}
			pp.NoTimestamp, pp.PastRetention = f.noTS, f.pastRetention
			if f.tooLarge > 0 {
				limit := fmt.Sprintf("%s %d", l.maxMessage.source, l.maxMessage.v)
				if produceMax < l.maxMessage.v {
					limit = fmt.Sprintf("the largest produce request (socket.request.max.bytes %d)", bd.socketRequestMax)
				}
				refuse("topic %q partition %d: %d record(s) do not fit the target's %s: the first at offset %d; the largest makes a record batch of %d bytes (61-byte batch header + record): "+
					"set max.message.bytes on the topic to at least %d (create the topic empty with it before the restore, or %s), or raise the broker's message.max.bytes",
					tp.Topic, pp.Partition, f.tooLarge, limit, f.firstTooLarge, f.largest, f.largest, kafkaConfigsCmd(tp.Topic, "max.message.bytes", ptrTo(fmt.Sprint(f.largest))))
			}
			if f.badTS > 0 {
				refuse("topic %q partition %d: %d record(s) have a timestamp the target rejects: the first at offset %d has timestamp %s; the broker accepts CreateTime timestamps from now - %s to now + %s, and -1 (none): "+
					"raise message.timestamp.before.max.ms / message.timestamp.after.max.ms on the topic (create it empty with them before the restore) or log.message.timestamp.before.max.ms / after.max.ms on the broker",
					tp.Topic, pp.Partition, f.badTS, f.firstBadTS, fmtMillis(f.badTSValue), limitString(l.before), limitString(l.after))
			}
			if f.unsendable > 0 {
				refuse("topic %q partition %d: %d record(s) have a timestamp the restore's producer cannot send: the first at offset %d has timestamp %d; "+
					"franz-go carries record times as time.Time, whose nanoseconds since 1970 fit only from 1677-09-21 to 2262-04-11 (%d..%d ms), and would restore another timestamp: leave the topic out with --topics",
					tp.Topic, pp.Partition, f.unsendable, f.firstUnsendable, f.unsendableValue, int64(kgotime.ProducerMin), int64(kgotime.ProducerMax))
			}
			if f.nearTS > 0 {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q partition %d: %d record(s) (the first at offset %d) have a timestamp within 1 hour of the target's limits (before %s, after %s): "+
					"the broker checks each record with its own clock when it is produced, so a restore that takes longer, or a broker clock that is off, gets them rejected midway; raise the limits on the topic first to be safe",
					tp.Topic, pp.Partition, f.nearTS, f.firstNearTS, limitString(l.before), limitString(l.after)))
			}
			if f.nullKeys > 0 {
				refuse("topic %q partition %d: %d record(s) with a null key (the first at offset %d) cannot go to a compacted topic (cleanup.policy has compact; the broker rejects them): "+
					"leave the topic out with --topics listing the other topics (none of its records is restored then); no compacted Kafka topic can hold them (the source kept them because they were written before the topic was compacted)",
					tp.Topic, pp.Partition, f.nullKeys, f.firstNullKey)
			}
			if rb := l.retentionBytes.v; rb >= 0 {
				// The segments' raw size approximates the records' size
				// in the log (both a few bytes of framing per record).
				var raw int64
				for _, sg := range p.Segments {
					if pp.CutAt < 0 || sg.FirstOffset < pp.CutAt {
						raw += sg.RawSize
					}
				}
				if raw > rb {
					plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q partition %d: about %d bytes of records to restore, more than retention.bytes %d (%s): the broker deletes the oldest log segments beyond it after the restore; "+
						"raise retention.bytes on the topic (create it empty with it before the restore) to keep them", tp.Topic, pp.Partition, raw, rb, l.retentionBytes.source))
				}
			}
			if f.pastRetention > 0 {
				pastN += f.pastRetention
				oldest = min(oldest, f.oldest)
			}
		}
		if pastN == 0 {
			continue
		}
		tp.Retention = &RetentionPlan{RetentionMs: l.retentionMs, PastRetention: pastN, OldestTimestamp: oldest, Choice: r.o.Retention}
		past = append(past, pastTopic{tp.Topic, pastN, oldest, l.retentionMs})
		switch r.o.Retention {
		case RetentionKeep:
			var orig *string
			if tp.Action == format.ActionCreate || tp.Action == format.ActionResume {
				if c, ok := t.Configs["retention.ms"]; ok && c.Source == "DYNAMIC_TOPIC_CONFIG" && c.Value != nil {
					orig = c.Value
				}
				tp.Configs["retention.ms"] = "-1"
			} else {
				if c, ok := existing[tp.Topic]["retention.ms"]; ok && c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					orig = c.Value
				}
				if tp.PreConfigs == nil {
					tp.PreConfigs = map[string]string{}
				}
				tp.PreConfigs["retention.ms"] = "-1"
			}
			tp.Retention.Override = "retention.ms=-1"
			tp.Retention.SetBack = kafkaConfigsCmd(tp.Topic, "retention.ms", orig)
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q: %d restored record(s) are past retention.ms=%d (the oldest %s): restored with retention.ms=-1 (--retention keep); once they may be deleted, set it back: %s",
				tp.Topic, pastN, l.retentionMs, fmtMillis(oldest), tp.Retention.SetBack))
		case RetentionAcceptLoss:
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q: %d restored record(s) are past retention.ms=%d (the oldest %s): the broker deletes them at its next retention check after the restore (--retention accept-loss)",
				tp.Topic, pastN, l.retentionMs, fmtMillis(oldest)))
		}
	}
	if len(past) > 0 && r.o.Retention == RetentionUnset {
		parts := make([]string, len(past))
		for i, p := range past {
			parts[i] = fmt.Sprintf("%s: %d record(s), the oldest %s, retention.ms=%d", p.topic, p.n, fmtMillis(p.oldest), p.ms)
		}
		refuse("records are already past the target's retention.ms, and the broker would delete them at a retention check after the restore, as soon as their log segment holds nothing newer (%s): "+
			"restore with --retention keep (the topics get retention.ms=-1 and the plan says how to set it back) or --retention accept-loss (they are deleted)", strings.Join(parts, "; "))
	}
	return refusals, nil
}

// keepTimestampsOnCreate makes a topic to create CreateTime when it would
// inherit LogAppendTime from the target broker
// (log.message.timestamp.type), which would replace every restored
// timestamp with the restore time: it stays CreateTime when the source
// topic was (with a warning), and turns LogAppendTime after the records
// when the source's was (as a backed-up LogAppendTime topic does). A
// topic an earlier run of this restore created (resume) is planned as it
// was created: a run killed before the final configs still ends with
// them.
func (r *restore) keepTimestampsOnCreate(plan *Plan, tp *TopicPlan, t *format.Topic, bd brokerDefaults, validated map[string]kadm.Config) {
	const key = "message.timestamp.type"
	if tp.Action != format.ActionCreate && tp.Action != format.ActionResume || tp.FinalConfigs != nil {
		return
	}
	if _, explicit := tp.Configs[key]; explicit {
		return
	}
	inherited := bd.timestampType
	if c, ok := validated[key]; ok && c.Value != nil {
		inherited = *c.Value
	}
	if inherited != "LogAppendTime" {
		return
	}
	tp.Configs[key] = "CreateTime"
	if c, ok := t.Configs[key]; ok && c.Value != nil && *c.Value == "LogAppendTime" {
		tp.FinalConfigs = map[string]string{key: "LogAppendTime"}
		return
	}
	plan.Warnings = append(plan.Warnings, fmt.Sprintf("topic %q is created with message.timestamp.type=CreateTime, as it was on the source: the target broker's default (log.message.timestamp.type=LogAppendTime) would replace every restored timestamp with the restore time", tp.Topic))
}

// limitString shows a timestamp limit and where it comes from, e.g.
// "3600000 ms (broker log.message.timestamp.after.max.ms)".
func limitString(l topicLimit) string {
	if l.v == math.MaxInt64 {
		return fmt.Sprintf("Long.MAX_VALUE, no limit (%s)", l.source)
	}
	return fmt.Sprintf("%d ms (%s)", l.v, l.source)
}

func ptrTo(s string) *string { return &s }

// illegalTopicName says why Kafka refuses a topic name (Topic.validate:
// not empty, not "." or "..", at most 249 characters, only ASCII letters,
// digits, '.', '_' and '-'), or returns "".
func illegalTopicName(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a legal topic name", name)
	case len(name) > 249:
		return fmt.Sprintf("the name is %d characters long; the limit is 249", len(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("it contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'", c)
		}
	}
	return ""
}

// applyPreConfigs alters the configs an existing topic needs while the
// records go in (message.timestamp.type=CreateTime, retention.ms=-1).
func (r *restore) applyPreConfigs(ctx context.Context, tp *TopicPlan) error {
	if len(tp.PreConfigs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(tp.PreConfigs))
	for k := range tp.PreConfigs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var acs []kadm.AlterConfig
	for _, k := range keys {
		v := tp.PreConfigs[k]
		acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resp, err := r.adm.AlterTopicConfigs(ctx, acs, tp.Topic)
	if err == nil {
		for _, ar := range resp {
			if ar.Err != nil {
				err = fmt.Errorf("%w %s", ar.Err, ar.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("set configs %s of existing topic %q before the records: %w", configString(tp.PreConfigs), tp.Topic, err)
	}
	return nil
}
