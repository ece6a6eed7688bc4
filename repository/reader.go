package repository

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file is the one reader of a partition's segments (docs/FORMAT.md,
// "Segments"): restore, verify and the test oracles read records through
// it, so that every reader checks a segment against its manifest entry the
// same way. The checks of one segment object, against the format.Segment
// and the topic and partition the manifest names it under:
//
//   - it exists (storage.ErrNotFound is damage: the manifest names it);
//   - its stored bytes have the recorded size and SHA-256, and on S3 the
//     store's own checksum of the object (storage.ErrCorrupt is damage);
//   - it decodes (format.SegmentReader: magic, lengths, trailer, the zstd
//     frame checksum), and its header names the manifest's topic and
//     partition, checked before any record is handed out;
//   - it holds the recorded record count and first and last offsets.
//
// Three kinds of error come out, and callers must keep them apart: damage
// (a *SegmentError, or a SegmentCheck with problems: the object is wrong,
// re-running cannot help), a storage failure (wrapped "read segment <key>:
// ...", storage.IsTransient when a re-run may pass), and the caller's own
// error or ctx's.

// ErrSegmentDamaged is wrapped by every *SegmentError: a segment the
// manifest names is missing, or its stored bytes or records are not what
// the manifest says. Test with errors.Is. It is not ErrDamaged (a damaged
// manifest): the manifest was read, one object it names is wrong.
var ErrSegmentDamaged = errors.New("damaged segment")

// ErrStopReading may be returned by the record callback of ReadSegment and
// ReadPartition to end the read early without an error; the checks of the
// whole object (size, SHA-256, counts) are then skipped for the segment it
// was returned in, as they are for a segment cut short by an end offset.
var ErrStopReading = errors.New("stop reading")

// SegmentError is a segment that failed its check while it was read for
// its records (ReadSegment, ReadPartition, CountBelow, FirstAfter). Key,
// Topic and Partition are as the manifest names them; Problem says what is
// wrong in one sentence. Check holds what the read found.
type SegmentError struct {
	Key       string
	Topic     string
	Partition int32
	Problem   string
	Check     *SegmentCheck
}

func (e *SegmentError) Error() string {
	return fmt.Sprintf("segment %s (topic %q partition %d): %s", e.Key, e.Topic, e.Partition, e.Problem)
}

// Unwrap returns ErrSegmentDamaged and the decoder's error (wrapping
// format.ErrCorrupt) or the store's storage.ErrCorrupt, when there is one.
func (e *SegmentError) Unwrap() []error {
	errs := []error{ErrSegmentDamaged}
	if e.Check != nil && e.Check.DecodeErr != nil {
		errs = append(errs, e.Check.DecodeErr)
	}
	if e.Check != nil && storage.IsCorrupt(e.Check.Err) {
		errs = append(errs, e.Check.Err)
	}
	return errs
}

// SegmentCheck is what one read of a segment object found, for a caller
// to word its own account of it: Problems gives the repository's wording,
// verify words its own from the fields.
type SegmentCheck struct {
	Key       string // the segment's key, as the manifest names it
	Topic     string // the topic the manifest has it under
	Partition int32  // the partition the manifest has it under

	// Missing is true when the store has no object under Key
	// (storage.ErrNotFound): damage, the manifest names it.
	Missing bool
	// Opened is true when the store returned a body for Key.
	Opened bool
	// Err is the store's error from Get or from reading the body (not
	// found, storage.ErrCorrupt, transient, or another failure), nil when
	// the object was read without one.
	Err error
	// Bytes is the number of stored bytes read; SHA256 their hex SHA-256.
	// When Complete (the body was read to its end without an error) they
	// are the whole object's size and digest.
	Bytes    int64
	SHA256   string
	Complete bool

	// Decoded is true when the segment header was decoded (CheckHeader,
	// CheckRecords, or a read for records); HeaderTopic and
	// HeaderPartition are what it says.
	Decoded         bool
	HeaderTopic     string
	HeaderPartition int32
	// HeaderKind is the segment's kind as its first bytes say
	// (format.KindRecord or format.KindBatch), set with Decoded.
	HeaderKind string
	// HeaderOnly is true when only the header was decoded (CheckHeader):
	// Records, FirstOffset and LastOffset say nothing then.
	HeaderOnly bool
	// DecodeErr is the decoder's error (wrapping format.ErrCorrupt, or the
	// zstd decoder's), nil when the segment decoded to its trailer.
	DecodeErr error
	// Records is the number of records decoded; FirstOffset and LastOffset
	// their original offsets (-1 when none), MinTimestamp and MaxTimestamp
	// their smallest and largest timestamps in milliseconds (0 when none).
	Records                    int64
	FirstOffset, LastOffset    int64
	MinTimestamp, MaxTimestamp int64
}

