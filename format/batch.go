package format

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Segment kinds: the manifest's segments[].kind (docs/FORMAT.md, "Batch
// segments"). An absent kind is KindRecord.
const (
	KindRecord = "record" // records re-encoded in one zstd frame (the "KDRSEG" stream)
	KindBatch  = "batch"  // the broker's record batches as fetched (the "KDRBAT" stream)
)

// VersionBatch is the format_version of a manifest that names at least one
// batch segment (Manifest.Marshal raises it) and the highest this package
// reads; a manifest of record segments only stays at Version (1), so that
// an older reader still reads it, and an older reader refuses a manifest
// of version 2 as newer instead of failing on its segments.
const VersionBatch = 2

// batchMagic opens every batch segment: "KDRBAT" and the two-byte batch
// segment encoding version 0x0001. The object is not compressed: its
// batches are, by their producers.
var batchMagic = [8]byte{'K', 'D', 'R', 'B', 'A', 'T', 0, 1}

// The layout of a RecordBatch v2 (org.apache.kafka.common.record.DefaultRecordBatch),
// big-endian: baseOffset int64, batchLength int32, partitionLeaderEpoch
// int32, magic int8, crc uint32 (CRC-32C of everything after it),
// attributes int16, lastOffsetDelta int32, baseTimestamp int64,
// maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence
// int32, recordsCount int32, records.
const (
	batchHeaderBytes = 61
	batchCRCFrom     = 21 // the CRC covers attributes to the end
	attrCompression  = 0x07
	attrLogAppend    = 0x08
	attrTxn          = 0x10
	attrControl      = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// RawBatch is one record batch of a fetch response, its bytes as the broker
// returned them (Bytes aliases the response; copy it to keep it).
type RawBatch struct {
	Bytes         []byte // the whole batch, baseOffset to its last record
	Magic         int8   // 2 for a RecordBatch; 0 or 1 for an old message set
	BaseOffset    int64
	LastOffset    int64 // BaseOffset + lastOffsetDelta (magic 2 only)
	ProducerID    int64 // magic 2 only; -1 when none
	Transactional bool
	Control       bool // a control batch (transaction markers, KIP-98)
}

// SplitBatches splits raw, a fetch response's RecordBatches (Kafka's
// FetchResponse records field), into its whole batches. A last batch cut
// short by the fetch's size limit is left out, as every consumer does
// (org.apache.kafka.common.record.ByteBufferLogInputStream). Old message
// sets (magic 0 and 1) are returned with Magic set and no other field but
// BaseOffset: a caller must not store them in a batch segment.
func SplitBatches(raw []byte) []RawBatch {
	var out []RawBatch
	for len(raw) >= 17 {
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length < 14 || int64(len(raw)) < 12+length {
			break
		}
		b := RawBatch{Bytes: raw[:12+length], Magic: int8(raw[16]), BaseOffset: int64(binary.BigEndian.Uint64(raw[0:8])), ProducerID: -1}
		if b.Magic == 2 {
			if 12+length < batchHeaderBytes {
				break
			}
			attrs := binary.BigEndian.Uint16(raw[21:23])
			b.LastOffset = b.BaseOffset + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
			b.ProducerID = int64(binary.BigEndian.Uint64(raw[43:51]))
			b.Transactional, b.Control = attrs&attrTxn != 0, attrs&attrControl != 0
		}
		out = append(out, b)
		raw = raw[12+length:]
	}
	return out
}

// maxBatchBytes bounds one stored batch and one batch's decompressed
// records (Kafka's message.max.bytes is an int32; this only guards against
// corrupt lengths and decompression bombs).
const maxBatchBytes = maxFieldBytes

// DecodeBatch checks a RecordBatch v2 (its magic, length and CRC-32C) and
// decodes its records (decompressing gzip, snappy with or without Kafka's
// xerial framing, lz4 or zstd) into Records of partition. Timestamps are as
// the broker holds them: baseTimestamp plus each record's delta, or the
// batch's maxTimestamp for every record of a LogAppendTime batch
// (DefaultRecordBatch). A control batch decodes like any other (its record
// key is the control type). Errors wrap ErrCorrupt.
func DecodeBatch(b []byte, partition int32) ([]Record, error) {
	if len(b) < batchHeaderBytes {
		return nil, fmt.Errorf("%w: record batch of %d bytes, shorter than its header", ErrCorrupt, len(b))
	}
	base := int64(binary.BigEndian.Uint64(b[0:8]))
	if length := int64(int32(binary.BigEndian.Uint32(b[8:12]))); length != int64(len(b)-12) {
		return nil, fmt.Errorf("%w: record batch at offset %d says %d bytes, holds %d", ErrCorrupt, base, length, len(b)-12)
	}
	if b[16] != 2 {
		return nil, fmt.Errorf("%w: record batch at offset %d has magic %d, not 2", ErrCorrupt, base, b[16])
	}
	if want, got := binary.BigEndian.Uint32(b[17:21]), crc32.Checksum(b[batchCRCFrom:], crc32c); want != got {
		return nil, fmt.Errorf("%w: record batch at offset %d fails its CRC-32C (says %08x, is %08x)", ErrCorrupt, base, want, got)
	}
	attrs := binary.BigEndian.Uint16(b[21:23])
	lastDelta := int64(int32(binary.BigEndian.Uint32(b[23:27])))
	baseTS := int64(binary.BigEndian.Uint64(b[27:35]))
	maxTS := int64(binary.BigEndian.Uint64(b[35:43]))
	count := int64(int32(binary.BigEndian.Uint32(b[57:61])))
	data, err := decompressBatch(b[batchHeaderBytes:], attrs&attrCompression)
	if err != nil {
		return nil, fmt.Errorf("%w: record batch at offset %d does not decompress: %v", ErrCorrupt, base, err)
	}
	// Every record takes at least 7 bytes: the count never allocates more
	// than the data holds.
	if count < 0 || count > int64(len(data))/7+1 {
		return nil, fmt.Errorf("%w: record batch at offset %d says %d records in %d bytes", ErrCorrupt, base, count, len(data))
	}
	tt := CreateTime
	if attrs&attrLogAppend != 0 {
		tt = LogAppendTime
	}
	recs := make([]Record, 0, count)
	d := varDecoder{b: data}
	prev := int64(-1)
	for i := int64(0); i < count; i++ {
		length := d.varint()
		start := d.i
		d.i++ // attributes, unused (Kafka writes 0)
		tsDelta := d.varint()
		offDelta := d.varint()
		key := d.nbytes()
		value := d.nbytes()
		nh := d.varint()
		if d.err != nil || nh < 0 || nh > int64(len(data)-d.i)/2+1 {
			return nil, fmt.Errorf("%w: record %d of the batch at offset %d is damaged", ErrCorrupt, i, base)
		}
		var hs []Header
		if nh > 0 {
			hs = make([]Header, nh)
			for j := range hs {
				k := d.nbytes()
				if k == nil && d.err == nil {
					d.err = errors.New("null header key")
				}
				hs[j] = Header{Key: string(k), Value: d.nbytes()}
			}
		}
		if d.err != nil || int64(d.i-start) != length || offDelta <= prev || offDelta > lastDelta {
			return nil, fmt.Errorf("%w: record %d of the batch at offset %d is damaged", ErrCorrupt, i, base)
		}
		prev = offDelta
		r := Record{Partition: partition, Offset: base + offDelta, Timestamp: baseTS + tsDelta, TimestampType: tt, Key: key, Value: value, Headers: hs}
		if tt == LogAppendTime {
			r.Timestamp = maxTS
		}
		recs = append(recs, r)
	}
	if d.i != len(data) {
		return nil, fmt.Errorf("%w: %d bytes after the last record of the batch at offset %d", ErrCorrupt, len(data)-d.i, base)
	}
	return recs, nil
}

// varDecoder reads Kafka's zigzag varints (ByteUtils.readVarint) and
// varint-length byte strings from b; the first failure sticks in err.
type varDecoder struct {
	b   []byte
	i   int
	err error
}

func (d *varDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	if d.i > len(d.b) {
		d.err = io.ErrUnexpectedEOF
		return 0
	}
	v, n := binary.Varint(d.b[d.i:])
	if n <= 0 {
		d.err = io.ErrUnexpectedEOF
		return 0
	}
	d.i += n
	return v
}

// nbytes reads a varint length and that many bytes: nil for -1 (null),
// empty and non-nil for 0. The bytes are copied: records outlive the batch.
func (d *varDecoder) nbytes() []byte {
	n := d.varint()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(d.b)-d.i) {
		d.err = io.ErrUnexpectedEOF
		return nil
	}
	out := bytes.Clone(d.b[d.i : d.i+int(n)])
	if out == nil {
		out = []byte{}
	}
	d.i += int(n)
	return out
}

