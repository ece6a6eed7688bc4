// Package verify checks a backup: that every object its manifest names is
// in the repository with the size and SHA-256 the manifest records, that
// every segment decodes to the records, offsets and counts the manifest
// says (deep), and that a restored cluster holds exactly the backup's
// records, in order, field for field (against a cluster).
package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Problem is one thing wrong with a backup or a restored cluster. Object,
// Topic, Partition and Offset say where, as far as they apply (Offset is
// -1 when it does not).
type Problem struct {
	Object    string `json:"object,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Message   string `json:"message"`
	// StateDigest is true for a changelog partition whose state digest,
	// recomputed from the chain's records by the deep check, is not the
	// manifest's (its segments passed their checks).
	StateDigest bool `json:"state_digest,omitempty"`
	// KeyID is set when the object is encrypted with a key the store's
	// keyring does not hold (storage.KeyError): the key id it needs. Not
	// damage: the fix is storage.encryption.previous_keys.
	KeyID string `json:"key_id,omitempty"`
}

func (p Problem) String() string {
	where := p.Object
	if p.Topic != "" {
		where = fmt.Sprintf("%s topic %q partition %d", where, p.Topic, p.Partition)
	}
	if p.Offset >= 0 {
		where += fmt.Sprintf(" offset %d", p.Offset)
	}
	if where == "" {
		return p.Message
	}
	return fmt.Sprintf("%s: %s", where, p.Message)
}

// Result is the outcome of a check.
type Result struct {
	BackupID string    `json:"backup_id"`
	Deep     bool      `json:"deep"`
	Segments int       `json:"segments"`
	Bytes    int64     `json:"bytes"`   // stored bytes read
	Records  int64     `json:"records"` // records decoded (deep) or compared (against a cluster)
	Problems []Problem `json:"problems"`
	// States holds, against a cluster, one entry per changelog partition
	// compared without a cut (class changelog, or a source-topic
	// changelog): the state digest of the target's partition (every record
	// from its log start to its end, read_committed) against the
	// manifest's. A state that differs is also a Problem.
	States []StoreState `json:"states,omitempty"`
	// Warnings name what the backup does not hold without being damaged:
	// each partition's unread range (partition_cuts[].unread, FORMAT.md).
	// They do not make OK false.
	Warnings []string `json:"warnings,omitempty"`
}

// unreadWarnings are the warnings of m's unread ranges.
func unreadWarnings(m *format.Manifest) []string {
	var ws []string
	for _, t := range m.Topics {
		for i := range t.PartitionCuts {
			if r := format.UnreadRange(t.Name, &t.PartitionCuts[i]); r != "" {
				ws = append(ws, r+" are not in this backup: the broker answered its fetches with no records (unread, not damage); the next backup reads them")
			}
		}
	}
	return ws
}

// OK reports whether no problem was found.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// Repository checks every segment m names: it exists, has the recorded
// size and SHA-256, and with deep it decodes to exactly the recorded
// records, first and last offsets and timestamp range, and each partition's
// segments add up to its record count inside [start_offset, end_offset),
// and each changelog partition's state digest, recomputed from its
// records, is the manifest's (checkStateDigest).
// Problems are collected, not returned as errors; the error is for a
// repository that cannot be read at all, a storage failure that outlasted
// the backend's retries (storage.IsTransient: it says nothing of the
// object, a re-run may pass), or a cancelled context.
func Repository(ctx context.Context, store storage.Backend, m *format.Manifest, deep bool) (*Result, error) {
	res := &Result{BackupID: m.BackupID, Deep: deep, Problems: []Problem{}, Warnings: unreadWarnings(m)}
	for _, t := range slices.Concat(m.Topics, m.InFlight) { // in-flight tails are checked like other partitions
		for _, p := range t.PartitionCuts {
			var sum int64
			before := len(res.Problems)
			for _, s := range p.Segments {
				res.Segments++
				sum += s.Records
				if err := ctx.Err(); err != nil {
					return res, err
				}
				if err := checkSegment(ctx, store, t.Name, p, s, deep, res); err != nil {
					return res, err
				}
			}
			if sum != p.Records {
				res.Problems = append(res.Problems, Problem{Topic: t.Name, Partition: p.Partition, Offset: -1,
					Message: fmt.Sprintf("the manifest's segments hold %d records, its partition record count says %d", sum, p.Records)})
			}
			if deep && len(res.Problems) == before {
				if err := checkStateDigest(ctx, store, &t, p, res); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}

// checkStateDigest recomputes the state digest of changelog partition p of
// t (class changelog, or a source-topic changelog) from the chain's
// records, as the backup computed it (every record of its segments, in
// order; docs/FORMAT.md, "State digest"), and adds a Problem when it is
// not the manifest's: a restore of this backup would fail its state check
// however well it restored the records. A partition without a digest (a
// backup written before digests existed) is not checked. It reads the
// partition's segments a second time; called only when they passed.
func checkStateDigest(ctx context.Context, store storage.Backend, t *format.Topic, p format.Partition, res *Result) error {
	d := stateDigester(t, -1)
	if d == nil || p.StateDigest == nil {
		return nil
	}
	if err := repository.ReadPartition(ctx, store, t.Name, &p, -1, func(r *format.Record) error {
		d.Add(r.Key, r.Value)
		return nil
	}); err != nil {
		if errors.Is(err, repository.ErrSegmentDamaged) && !storage.IsTransient(err) && ctx.Err() == nil {
			res.Problems = append(res.Problems, Problem{Topic: t.Name, Partition: p.Partition, Offset: -1,
				Message: fmt.Sprintf("state digest not recomputed: %v", err)})
			return nil
		}
		return fmt.Errorf("state digest of topic %q partition %d: %w", t.Name, p.Partition, err)
	}
	if got := d.Sum(); !got.Equal(*p.StateDigest) {
		res.Problems = append(res.Problems, Problem{Topic: t.Name, Partition: p.Partition, Offset: -1, StateDigest: true,
			Message: fmt.Sprintf("state digest %s (%d keys) recomputed from the chain's records, the manifest's state_digest says %s (%d keys): "+
				"the manifest or the records were altered, and a restore of this backup fails its state check", got.Digest, got.Keys, p.StateDigest.Digest, p.StateDigest.Keys)})
	}
	return nil
}

// checkSegment checks segment s of partition p with the repository's
// reader (repository.CheckSegment) and words what it found as verify's
// problems; the error is a storage failure a re-run may not repeat
// (storage.IsTransient) or ctx's.
func checkSegment(ctx context.Context, store storage.Backend, topic string, p format.Partition, s format.Segment, deep bool, res *Result) error {
	bad := func(offset int64, format string, args ...any) {
		res.Problems = append(res.Problems, Problem{Object: s.Key, Topic: topic, Partition: p.Partition, Offset: offset, Message: fmt.Sprintf(format, args...)})
	}
	depth := repository.CheckBytes
	if deep {
		depth = repository.CheckRecords
	}
	c, err := repository.CheckSegment(ctx, store, topic, p.Partition, s, depth)
	res.Bytes += c.Bytes
	switch {
	case c.Missing:
		bad(-1, "missing: the manifest names it but the repository has no such object")
		return nil
	case err != nil && (storage.IsTransient(err) || ctx.Err() != nil):
		return err
	case !c.Opened:
		if ke, ok := errors.AsType[*storage.KeyError](c.Err); ok {
			res.Problems = append(res.Problems, Problem{Object: s.Key, Topic: topic, Partition: p.Partition, Offset: -1, KeyID: ke.KeyID,
				Message: fmt.Sprintf("needs key id %s, which storage.encryption does not hold (configured key ids: %s): the object is not damaged", ke.KeyID, strings.Join(ke.Configured, ", "))})
			return nil
		}
		bad(-1, "cannot be read: %v", c.Err)
		return nil
	case c.Err != nil:
		// A refusal mid-body, or the store's own checksum of the object
		// (storage.ErrCorrupt): the object, not the run.
		bad(-1, "read failed after %d bytes: %v", c.Bytes, c.Err)
		return nil
	}
	if c.Bytes != s.Size {
		bad(-1, "size %d bytes, the manifest says %d", c.Bytes, s.Size)
	}
	if c.SHA256 != s.SHA256 {
		bad(-1, "SHA-256 %s, the manifest says %s: the object is damaged or was replaced", c.SHA256, s.SHA256)
	}
	if !deep {
		return nil
	}
	res.Records += c.Records
	first, last := c.FirstOffset, c.LastOffset
	switch {
	case c.DecodeErr != nil && c.Records == 0:
		bad(s.FirstOffset, "does not decode before its first record: %v", c.DecodeErr)
	case c.DecodeErr != nil:
		bad(last+1, "does not decode after offset %d: %v", last, c.DecodeErr)
	case c.OtherPartition():
		bad(-1, "holds topic %q partition %d", c.HeaderTopic, c.HeaderPartition)
	case c.Records != s.Records:
		bad(-1, "decodes to %d records, the manifest says %d", c.Records, s.Records)
	case first != s.FirstOffset || last != s.LastOffset:
		bad(first, "holds offsets %d..%d, the manifest says %d..%d", first, last, s.FirstOffset, s.LastOffset)
	case c.MinTimestamp != s.MinTimestamp || c.MaxTimestamp != s.MaxTimestamp:
		bad(-1, "timestamps %d..%d, the manifest says %d..%d", c.MinTimestamp, c.MaxTimestamp, s.MinTimestamp, s.MaxTimestamp)
	case first < p.StartOffset || last >= p.EndOffset:
		bad(first, "offsets %d..%d lie outside the partition's cut [%d, %d)", first, last, p.StartOffset, p.EndOffset)
	}
	return nil
}

// Cut says where a restore ended a partition: the original offset of the
// first record not restored (-1: the whole partition was restored).
type Cut func(topic string, partition int32) int64

// AgainstCluster compares each partition of the backup with the same
// partition on a restored cluster: the target must hold exactly the
// backup's records below the cut, in order, with equal key, value,
// headers and timestamp (offsets differ: a restore renumbers them). It
// reads the target with read_committed up to its current end. Only the
// topics in topics are compared (nil: every topic of the backup).
func AgainstCluster(ctx context.Context, store storage.Backend, m *format.Manifest, target []kgo.Opt, topics []string, cut Cut) (*Result, error) {
	return AgainstRestore(ctx, store, m, target, topics, cut, nil)
}

// OffsetMaps returns the offset map a restore recorded for one restored
// partition (the report's offset_map: which original offset each restored
// record had), or nil when there is none.
type OffsetMaps func(topic string, partition int32) *offsets.Map

// AgainstRestore is AgainstCluster for a known restore: with maps, each
// restored record's original offset by the restore's offset map must be
// the original offset of the backup's record it is compared with, so that
// a record restored from another place of the log (or another partition)
// is found even when its content is equal. maps nil checks no offsets.
// Every segment's header must name the topic and partition the manifest
// has it under, with or without maps: a segment of another partition is a
// problem, not a source of records to compare.
func AgainstRestore(ctx context.Context, store storage.Backend, m *format.Manifest, target []kgo.Opt, topics []string, cut Cut, maps OffsetMaps) (*Result, error) {
	res := &Result{BackupID: m.BackupID, Problems: []Problem{}}
	cl, err := kgo.NewClient(target...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "target cluster"); err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	// In-flight tails (Manifest.InFlight) are on the target only when the
	// restore named them among its topics.
	all := slices.Clone(m.Topics)
	if topics != nil {
		all = append(all, m.InFlight...)
	}
	for _, t := range all {
		if topics != nil && !slices.Contains(topics, t.Name) {
			continue
		}
		starts, err := adm.ListStartOffsets(ctx, t.Name)
		if err != nil {
			return res, fmt.Errorf("list start offsets of %q on the target: %w", t.Name, err)
		}
		ends, err := adm.ListEndOffsets(ctx, t.Name)
		if err != nil {
			return res, fmt.Errorf("list end offsets of %q on the target: %w", t.Name, err)
		}
		for _, p := range t.PartitionCuts {
			so, ok := starts.Lookup(t.Name, p.Partition)
			eo, _ := ends.Lookup(t.Name, p.Partition)
			if !ok || so.Err != nil {
				msg := "missing on the target"
				if ok && so.Err != nil {
					msg += fmt.Sprintf(" (%v)", so.Err)
				}
				res.Problems = append(res.Problems, Problem{Topic: t.Name, Partition: p.Partition, Offset: -1, Message: msg})
				continue
			}
			end := int64(-1)
			if cut != nil {
				end = cut(t.Name, p.Partition)
			}
			var om *offsets.Map
			if maps != nil {
				om = maps(t.Name, p.Partition)
			}
			if err := comparePartition(ctx, store, target, m, &t, p, end, so.Offset, eo.Offset, om, res); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func comparePartition(ctx context.Context, store storage.Backend, target []kgo.Opt, m *format.Manifest, t *format.Topic, p format.Partition, cut, start, end int64, om *offsets.Map, res *Result) error {
	topic := t.Name
	problem := func(off int64, format string, args ...any) {
		res.Problems = append(res.Problems, Problem{Topic: topic, Partition: p.Partition, Offset: off, Message: fmt.Sprintf(format, args...)})
	}
	rawGot := make(chan *kgo.Record, 256)
	errc := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { errc <- readPartition(rctx, target, topic, p.Partition, start, end, rawGot) }()
	// Every record taken from the target goes through next, which feeds
	// the state digest of a changelog partition (digest non-nil).
	digest := stateDigester(t, cut)
	next := func() (*kgo.Record, bool) {
		rec, ok := <-rawGot
		if ok && digest != nil {
			digest.Add(rec.Key, rec.Value)
		}
		return rec, ok
	}

	var n int64
	mismatch := false
	for _, s := range p.Segments {
		if cut >= 0 && s.FirstOffset >= cut {
			break
		}
		err := repository.ReadSegment(ctx, store, topic, p.Partition, s, cut, func(want *format.Record) error {
			if mismatch {
				return nil
			}
			rec, ok := next()
			if !ok {
				problem(start+n, "missing: the target ends at offset %d; the backup's record at original offset %d (and any after it) is not there", start+n, want.Offset)
				mismatch = true
				return nil
			}
			res.Records++
			if diff := differ(want, rec); diff != "" {
				problem(rec.Offset, "changed: differs from the backup's record at original offset %d: %s", want.Offset, diff)
				mismatch = true
			} else if orig, ok := originalOf(om, rec.Offset); om != nil && (!ok || orig != want.Offset) {
				problem(rec.Offset, "moved: equal to the backup's record at original offset %d, but the restore's offset map says it was restored from %s", want.Offset, orig2s(orig, ok))
				mismatch = true
			}
			n++
			return nil
		})
		if err := segmentDamage(s, err); err != nil {
			return err
		}
		if se, ok := errors.AsType[*repository.SegmentError](err); ok {
			res.Problems = append(res.Problems, Problem{Object: s.Key, Topic: topic, Partition: p.Partition, Offset: -1,
				Message: fmt.Sprintf("%s: the backup is damaged; the target cannot be compared with it", se.Problem)})
			mismatch = true
		}
	}
	if !mismatch {
		if rec, ok := next(); ok {
			problem(rec.Offset, "extra: the target holds a record the backup does not (key %q)", rec.Key)
		}
	}
	if digest != nil {
		// The state is that of every record on the target, those after a
		// difference too.
		for _, ok := next(); ok; _, ok = next() {
		}
	} else {
		cancel()
		for range rawGot {
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("read topic %q partition %d on the target: %w", topic, p.Partition, err)
	}
	if digest != nil {
		st := compareState(m, t, p, digest.Sum())
		res.States = append(res.States, st)
		if st.Result == format.StateDigestDifferent {
			problem(-1, "state differs: store %q holds another state on the target than in the backup (state digest %d keys %s on the target, %d keys %s in the backup)",
				st.Store, st.Target.Keys, st.Target.Digest, st.Backup.Keys, st.Backup.Digest)
		}
	}
	return nil
}

// segmentDamage is comparePartition's error for what the reader found
// reading segment s: a segment that is missing, or does not decode, or
// that the store's checksum refuses, cannot be compared and ends the
// comparison ("read segment <key>: ..." wrapping storage.ErrNotFound,
// "segment <key>: ..." wrapping format.ErrCorrupt or storage.ErrCorrupt); a
// storage failure is returned as it is. nil for no error, and for a
// *repository.SegmentError that read to its end (a header of another
// partition, other counts or checksums): the caller names that one as a
// problem.
func segmentDamage(s format.Segment, err error) error {
	se, ok := errors.AsType[*repository.SegmentError](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case se.Check.Missing:
		return fmt.Errorf("read segment %s: %w", s.Key, se.Check.Err)
	case se.Check.DecodeErr != nil:
		return fmt.Errorf("segment %s: %w", s.Key, se.Check.DecodeErr)
	case se.Check.Corrupt():
		return fmt.Errorf("segment %s: %w", s.Key, se.Check.Err)
	}
	return nil
}

func originalOf(om *offsets.Map, newOff int64) (int64, bool) {
	if om == nil {
		return 0, false
	}
	return om.Original(newOff)
}

func orig2s(orig int64, ok bool) string {
	if !ok {
		return "no original offset (the map has no record there)"
	}
	return fmt.Sprintf("original offset %d", orig)
}

// readPartition sends the partition's records in [start, end) to out with
// read_committed, then closes out.
func readPartition(ctx context.Context, target []kgo.Opt, topic string, p int32, start, end int64, out chan<- *kgo.Record) error {
	defer close(out)
	if end <= start {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(target), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(start)}}))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	idle := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		got := false
		var last int64 = -1
		for _, rec := range fs.Records() {
			got = true
			last = rec.Offset
			if rec.Offset >= end {
				return nil
			}
			select {
			case out <- rec:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if last >= end-1 {
			return nil
		}
		if got {
			idle = time.Now()
		} else if time.Since(idle) > 5*time.Second {
			// Markers or aborted records at the end: nothing more to read.
			return nil
		}
	}
}

// differ names the first field in which a restored record differs from the
// backed-up one ("" when equal): key, value, headers (order, duplicates,
// null vs empty), timestamp.
func differ(want *format.Record, got *kgo.Record) string {
	switch {
	case (want.Key == nil) != (got.Key == nil) || !bytes.Equal(want.Key, got.Key):
		return fmt.Sprintf("key %s, want %s", show(got.Key), show(want.Key))
	case (want.Value == nil) != (got.Value == nil) || !bytes.Equal(want.Value, got.Value):
		return fmt.Sprintf("value %s, want %s", show(got.Value), show(want.Value))
	case want.Timestamp != kgotime.Millis(got.Timestamp):
		return fmt.Sprintf("timestamp %d, want %d", kgotime.Millis(got.Timestamp), want.Timestamp)
	case len(want.Headers) != len(got.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i, h := range want.Headers {
		g := got.Headers[i]
		if h.Key != g.Key || (h.Value == nil) != (g.Value == nil) || !bytes.Equal(h.Value, g.Value) {
			return fmt.Sprintf("header %d is %q=%s, want %q=%s", i, g.Key, show(g.Value), h.Key, show(h.Value))
		}
	}
	return ""
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", b[:40], len(b))
	}
	return fmt.Sprintf("%q", b)
}