// Corrupt reports whether the store found the object's bytes differ from
// its own checksum of them (storage.ErrCorrupt): damage.
func (c *SegmentCheck) Corrupt() bool { return storage.IsCorrupt(c.Err) }

// OtherPartition reports whether the decoded header names another topic or
// partition than the manifest has the segment under.
func (c *SegmentCheck) OtherPartition() bool {
	return c.Decoded && (c.HeaderTopic != c.Topic || c.HeaderPartition != c.Partition)
}

// missingProblem is the wording of a segment the store does not have.
const missingProblem = "missing: the manifest names it, the repository has no such object"

// Problems says what is wrong with the segment against s, its manifest
// entry, in the repository's wording (the restore's pre-check shows it):
// missing; the store's checksum error; other size or SHA-256; not
// decoding; a header of another partition; other record counts or
// offsets. It is empty when nothing is wrong. It assumes a complete read
// (CheckSegment without an error).
func (c *SegmentCheck) Problems(s format.Segment) []string {
	switch {
	case c.Missing:
		return []string{missingProblem}
	case c.Corrupt():
		return []string{c.Err.Error()}
	}
	var problems []string
	if c.Bytes != s.Size {
		problems = append(problems, fmt.Sprintf("size %d bytes, the manifest says %d", c.Bytes, s.Size))
	}
	if c.SHA256 != s.SHA256 {
		problems = append(problems, fmt.Sprintf("SHA-256 %s, the manifest says %s", c.SHA256, s.SHA256))
	}
	if !c.Decoded && c.DecodeErr == nil {
		return problems // a shallow check
	}
	if c.DecodeErr != nil {
		return append(problems, fmt.Sprintf("does not decode: %v", c.DecodeErr))
	}
	return append(problems, c.recordProblems(s)...)
}

// headerProblems compares the segment's header with what the manifest says
// of it: the topic, partition and kind.
func (c *SegmentCheck) headerProblems(s format.Segment) []string {
	var problems []string
	if c.OtherPartition() {
		problems = append(problems, otherPartition(c))
	}
	if want := cmp.Or(s.Kind, format.KindRecord); c.Decoded && c.HeaderKind != want {
		problems = append(problems, fmt.Sprintf("it is a %s segment, the manifest says %s", c.HeaderKind, want))
	}
	return problems
}

// recordProblems compares what the segment decoded to with what the
// manifest says of it: the header's topic, partition and kind, and (unless
// only the header was decoded) the record count, the first and last
// offsets.
func (c *SegmentCheck) recordProblems(s format.Segment) []string {
	problems := c.headerProblems(s)
	if c.HeaderOnly {
		return problems
	}
	if c.Records != s.Records {
		problems = append(problems, fmt.Sprintf("decodes to %d records, the manifest says %d", c.Records, s.Records))
	}
	if c.Records > 0 && (c.FirstOffset != s.FirstOffset || c.LastOffset != s.LastOffset) {
		problems = append(problems, fmt.Sprintf("holds offsets %d..%d, the manifest says %d..%d", c.FirstOffset, c.LastOffset, s.FirstOffset, s.LastOffset))
	}
	return problems
}

func otherPartition(c *SegmentCheck) string {
	return fmt.Sprintf("its header says topic %q partition %d, the manifest has it for topic %q partition %d (a segment of another partition)",
		c.HeaderTopic, c.HeaderPartition, c.Topic, c.Partition)
}