// xerialMagic opens snappy data framed by Java's snappy-java
// SnappyOutputStream, which the Java producer writes: the magic, version
// and compatible version (int32 each), then blocks of int32 length and a
// raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressBatch undoes a batch's compression codec (attributes bits 0-2:
// 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; Kafka's CompressionType),
// producing at most maxBatchBytes.
func decompressBatch(src []byte, codec uint16) ([]byte, error) {
	switch codec {
	case 0:
		return src, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readBounded(zr)
	case 2:
		return unsnappy(src)
	case 3:
		return readBounded(lz4.NewReader(bytes.NewReader(src)))
	case 4:
		// Streamed, not DecodeAll: DecodeAll sizes its output by the
		// frame header's content size, a length field.
		zr, _ := batchZstd.Get().(*zstd.Decoder)
		if zr == nil {
			var err error
			if zr, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderLowmem(true)); err != nil {
				return nil, err
			}
		}
		defer batchZstd.Put(zr)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		return readBounded(zr)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// batchZstd pools the zstd decoders of batches (a streaming decoder of
// concurrency 1 starts no goroutine; its window is bounded as a record
// segment's).
var batchZstd sync.Pool

func readBounded(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, maxBatchBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxBatchBytes {
		return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
	}
	return buf.Bytes(), nil
}

func unsnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(nil, src)
	}
	if len(src) < 16 {
		return nil, errors.New("snappy xerial header cut short")
	}
	var out []byte
	for rem := src[16:]; len(rem) > 0; {
		if len(rem) < 4 {
			return nil, errors.New("snappy xerial block length cut short")
		}
		n := int64(int32(binary.BigEndian.Uint32(rem)))
		rem = rem[4:]
		if n < 0 || n > int64(len(rem)) {
			return nil, errors.New("snappy xerial block length out of range")
		}
		var err error
		if out, err = snappyBlock(out, rem[:n]); err != nil {
			return nil, err
		}
		rem = rem[n:]
	}
	return out, nil
}

