// Package format is the backup repository format of kafkastreams-dr: the
// object layout under a storage prefix, the segment encoding of records and
// the manifest. docs/FORMAT.md is the specification; this package is its
// reference implementation and golden vectors in testdata/ pin it.
package format

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// Version is the format_version of a manifest whose segments are all
// record segments: what this package writes unless a segment is of kind
// batch (VersionBatch, the highest it reads).
const Version = 1

// segmentMagic opens every uncompressed segment stream: "KDRSEG" and the
// two-byte segment encoding version 0x0001.
var segmentMagic = [8]byte{'K', 'D', 'R', 'S', 'E', 'G', 0, 1}

const (
	tagRecord  = 1 // a record follows
	tagTrailer = 0 // the trailer follows; nothing may come after it
)

// TimestampType is a record's timestamp type, as in Kafka's record batch
// attributes (org.apache.kafka.common.record.TimestampType).
type TimestampType int8

const (
	CreateTime    TimestampType = 0 // the producer set the timestamp
	LogAppendTime TimestampType = 1 // the broker set it (message.timestamp.type=LogAppendTime)
)

func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return fmt.Sprintf("TimestampType(%d)", int8(t))
}

// Header is one record header. Kafka header keys are non-null strings (any
// bytes are kept as they are, no UTF-8 check); a nil Value is a null header
// value, distinct from an empty one.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as backed up. Key and Value are nil for null
// (a tombstone value) and non-nil with length 0 for empty: the two are never
// confused. Headers keep their order and duplicates.
type Record struct {
	Partition     int32
	Offset        int64 // the record's offset in the source partition
	Timestamp     int64 // milliseconds since the Unix epoch; may be negative
	TimestampType TimestampType
	Key           []byte
	Value         []byte
	Headers       []Header
}

// EncodedSize is the number of bytes the record takes in the uncompressed
// segment stream (its tag included).
func (r *Record) EncodedSize() int {
	n := 1 + 4 + 8 + 8 + 1 + 4 + len(r.Key) + 4 + len(r.Value) + 4
	for _, h := range r.Headers {
		n += 4 + len(h.Key) + 4 + len(h.Value)
	}
	return n
}

// SegmentStats summarises the records of one segment; the writer computes it
// and the trailer and the manifest carry it.
type SegmentStats struct {
	Records        int64 // number of records
	FirstOffset    int64 // offset of the first record, -1 when empty
	LastOffset     int64 // offset of the last record, -1 when empty
	MinTimestamp   int64 // smallest record timestamp (ms), 0 when empty
	MaxTimestamp   int64 // largest record timestamp (ms), 0 when empty
	MaxRecordBytes int64 // largest key+value+headers size of one record, in bytes
	NullKeys       int64 // records with a null key
	RawBytes       int64 // uncompressed stream length in bytes
}

// SegmentWriter encodes records of one partition into a zstd-compressed
// segment stream. It buffers at most one zstd window; records go to the
// underlying writer as they are compressed. Not safe for concurrent use.
type SegmentWriter struct {
	partition int32
	zw        *zstd.Encoder
	level     CompressionLevel // zw's, to pool it again on Close
	bw        *bufio.Writer
	stats     SegmentStats
	lastOff   int64
	scratch   [8]byte
	err       error
}

// NewSegmentWriter starts a segment for topic and partition on w. Records
// must then be written in strictly increasing offset order. Close writes the
// trailer and flushes; it does not close w.
func NewSegmentWriter(w io.Writer, topic string, partition int32) (*SegmentWriter, error) {
	return NewSegmentWriterLevel(w, topic, partition, CompressionDefault)
}

// NewSegmentWriterLevel is NewSegmentWriter compressing at level (""
// is CompressionDefault); an unknown level is an error.
func NewSegmentWriterLevel(w io.Writer, topic string, partition int32, level CompressionLevel) (*SegmentWriter, error) {
	if len(topic) > 249 || topic == "" {
		return nil, fmt.Errorf("segment: invalid topic name %q", topic)
	}
	zw, err := level.encoder(w)
	if err != nil {
		return nil, err
	}
	sw := &SegmentWriter{partition: partition, zw: zw, level: level, bw: bufio.NewWriterSize(zw, 64<<10), lastOff: -1}
	sw.stats.FirstOffset, sw.stats.LastOffset = -1, -1
	sw.bw.Write(segmentMagic[:])
	sw.putInt16(int16(len(topic)))
	sw.bw.WriteString(topic)
	sw.putInt32(partition)
	sw.stats.RawBytes = int64(len(segmentMagic) + 2 + len(topic) + 4)
	return sw, nil
}