// CheckDepth is how much of a segment CheckSegment decodes. Every depth
// reads the whole object and checks its size and SHA-256 against the
// manifest, which finds every storage fault (a flipped byte, a truncated,
// swapped or missing object).
type CheckDepth int

const (
	// CheckBytes decodes nothing: the size and SHA-256 only (verify
	// without --deep).
	CheckBytes CheckDepth = iota
	// CheckHeader also decodes the segment's header, not its records:
	// the topic, partition and kind it names (the restore's default
	// pre-check, restore --precheck digest). Records that differ from
	// the manifest's counts and offsets in a segment whose bytes match
	// its SHA-256 (a writer's fault) are not found; ReadSegment finds
	// them at the trailer.
	CheckHeader
	// CheckRecords also decodes every record to the trailer: the record
	// count and the first and last offsets (verify --deep, restore
	// --precheck deep).
	CheckRecords
)

// CheckSegment reads the segment object s, which the manifest names under
// topic and partition, to its end, streaming (memory does not grow with
// the segment: one zstd decoder and 64 KiB of buffers), and returns what
// it found, decoding as much as depth says (CheckBytes, CheckHeader or
// CheckRecords). Damage is not an error: a missing object, a
// storage.ErrCorrupt read, other bytes or records than s says are in the
// check (see SegmentCheck.Problems). The error is for a read that failed
// otherwise ("read segment <key>: ...", storage.IsTransient when a re-run
// may pass, or ctx's error); the check is returned with it, saying how
// far the read got.
func CheckSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, depth CheckDepth) (*SegmentCheck, error) {
	c := &SegmentCheck{Key: s.Key, Topic: topic, Partition: partition, FirstOffset: -1, LastOffset: -1}
	rc, err := store.Get(ctx, s.Key)
	if errors.Is(err, storage.ErrNotFound) {
		c.Missing, c.Err = true, err
		return c, nil
	}
	if err != nil && storage.IsCorrupt(err) && ctx.Err() == nil {
		// Damage found as the object was opened (an encrypted
		// envelope's header cut or changed: storage.Encrypt).
		c.Err = err
		return c, nil
	}
	if err != nil {
		c.Err = err
		return c, fmt.Errorf("read segment %s: %w", s.Key, err)
	}
	defer rc.Close()
	c.Opened = true
	src := &storage.ReadTracker{R: rc}
	hw := format.NewHashingWriter(io.Discard)
	tee := io.TeeReader(src, hw)
	switch depth {
	case CheckHeader:
		c.DecodeErr = c.decodeHeader(tee)
	case CheckRecords:
		c.DecodeErr = c.decode(tee, false, nil)
	}
	if _, err := io.Copy(io.Discard, tee); err != nil && src.Err == nil {
		src.Err = err
	}
	c.SHA256, c.Bytes = hw.Sum()
	c.Err = src.Err
	switch {
	case src.Err == nil:
		c.Complete = true
		return c, nil
	case ctx.Err() != nil:
		return c, fmt.Errorf("read segment %s: %w", s.Key, ctx.Err())
	case storage.IsCorrupt(src.Err):
		return c, nil
	}
	return c, fmt.Errorf("read segment %s: %w", s.Key, src.Err)
}

// decodeHeader decodes the header of the segment on r into c (its topic,
// partition and kind), and no record: a record segment's zstd frame is
// decoded only as far as the header's block. It returns the decoder's
// error.
func (c *SegmentCheck) decodeHeader(r io.Reader) error {
	sr, err := format.NewSegmentReader(r)
	if err != nil {
		return err
	}
	defer sr.Close()
	c.Decoded, c.HeaderOnly = true, true
	c.HeaderTopic, c.HeaderPartition, c.HeaderKind = sr.Topic, sr.Partition, sr.Kind()
	return nil
}