// snappyBlock appends the decoded raw snappy block src to dst.
func snappyBlock(dst, src []byte) ([]byte, error) {
	l, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	// The decoded length is a length field: a snappy block expands at
	// most about 22 times (a 3-byte copy of 64 bytes), so a claim beyond
	// 32 times the block is damage, not an allocation.
	if int64(l) > 32*int64(len(src))+64 {
		return nil, fmt.Errorf("snappy block of %d bytes claims %d decoded bytes", len(src), l)
	}
	if int64(len(dst))+int64(l) > maxBatchBytes {
		return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
	}
	block, err := s2.Decode(nil, src)
	if err != nil {
		return nil, err
	}
	return append(dst, block...), nil
}

// BatchSegmentWriter writes a batch segment: the record batches of one
// partition as the broker returned them, each framed with the range of its
// records the segment holds. It does not compress. Not safe for concurrent
// use.
type BatchSegmentWriter struct {
	partition int32
	bw        *bufio.Writer
	stats     SegmentStats
	scratch   [8]byte
	err       error
}

// NewBatchSegmentWriter starts a batch segment for topic and partition on
// w. Close writes the trailer and flushes; it does not close w.
func NewBatchSegmentWriter(w io.Writer, topic string, partition int32) (*BatchSegmentWriter, error) {
	if len(topic) > 249 || topic == "" {
		return nil, fmt.Errorf("segment: invalid topic name %q", topic)
	}
	sw := &BatchSegmentWriter{partition: partition, bw: bufio.NewWriterSize(w, 64<<10)}
	sw.stats.FirstOffset, sw.stats.LastOffset = -1, -1
	sw.bw.Write(batchMagic[:])
	sw.put(2, uint64(len(topic)))
	sw.bw.WriteString(topic)
	sw.put(4, uint64(uint32(partition)))
	// RawBytes counts what a record segment's stream of the same records
	// would take (its header, records and trailer): the records' volume
	// that estimate, the catalog and the restore's retention.bytes check
	// read from raw_size, and what SegmentMaxBytes bounds, in either kind.
	sw.stats.RawBytes = int64(len(segmentMagic) + 2 + len(topic) + 4)
	return sw, nil
}

func (s *BatchSegmentWriter) put(n int, v uint64) {
	switch n {
	case 2:
		binary.BigEndian.PutUint16(s.scratch[:2], uint16(v))
	case 4:
		binary.BigEndian.PutUint32(s.scratch[:4], uint32(v))
	default:
		binary.BigEndian.PutUint64(s.scratch[:8], v)
	}
	s.bw.Write(s.scratch[:n])
}