func (s *SegmentWriter) putInt16(v int16) {
	binary.BigEndian.PutUint16(s.scratch[:2], uint16(v))
	s.bw.Write(s.scratch[:2])
}

func (s *SegmentWriter) putInt32(v int32) {
	binary.BigEndian.PutUint32(s.scratch[:4], uint32(v))
	s.bw.Write(s.scratch[:4])
}

func (s *SegmentWriter) putInt64(v int64) {
	binary.BigEndian.PutUint64(s.scratch[:8], uint64(v))
	s.bw.Write(s.scratch[:8])
}

func (s *SegmentWriter) putBytes(b []byte) {
	if b == nil {
		s.putInt32(-1)
		return
	}
	s.putInt32(int32(len(b)))
	s.bw.Write(b)
}

// Write appends one record. It fails if the record's partition differs from
// the segment's or its offset is not above the previous record's.
func (s *SegmentWriter) Write(r *Record) error {
	if s.err != nil {
		return s.err
	}
	if r.Partition != s.partition {
		return fmt.Errorf("segment: record of partition %d written to a segment of partition %d", r.Partition, s.partition)
	}
	if r.Offset <= s.lastOff || r.Offset < 0 {
		return fmt.Errorf("segment: offset %d after %d: offsets must increase", r.Offset, s.lastOff)
	}
	s.bw.WriteByte(tagRecord)
	s.putInt32(r.Partition)
	s.putInt64(r.Offset)
	s.putInt64(r.Timestamp)
	s.bw.WriteByte(byte(r.TimestampType))
	s.putBytes(r.Key)
	s.putBytes(r.Value)
	s.putInt32(int32(len(r.Headers)))
	size := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		s.putInt32(int32(len(h.Key)))
		s.bw.WriteString(h.Key)
		s.putBytes(h.Value)
		size += int64(len(h.Key) + len(h.Value))
	}
	st := &s.stats
	if st.Records == 0 {
		st.FirstOffset, st.MinTimestamp, st.MaxTimestamp = r.Offset, r.Timestamp, r.Timestamp
	}
	st.Records++
	st.LastOffset = r.Offset
	st.MinTimestamp = min(st.MinTimestamp, r.Timestamp)
	st.MaxTimestamp = max(st.MaxTimestamp, r.Timestamp)
	st.MaxRecordBytes = max(st.MaxRecordBytes, size)
	if r.Key == nil {
		st.NullKeys++
	}
	st.RawBytes += int64(r.EncodedSize())
	s.lastOff = r.Offset
	return nil
}

// Stats returns the statistics of the records written so far.
func (s *SegmentWriter) Stats() SegmentStats { return s.stats }

// Close writes the trailer (tag 0, record count, first and last offset) and
// ends the zstd frame.
func (s *SegmentWriter) Close() (SegmentStats, error) {
	if s.err != nil {
		return s.stats, s.err
	}
	s.bw.WriteByte(tagTrailer)
	s.putInt64(s.stats.Records)
	s.putInt64(s.stats.FirstOffset)
	s.putInt64(s.stats.LastOffset)
	s.stats.RawBytes += 1 + 24
	if err := s.bw.Flush(); err != nil {
		s.err = err
		return s.stats, err
	}
	if err := s.zw.Close(); err != nil {
		s.err = err
		return s.stats, err
	}
	s.level.releaseEncoder(s.zw)
	s.zw, s.bw = nil, nil // the encoder may write another segment now
	s.err = errors.New("segment: writer closed")
	return s.stats, nil
}

// ErrCorrupt is wrapped by every SegmentReader error caused by the segment's
// bytes (bad magic, truncation, bad lengths, a trailer that disagrees).
var ErrCorrupt = errors.New("corrupt segment")