// decode decodes the segment on r into c, calling fn (when not nil) for
// each record after the header was found to name c's topic and partition.
// With offsetsOnly, fn's records have no key, value or headers, and one
// record is reused for every call (fn must not keep it). It returns the
// decoder's error, nil after the trailer, or fn's error (c.DecodeErr is
// then not set by the caller: see ReadSegment).
func (c *SegmentCheck) decode(r io.Reader, offsetsOnly bool, fn func(*format.Record) error) error {
	sr, err := format.NewSegmentReader(r)
	if err != nil {
		return err
	}
	defer sr.Close()
	reuse := fn == nil || offsetsOnly
	if reuse {
		sr.SkipContents() // a check or a count: nothing needs the keys, values and headers
	}
	c.Decoded, c.HeaderTopic, c.HeaderPartition, c.HeaderKind = true, sr.Topic, sr.Partition, sr.Kind()
	if fn != nil && c.OtherPartition() {
		return errOtherPartition
	}
	var checked format.Record // a check's one record, reused: nothing keeps it
	for {
		rec := &checked
		if !reuse {
			rec = new(format.Record) // fn may keep it
		}
		err := sr.Next(rec)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c.Records == 0 {
			c.FirstOffset, c.MinTimestamp, c.MaxTimestamp = rec.Offset, rec.Timestamp, rec.Timestamp
		}
		c.Records++
		c.LastOffset = rec.Offset
		c.MinTimestamp, c.MaxTimestamp = min(c.MinTimestamp, rec.Timestamp), max(c.MaxTimestamp, rec.Timestamp)
		if fn != nil {
			if err := fn(rec); err != nil {
				return &callerError{err}
			}
		}
	}
}

// errOtherPartition ends a read for records at a header of another
// partition, before any record is handed out.
var errOtherPartition = errors.New("a segment of another partition")

// callerError carries the record callback's error out of decode, apart
// from the decoder's.
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }

// ReadSegment decodes the segment object s, which the manifest names under
// topic and partition, calling fn for each record with an original offset
// below end (-1: no end), in offset order. The header is checked before fn
// sees a record; at the trailer the size, SHA-256, record count and first
// and last offsets are checked against s. The read ends early, skipping
// those checks of the whole object, at the first record at or above end
// or when fn returns ErrStopReading; it returns nil then.
//
// Damage is a *SegmentError (wrapping ErrSegmentDamaged): missing, the
// store's storage.ErrCorrupt, not decoding (at the first bad byte: "does
// not decode after offset N: ..."), a header of another partition, other
// size, SHA-256, counts or offsets. A storage failure is returned wrapped
// as "read segment <key>: ..." (storage.IsTransient when a re-run may
// pass); fn's own error is returned as it is.
func ReadSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, end int64, fn func(*format.Record) error) error {
	return readSegment(ctx, store, topic, partition, s, end, false, fn)
}

// readSegment is ReadSegment; with offsetsOnly, fn's records have their
// partition, offset and timestamps only (no key, value or headers) and
// are one record reused: for readers that count (CountBelow).
func readSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, end int64, offsetsOnly bool, fn func(*format.Record) error) error {
	c := &SegmentCheck{Key: s.Key, Topic: topic, Partition: partition, FirstOffset: -1, LastOffset: -1}
	damaged := func(problem string) error {
		return &SegmentError{Key: s.Key, Topic: topic, Partition: partition, Problem: problem, Check: c}
	}
	rc, err := store.Get(ctx, s.Key)
	if errors.Is(err, storage.ErrNotFound) {
		c.Missing, c.Err = true, err
		return damaged(missingProblem)
	}
	if err != nil && storage.IsCorrupt(err) && ctx.Err() == nil {
		c.Err = err
		return damaged(fmt.Sprintf("cannot be read: %v", err))
	}
	if err != nil {
		c.Err = err
		return fmt.Errorf("read segment %s: %w", s.Key, err)
	}
	defer rc.Close()
	c.Opened = true
	src := &storage.ReadTracker{R: rc}
	hw := format.NewHashingWriter(io.Discard)
	tee := io.TeeReader(src, hw)
	// A decoder reading a body that failed gives the failure as its own
	// verdict: the store's error decides first.
	storeFailed := func() error {
		c.Err = src.Err
		if src.Err != nil && !storage.IsCorrupt(src.Err) {
			return fmt.Errorf("read segment %s: %w", s.Key, src.Err)
		}
		return nil
	}
	stopped := false
	err = c.decode(tee, offsetsOnly, func(r *format.Record) error {
		if end >= 0 && r.Offset >= end {
			return ErrStopReading
		}
		return fn(r)
	})
	if ce, ok := err.(*callerError); ok {
		if !errors.Is(ce.err, ErrStopReading) {
			return ce.err
		}
		stopped = true
	}
	if stopped {
		return nil
	}
	if err != nil {
		if ferr := storeFailed(); ferr != nil {
			return ferr
		}
		if c.Corrupt() {
			return damaged(c.Err.Error())
		}
		if errors.Is(err, errOtherPartition) {
			return damaged(otherPartition(c))
		}
		c.DecodeErr = err
		if !c.Decoded {
			return damaged(fmt.Sprintf("does not decode: %v", err))
		}
		if c.Records == 0 {
			return damaged(fmt.Sprintf("does not decode before its first record: %v", err))
		}
		return damaged(fmt.Sprintf("does not decode after offset %d: %v", c.LastOffset, err))
	}
	if _, err := io.Copy(io.Discard, tee); err != nil && src.Err == nil {
		src.Err = err
	}
	if ferr := storeFailed(); ferr != nil {
		return ferr
	}
	if c.Corrupt() {
		return damaged(c.Err.Error())
	}
	c.SHA256, c.Bytes = hw.Sum()
	c.Complete = true
	if problems := c.Problems(s); len(problems) > 0 {
		return damaged(strings.Join(problems, "; "))
	}
	return nil
}