// Write appends batch b (a RecordBatch v2, bytes as fetched) of which the
// segment holds recs: the records of b from recs[0] to the last of recs,
// as DecodeBatch returned them, none left out between (the caller drops
// those below the backup's start and at or above its end). recs must not
// be empty and must follow the previous batch's records.
func (s *BatchSegmentWriter) Write(b []byte, recs []Record) error {
	if s.err != nil {
		return s.err
	}
	if len(recs) == 0 {
		return errors.New("segment: a batch with no records to keep")
	}
	if len(b) > maxBatchBytes {
		return fmt.Errorf("segment: record batch of %d bytes, more than %d", len(b), maxBatchBytes)
	}
	first, last := recs[0].Offset, recs[len(recs)-1].Offset
	if first <= s.stats.LastOffset {
		return fmt.Errorf("segment: offset %d after %d: offsets must increase", first, s.stats.LastOffset)
	}
	s.bw.WriteByte(tagRecord)
	s.put(8, uint64(first))
	s.put(8, uint64(last))
	s.put(4, uint64(len(b)))
	s.bw.Write(b)
	st := &s.stats
	for i := range recs {
		r := &recs[i]
		if r.Partition != s.partition {
			return fmt.Errorf("segment: record of partition %d written to a segment of partition %d", r.Partition, s.partition)
		}
		if st.Records == 0 {
			st.FirstOffset, st.MinTimestamp, st.MaxTimestamp = r.Offset, r.Timestamp, r.Timestamp
		}
		st.Records++
		st.RawBytes += int64(r.EncodedSize())
		st.MinTimestamp, st.MaxTimestamp = min(st.MinTimestamp, r.Timestamp), max(st.MaxTimestamp, r.Timestamp)
		size := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			size += int64(len(h.Key) + len(h.Value))
		}
		st.MaxRecordBytes = max(st.MaxRecordBytes, size)
		if r.Key == nil {
			st.NullKeys++
		}
	}
	st.LastOffset = last
	return nil
}

// Stats returns the statistics of the records written so far; RawBytes is
// the length a record segment of the same records would decompress to.
func (s *BatchSegmentWriter) Stats() SegmentStats { return s.stats }

// Close writes the trailer (tag 0, record count, first and last offset)
// and flushes.
func (s *BatchSegmentWriter) Close() (SegmentStats, error) {
	if s.err != nil {
		return s.stats, s.err
	}
	s.bw.WriteByte(tagTrailer)
	s.put(8, uint64(s.stats.Records))
	s.put(8, uint64(s.stats.FirstOffset))
	s.put(8, uint64(s.stats.LastOffset))
	s.stats.RawBytes += 1 + 24
	if err := s.bw.Flush(); err != nil {
		s.err = err
		return s.stats, err
	}
	s.err = errors.New("segment: writer closed")
	return s.stats, nil
}

// nextBatchFrame reads the next frame of a batch segment into s.pending
// (the records of the batch in the frame's range) or reads the trailer.
func (s *SegmentReader) nextBatchFrame() error {
	tag, err := s.br.ReadByte()
	if err != nil {
		return corrupt("reading batch tag", err)
	}
	switch tag {
	case tagTrailer:
		return s.trailer()
	case tagRecord:
	default:
		return fmt.Errorf("%w: unknown tag %d after offset %d", ErrCorrupt, tag, s.last)
	}
	from, err := s.int64()
	if err != nil {
		return corrupt("reading batch range", err)
	}
	to, err := s.int64() // the last offset held, inclusive
	if err != nil {
		return corrupt("reading batch range", err)
	}
	n, err := s.int32()
	if err != nil || n < batchHeaderBytes || n > maxBatchBytes {
		return corrupt(fmt.Sprintf("reading the length of the batch of offset %d", from), err)
	}
	if from <= s.last || to < from {
		return fmt.Errorf("%w: batch of offsets %d..%d after offset %d", ErrCorrupt, from, to, s.last)
	}
	// Grow with the bytes that arrive, never by the length field alone.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, s.br, int64(n)); err != nil {
		return corrupt(fmt.Sprintf("reading the batch of offset %d", from), err)
	}
	recs, err := DecodeBatch(buf.Bytes(), s.Partition)
	if err != nil {
		return err
	}
	i := 0
	for i < len(recs) && recs[i].Offset < from {
		i++
	}
	j := i
	for j < len(recs) && recs[j].Offset <= to {
		j++
	}
	if i == j || recs[i].Offset != from || recs[j-1].Offset != to {
		return fmt.Errorf("%w: batch frame says offsets %d..%d, its batch holds no record at one of them", ErrCorrupt, from, to)
	}
	s.pending = recs[i:j]
	return nil
}