// SegmentReader decodes a segment stream written by SegmentWriter.
type SegmentReader struct {
	zr        *zstd.Decoder
	br        *bufio.Reader
	Topic     string
	Partition int32
	count     int64
	first     int64
	last      int64
	done      bool
	scratch   [8]byte
	kind      string       // KindRecord or KindBatch, from the magic
	batch     batchRecords // a batch segment's walk of the current batch, at the next record to return
	batchLeft int64        // records of the current batch's frame not yet returned
	raw, data []byte       // a batch segment's current batch and its decompressed records, reused
	skip      bool         // SkipContents: keys, values and headers are read past, not copied
}

// SkipContents makes Next of a record segment check every record as it
// does, but read past keys, values and headers instead of copying them:
// the records it returns have nil Key, Value and Headers, and the same
// partition, offset and timestamps. For readers that only check a
// segment (repository.CheckSegment): every length field, the record
// sequence and the trailer are checked as without it. A batch segment's
// batches are still read, CRC-checked and decompressed (their records must
// be decoded to be counted), but their records are not copied out.
func (s *SegmentReader) SkipContents() { s.skip = true }

// Kind returns the segment's kind as its magic says: KindRecord or
// KindBatch.
func (s *SegmentReader) Kind() string { return s.kind }

// maxFieldBytes bounds one key, value or header value (Kafka's own limit of
// a record is far lower; this only guards against corrupt lengths).
const maxFieldBytes = 1 << 30

// segmentWindow is the zstd window of every record segment: the one
// SegmentWriter compresses with at every level (compression.go), and the
// largest a reader accepts. The frame header's window size is a length
// field: the decoder allocates the window it declares before the first
// block, and a 12-byte object declaring 32 MiB allocated 33 MB (issue 14,
// FuzzRecordSegment; the limit was 64 MiB).
const segmentWindow = 1 << 20

// NewSegmentReader reads the segment header from r (the stored object) of
// either kind: a record segment (one zstd frame) or a batch segment (the
// "KDRBAT" stream, not compressed), told apart by their first bytes.
func NewSegmentReader(r io.Reader) (*SegmentReader, error) {
	raw := bufio.NewReaderSize(r, 64<<10)
	if head, _ := raw.Peek(len(batchMagic)); bytes.Equal(head, batchMagic[:]) {
		return newSegmentReader(nil, raw, KindBatch, batchMagic)
	}
	zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(segmentWindow))
	if err != nil {
		return nil, err
	}
	return newSegmentReader(zr, bufio.NewReaderSize(zr, 64<<10), KindRecord, segmentMagic)
}