// ReadPartition calls fn for every record of partition p (as the manifest
// m has it under topic) with an original offset below end (-1: no end), in
// offset order, reading p.Segments one after the other with ReadSegment
// (its checks and errors) and none that starts at or above end. fn may
// return ErrStopReading to end the read without an error.
func ReadPartition(ctx context.Context, store storage.Backend, topic string, p *format.Partition, end int64, fn func(*format.Record) error) error {
	stop := false
	for _, s := range p.Segments {
		if end >= 0 && s.FirstOffset >= end {
			return nil
		}
		err := ReadSegment(ctx, store, topic, p.Partition, s, end, func(r *format.Record) error {
			if err := fn(r); err != nil {
				stop = errors.Is(err, ErrStopReading)
				return err
			}
			return nil
		})
		if err != nil || stop {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// CountBelow returns the number of p's records with an original offset
// below o and below end (-1: no end), from the manifest's segment record
// counts, decoding (with ReadSegment's checks) at most the one segment
// that straddles the bound, its records' offsets only: no key, value or
// header is copied (SegmentReader.SkipContents).
func CountBelow(ctx context.Context, store storage.Backend, topic string, p *format.Partition, o, end int64) (int64, error) {
	bound := o
	if end >= 0 && end < bound {
		bound = end
	}
	var n int64
	for _, s := range p.Segments {
		switch {
		case s.LastOffset < bound:
			n += s.Records
		case s.FirstOffset >= bound:
			return n, nil
		default:
			err := readSegment(ctx, store, topic, p.Partition, s, bound, true, func(*format.Record) error {
				n++
				return nil
			})
			if err != nil {
				return 0, err
			}
			return n, nil
		}
	}
	return n, nil
}

// FirstAfter returns the original offset of p's first record with a
// timestamp after millis (milliseconds since the Unix epoch), or -1 when
// no record is after it: where a restore's --to-time cut ends the
// partition. The manifest's segment timestamp ranges skip the segments
// that cannot hold such a record; the first that can is decoded, with
// ReadSegment's checks.
func FirstAfter(ctx context.Context, store storage.Backend, topic string, p *format.Partition, millis int64) (int64, error) {
	for _, s := range p.Segments {
		if s.MaxTimestamp <= millis {
			continue
		}
		var found int64 = -1
		err := ReadSegment(ctx, store, topic, p.Partition, s, -1, func(r *format.Record) error {
			if r.Timestamp > millis {
				found = r.Offset
				return ErrStopReading
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if found >= 0 {
			return found, nil
		}
	}
	return -1, nil
}