func newSegmentReader(zr *zstd.Decoder, br *bufio.Reader, kind string, want [8]byte) (*SegmentReader, error) {
	sr := &SegmentReader{zr: zr, br: br, first: -1, last: -1, kind: kind}
	var magic [8]byte
	if _, err := io.ReadFull(sr.br, magic[:]); err != nil {
		sr.Close()
		return nil, corrupt("reading header", err)
	}
	if magic != want {
		sr.Close()
		return nil, fmt.Errorf("%w: bad magic %q (not a kafkastreams-dr segment, or an unsupported segment version)", ErrCorrupt, magic[:])
	}
	n, err := sr.int16()
	if err != nil || n <= 0 || n > 249 {
		sr.Close()
		return nil, corrupt("reading topic name", err)
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(sr.br, name); err != nil {
		sr.Close()
		return nil, corrupt("reading topic name", err)
	}
	sr.Topic = string(name)
	if sr.Partition, err = sr.int32(); err != nil {
		sr.Close()
		return nil, corrupt("reading partition", err)
	}
	return sr, nil
}

// corrupt words a SegmentReader error found while what ("reading
// header", "reading key of offset 7"): err nil is a value out of range;
// an end of the stream is a frame or records cut short; any other error
// comes from the zstd decoder (a flipped byte fails the frame's checksum
// or its block headers) and is worded as a damaged zstd frame, the
// library's text in parentheses. The error wraps ErrCorrupt, not err: the
// store's own failure is read from the store's reader, never from here.
func corrupt(what string, err error) error {
	switch {
	case err == nil:
		return &segmentDamage{fmt.Sprintf("%s: invalid value (its records are damaged)", what)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &segmentDamage{fmt.Sprintf("its zstd frame or its records are cut short (unexpected end, %s)", what)}
	}
	return &segmentDamage{fmt.Sprintf("its zstd frame is damaged (zstd: %v, %s)", err, what)}
}

// segmentDamage is corrupt's error: what is wrong, in this project's words.
type segmentDamage struct{ msg string }

func (e *segmentDamage) Error() string { return e.msg }
func (e *segmentDamage) Unwrap() error { return ErrCorrupt }

func (s *SegmentReader) int16() (int16, error) {
	if _, err := io.ReadFull(s.br, s.scratch[:2]); err != nil {
		return 0, err
	}
	return int16(binary.BigEndian.Uint16(s.scratch[:2])), nil
}

func (s *SegmentReader) int32() (int32, error) {
	if _, err := io.ReadFull(s.br, s.scratch[:4]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(s.scratch[:4])), nil
}

func (s *SegmentReader) int64() (int64, error) {
	if _, err := io.ReadFull(s.br, s.scratch[:8]); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(s.scratch[:8])), nil
}

func (s *SegmentReader) bytes(nullable bool) ([]byte, error) {
	n, err := s.int32()
	if err != nil {
		return nil, err
	}
	if n == -1 && nullable {
		return nil, nil
	}
	if n < 0 || n > maxFieldBytes {
		return nil, fmt.Errorf("invalid length %d", n)
	}
	if s.skip {
		_, err = s.br.Discard(int(n))
		return nil, err
	}
	if n <= fieldChunk {
		b := make([]byte, n)
		_, err = io.ReadFull(s.br, b)
		return b, err
	}
	// A length field is not trusted with an allocation: the buffer grows
	// with the bytes that arrive (a damaged length of 1 GiB in a segment
	// of 43 bytes allocated 1 GiB).
	b := make([]byte, 0, fieldChunk)
	for int32(len(b)) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(int(n)-len(b), len(b)))
		}
		m, err := s.br.Read(b[len(b):min(cap(b), int(n))])
		b = b[:len(b)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// fieldChunk is the largest key, value or header a SegmentReader allocates
// at once from its length field; a larger one grows as its bytes are read.
const fieldChunk = 64 << 10

// Next decodes the next record into r (reusing nothing: every slice is
// freshly allocated). It returns io.EOF after the trailer has been read and
// checked, and an error wrapping ErrCorrupt for a damaged or truncated
// segment.
func (s *SegmentReader) Next(r *Record) error {
	if s.done {
		return io.EOF
	}
	if s.kind == KindBatch {
		return s.nextFromBatch(r)
	}
	tag, err := s.br.ReadByte()
	if err != nil {
		return corrupt("reading record tag", err)
	}
	switch tag {
	case tagTrailer:
		return s.trailer()
	case tagRecord:
	default:
		if s.last < 0 {
			return fmt.Errorf("%w: unknown tag %d before the first record", ErrCorrupt, tag)
		}
		return fmt.Errorf("%w: unknown tag %d after offset %d", ErrCorrupt, tag, s.last)
	}
	var rec Record
	if rec.Partition, err = s.int32(); err != nil {
		return corrupt("reading record partition", err)
	}
	if rec.Partition != s.Partition {
		return fmt.Errorf("%w: record of partition %d in a segment of partition %d", ErrCorrupt, rec.Partition, s.Partition)
	}
	if rec.Offset, err = s.int64(); err != nil {
		return corrupt("reading record offset", err)
	}
	if rec.Offset <= s.last || rec.Offset < 0 {
		return fmt.Errorf("%w: offset %d after %d", ErrCorrupt, rec.Offset, s.last)
	}
	if rec.Timestamp, err = s.int64(); err != nil {
		return corrupt(fmt.Sprintf("reading timestamp of offset %d", rec.Offset), err)
	}
	tt, err := s.br.ReadByte()
	if err != nil || tt > 1 {
		return corrupt(fmt.Sprintf("reading timestamp type of offset %d", rec.Offset), err)
	}
	rec.TimestampType = TimestampType(tt)
	if rec.Key, err = s.bytes(true); err != nil {
		return corrupt(fmt.Sprintf("reading key of offset %d", rec.Offset), err)
	}
	if rec.Value, err = s.bytes(true); err != nil {
		return corrupt(fmt.Sprintf("reading value of offset %d", rec.Offset), err)
	}
	nh, err := s.int32()
	if err != nil || nh < 0 || nh > 1<<20 {
		return corrupt(fmt.Sprintf("reading header count of offset %d", rec.Offset), err)
	}
	if nh > 0 && s.skip {
		for range nh {
			if _, err := s.bytes(false); err != nil {
				return corrupt(fmt.Sprintf("reading header key of offset %d", rec.Offset), err)
			}
			if _, err := s.bytes(true); err != nil {
				return corrupt(fmt.Sprintf("reading header value of offset %d", rec.Offset), err)
			}
		}
	} else if nh > 0 {
		// At most 64 from the count alone; append grows it with the
		// headers read (a damaged count said a million).
		rec.Headers = make([]Header, 0, min(nh, 64))
		for range nh {
			k, err := s.bytes(false)
			if err != nil {
				return corrupt(fmt.Sprintf("reading header key of offset %d", rec.Offset), err)
			}
			v, err := s.bytes(true)
			if err != nil {
				return corrupt(fmt.Sprintf("reading header value of offset %d", rec.Offset), err)
			}
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
		}
	}
	if s.count == 0 {
		s.first = rec.Offset
	}
	s.count++
	s.last = rec.Offset
	*r = rec
	return nil
}

func (s *SegmentReader) trailer() error {
	count, err := s.int64()
	if err != nil {
		return corrupt("reading trailer", err)
	}
	first, err := s.int64()
	if err != nil {
		return corrupt("reading trailer", err)
	}
	last, err := s.int64()
	if err != nil {
		return corrupt("reading trailer", err)
	}
	if count != s.count || first != s.first || last != s.last {
		return fmt.Errorf("%w: trailer says %d records, offsets %d..%d; read %d records, offsets %d..%d",
			ErrCorrupt, count, first, last, s.count, s.first, s.last)
	}
	// Nothing may follow the trailer, and the zstd frame must end cleanly
	// (its content checksum is verified at the end of the frame).
	if _, err := s.br.ReadByte(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("%w: data after the trailer", ErrCorrupt)
		}
		return corrupt("reading the end of the segment", err)
	}
	s.done = true
	return io.EOF
}

// nextFromBatch returns the next record of a batch segment, reading the
// next batch when the current one is used up.
func (s *SegmentReader) nextFromBatch(r *Record) error {
	for s.batchLeft == 0 {
		if err := s.nextBatchFrame(); err != nil {
			return err
		}
	}
	var rec Record
	out := outCopy
	if s.skip {
		out = outSkip
	}
	if err := s.batch.next(&rec, out, nil); err != nil {
		return err
	}
	s.batchLeft--
	if s.count == 0 {
		s.first = rec.Offset
	}
	s.count++
	s.last = rec.Offset
	*r = rec
	return nil
}

// Close releases the decoder and a batch segment's buffers (for the next
// reader: the records returned own their bytes). The reader must not be
// used after.
func (s *SegmentReader) Close() {
	if s.zr != nil {
		s.zr.Close()
	}
	putBatchBuffer(&rawBuffers, s.raw)
	putBatchBuffer(&dataBuffers, s.data)
	s.raw, s.data, s.batch, s.batchLeft = nil, nil, batchRecords{}, 0
}

// ReadSegment decodes a whole segment, calling fn for each record, and
// checks the trailer. It returns the number of records.
func ReadSegment(r io.Reader, fn func(*Record) error) (topic string, partition int32, n int64, err error) {
	sr, err := NewSegmentReader(r)
	if err != nil {
		return "", 0, 0, err
	}
	defer sr.Close()
	for {
		var rec Record
		err := sr.Next(&rec)
		if err == io.EOF {
			return sr.Topic, sr.Partition, sr.count, nil
		}
		if err != nil {
			return sr.Topic, sr.Partition, sr.count, err
		}
		if fn != nil {
			if err := fn(&rec); err != nil {
				return sr.Topic, sr.Partition, sr.count, err
			}
		}
	}
}

// HashingWriter counts and SHA-256-hashes the bytes written through it.
type HashingWriter struct {
	W io.Writer
	h hash.Hash
	n int64
}

// NewHashingWriter wraps w.
func NewHashingWriter(w io.Writer) *HashingWriter { return &HashingWriter{W: w, h: sha256.New()} }

func (h *HashingWriter) Write(p []byte) (int, error) {
	n, err := h.W.Write(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// Sum returns the hex SHA-256 and the byte count of everything written.
func (h *HashingWriter) Sum() (string, int64) {
	return fmt.Sprintf("%x", h.h.Sum(nil)), h.n
}
