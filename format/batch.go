package format

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
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
// key is the control type). The records alias neither b nor the
// decompressed bytes: each record's key, value and header values are one
// allocation of their own. Errors wrap ErrCorrupt.
func DecodeBatch(b []byte, partition int32) ([]Record, error) {
	it, _, err := openBatch(b, partition, nil)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, it.count)
	for i := range recs {
		if err := it.next(&recs[i], outCopy, nil); err != nil {
			return nil, err
		}
	}
	if err := it.end(); err != nil {
		return nil, err
	}
	return recs, nil
}

// BatchDecoder decodes record batches as DecodeBatch does, for a caller
// that is done with a batch's records before it decodes the next (the
// backup's statistics and state digest): the records it returns alias
// the batch and a decompression buffer the decoder reuses, their header
// arrays come from one array the decoder reuses, and their header keys
// are interned. They are valid until the next Decode; keep nothing of
// them without copying it. Decoding allocates per batch, not per record.
// The zero value is ready to use; not safe for concurrent use.
type BatchDecoder struct {
	data []byte            // the last batch decompressed
	recs []Record          // the last batch's records
	hdrs []Header          // their headers
	keys map[string]string // header keys seen, at most maxInternedKeys
}

// maxInternedKeys bounds BatchDecoder's interned header keys: records of
// keys beyond it get keys of their own.
const maxInternedKeys = 1024

// Decode checks batch b (a RecordBatch v2, as DecodeBatch) and returns its
// records of partition, valid until the next Decode. Errors wrap
// ErrCorrupt.
func (v *BatchDecoder) Decode(b []byte, partition int32) ([]Record, error) {
	it, data, err := openBatch(b, partition, v.data)
	v.data = data
	if err != nil {
		return nil, err
	}
	v.recs, v.hdrs = slices.Grow(v.recs[:0], int(it.count))[:it.count], v.hdrs[:0]
	for i := range v.recs {
		if err := it.next(&v.recs[i], outView, v); err != nil {
			return nil, err
		}
	}
	if err := it.end(); err != nil {
		return nil, err
	}
	return v.recs, nil
}

// headerKey returns k as a string, interned (no allocation for a key
// seen before).
func (v *BatchDecoder) headerKey(k []byte) string {
	if s, ok := v.keys[string(k)]; ok {
		return s
	}
	s := string(k)
	if v.keys == nil {
		v.keys = map[string]string{}
	}
	if len(v.keys) < maxInternedKeys {
		v.keys[s] = s
	}
	return s
}

// batchRecords walks the records of one decompressed RecordBatch v2, one
// at a time: what DecodeBatch returns, without holding them all.
type batchRecords struct {
	d         varDecoder // over the decompressed records
	partition int32
	base      int64 // baseOffset
	baseTS    int64
	maxTS     int64
	lastDelta int64
	tt        TimestampType
	count     int64 // recordsCount
	i         int64 // records read so far
	prev      int64 // the offset delta of the last record read, -1 before the first
}

// openBatch checks batch b's header and CRC-32C and decompresses its
// records into scratch (reused when large enough; returned for the next
// batch; codec none decodes from b itself). The walk it returns reads
// from b or scratch: neither may change while it is used.
func openBatch(b []byte, partition int32, scratch []byte) (batchRecords, []byte, error) {
	if len(b) < batchHeaderBytes {
		return batchRecords{}, scratch, fmt.Errorf("%w: record batch of %d bytes, shorter than its header", ErrCorrupt, len(b))
	}
	base := int64(binary.BigEndian.Uint64(b[0:8]))
	if length := int64(int32(binary.BigEndian.Uint32(b[8:12]))); length != int64(len(b)-12) {
		return batchRecords{}, scratch, fmt.Errorf("%w: record batch at offset %d says %d bytes, holds %d", ErrCorrupt, base, length, len(b)-12)
	}
	if b[16] != 2 {
		return batchRecords{}, scratch, fmt.Errorf("%w: record batch at offset %d has magic %d, not 2", ErrCorrupt, base, b[16])
	}
	if want, got := binary.BigEndian.Uint32(b[17:21]), crc32.Checksum(b[batchCRCFrom:], crc32c); want != got {
		return batchRecords{}, scratch, fmt.Errorf("%w: record batch at offset %d fails its CRC-32C (says %08x, is %08x)", ErrCorrupt, base, want, got)
	}
	attrs := binary.BigEndian.Uint16(b[21:23])
	it := batchRecords{
		partition: partition,
		base:      base,
		lastDelta: int64(int32(binary.BigEndian.Uint32(b[23:27]))),
		baseTS:    int64(binary.BigEndian.Uint64(b[27:35])),
		maxTS:     int64(binary.BigEndian.Uint64(b[35:43])),
		count:     int64(int32(binary.BigEndian.Uint32(b[57:61]))),
		tt:        CreateTime,
		prev:      -1,
	}
	if attrs&attrLogAppend != 0 {
		it.tt = LogAppendTime
	}
	data := b[batchHeaderBytes:]
	if codec := attrs & attrCompression; codec != 0 {
		var err error
		if data, err = decompressBatch(scratch[:0], data, codec); err != nil {
			return batchRecords{}, scratch, fmt.Errorf("%w: record batch at offset %d does not decompress: %v", ErrCorrupt, base, err)
		}
		scratch = data
	}
	// Every record takes at least 7 bytes: the count never allocates more
	// than the data holds.
	if it.count < 0 || it.count > int64(len(data))/7+1 {
		return batchRecords{}, scratch, fmt.Errorf("%w: record batch at offset %d says %d records in %d bytes", ErrCorrupt, base, it.count, len(data))
	}
	it.d = varDecoder{b: data}
	return it, scratch, nil
}

// What batchRecords.next does with a record's key, value and headers.
type recordOut int

const (
	outSkip recordOut = iota // checked, left nil
	outCopy                  // copied into one allocation of the record's own
	outView                  // aliasing the batch (BatchDecoder)
)

// next reads the next record into r, its key, value and headers as out
// says (outView takes header arrays and keys from v); r's offset and
// timestamp are always set. The caller reads at most count records.
func (it *batchRecords) next(r *Record, out recordOut, v *BatchDecoder) error {
	d := &it.d
	length := d.varint()
	start := d.i
	d.i++ // attributes, unused (Kafka writes 0)
	tsDelta := d.varint()
	offDelta := d.varint()
	key := d.nbytes()
	value := d.nbytes()
	nh := d.varint()
	if d.err != nil || nh < 0 || nh > int64(len(d.b)-d.i)/2+1 {
		return fmt.Errorf("%w: record %d of the batch at offset %d is damaged", ErrCorrupt, it.i, it.base)
	}
	var hs []Header
	size := len(key) + len(value)
	switch {
	case nh > 0 && out == outCopy:
		hs = make([]Header, nh)
	case nh > 0 && out == outView:
		from := len(v.hdrs)
		v.hdrs = slices.Grow(v.hdrs, int(nh))[:from+int(nh)]
		hs = v.hdrs[from : from+int(nh) : from+int(nh)]
	}
	for j := range nh {
		k := d.nbytes()
		if k == nil && d.err == nil {
			d.err = errors.New("null header key")
		}
		val := d.nbytes()
		switch out {
		case outCopy:
			hs[j] = Header{Key: string(k), Value: val}
			size += len(val)
		case outView:
			hs[j] = Header{Key: v.headerKey(k), Value: val}
		}
	}
	if d.err != nil || int64(d.i-start) != length || offDelta <= it.prev || offDelta > it.lastDelta {
		return fmt.Errorf("%w: record %d of the batch at offset %d is damaged", ErrCorrupt, it.i, it.base)
	}
	it.prev = offDelta
	it.i++
	*r = Record{Partition: it.partition, Offset: it.base + offDelta, Timestamp: it.baseTS + tsDelta, TimestampType: it.tt}
	if it.tt == LogAppendTime {
		r.Timestamp = it.maxTS
	}
	switch out {
	case outSkip:
		return nil
	case outView:
		r.Key, r.Value, r.Headers = key, value, hs
		return nil
	}
	// One allocation per record: what the record keeps alive is its own
	// bytes, never the batch it came from.
	buf := make([]byte, 0, size)
	own := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		n := len(buf)
		buf = append(buf, b...)
		return buf[n:len(buf):len(buf)]
	}
	r.Key, r.Value = own(key), own(value)
	for j := range hs {
		hs[j].Value = own(hs[j].Value)
	}
	r.Headers = hs
	return nil
}

// end checks that nothing follows the batch's last record.
func (it *batchRecords) end() error {
	if it.d.i != len(it.d.b) {
		return fmt.Errorf("%w: %d bytes after the last record of the batch at offset %d", ErrCorrupt, len(it.d.b)-it.d.i, it.base)
	}
	return nil
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
// empty and non-nil for 0. The bytes alias d.b: batchRecords.next copies
// what a record keeps.
func (d *varDecoder) nbytes() []byte {
	n := d.varint()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(d.b)-d.i) {
		d.err = io.ErrUnexpectedEOF
		return nil
	}
	out := d.b[d.i : d.i+int(n) : d.i+int(n)]
	d.i += int(n)
	return out
}

// xerialMagic opens snappy data framed by Java's snappy-java
// SnappyOutputStream, which the Java producer writes: the magic, version
// and compatible version (int32 each), then blocks of int32 length and a
// raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressBatch undoes a batch's compression codec (attributes bits 0-2:
// 1 gzip, 2 snappy, 3 lz4, 4 zstd; Kafka's CompressionType), appending at
// most maxBatchBytes to dst (its capacity is reused: a reader passes the
// previous batch's buffer) and growing it with the bytes decompressed,
// never by a length field alone.
func decompressBatch(dst, src []byte, codec uint16) ([]byte, error) {
	switch codec {
	case 1:
		zr, _ := batchGzip.Get().(*gzip.Reader)
		if zr == nil {
			zr = new(gzip.Reader)
		}
		defer batchGzip.Put(zr)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		return readBounded(dst, zr)
	case 2:
		return unsnappy(dst, src)
	case 3:
		return unlz4(dst, src)
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
		return readBounded(dst, zr)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// rawBuffers and dataBuffers pool the batch buffers and decompression
// buffers of batch segment readers (SegmentReader.Close returns them;
// apart, as they grow to different sizes): a restore opens a reader per
// segment, and each would grow its own to the largest batch again. A
// buffer above maxPooledBatchBuffer (a batch of a topic with a large
// max.message.bytes) is left to the GC.
var rawBuffers, dataBuffers sync.Pool

const maxPooledBatchBuffer = 16 << 20

func getBatchBuffer(pool *sync.Pool) []byte {
	if p, ok := pool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

func putBatchBuffer(pool *sync.Pool, b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooledBatchBuffer {
		b = b[:0]
		pool.Put(&b)
	}
}

// batchZstd and batchGzip pool the decoders of batches (a streaming zstd
// decoder of concurrency 1 starts no goroutine; its window is bounded as a
// record segment's).
var batchZstd, batchGzip sync.Pool

// readBounded appends what r yields to dst, at most maxBatchBytes.
func readBounded(dst []byte, r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	n, err := buf.ReadFrom(io.LimitReader(r, maxBatchBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxBatchBytes {
		return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
	}
	return buf.Bytes(), nil
}

func unsnappy(dst, src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst[:0], src)
	}
	if len(src) < 16 {
		return nil, errors.New("snappy xerial header cut short")
	}
	out := dst[:0]
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
	n := len(dst)
	dst = slices.Grow(dst, l)[:n+l]
	block, err := s2.Decode(dst[n:], src)
	if err != nil {
		return nil, err
	}
	if len(block) != l {
		return nil, fmt.Errorf("snappy block decoded to %d bytes, says %d", len(block), l)
	}
	return dst, nil
}

// LZ4 frame format (lz4 Frame Format Description 1.6.x, what Kafka's
// KafkaLZ4BlockOutputStream and franz-go write for a batch): magic,
// FLG, BD, an optional content size and dictionary id, a header checksum,
// blocks (a little-endian uint32 size, its high bit set for a stored
// block; 0 ends the frame), each with an optional checksum, then an
// optional content checksum.
const (
	lz4Magic        = 0x184D2204
	lz4FlagVersion  = 0xC0
	lz4FlagIndep    = 0x20
	lz4FlagBlockSum = 0x10
	lz4FlagSize     = 0x08
	lz4FlagContSum  = 0x04
	lz4FlagDictID   = 0x01
	lz4Stored       = 0x80000000
	lz4DictBytes    = 64 << 10 // a dependent block refers back at most 64 KiB
)

// unlz4 appends the LZ4 frames of src, decompressed, to dst[:0]. Its
// blocks decompress straight into dst (lz4.UncompressBlock), which grows
// as they need: a frame's declared block size (up to 4 MiB, franz-go's)
// is no allocation of its own, as lz4.Reader's block buffer is. The
// frame's xxHash32 checksums are not checked: the batch's CRC-32C,
// checked before, covers the compressed bytes.
func unlz4(dst, src []byte) ([]byte, error) {
	out := dst[:0]
	for len(src) > 0 {
		if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4Magic {
			return nil, errors.New("not an lz4 frame")
		}
		flg, bd := src[4], src[5]
		if flg&lz4FlagVersion != 0x40 {
			return nil, fmt.Errorf("lz4 frame version %d", flg>>6)
		}
		var blockMax int
		switch (bd >> 4) & 0x07 {
		case 4:
			blockMax = 64 << 10
		case 5:
			blockMax = 256 << 10
		case 6:
			blockMax = 1 << 20
		case 7:
			blockMax = 4 << 20
		default:
			return nil, fmt.Errorf("lz4 frame block size code %d", (bd>>4)&0x07)
		}
		head := 7
		if flg&lz4FlagSize != 0 {
			head += 8
		}
		if flg&lz4FlagDictID != 0 {
			return nil, errors.New("lz4 frame with a dictionary")
		}
		if len(src) < head {
			return nil, errors.New("lz4 frame header cut short")
		}
		src = src[head:]
		frameStart := len(out)
		for {
			if len(src) < 4 {
				return nil, errors.New("lz4 block size cut short")
			}
			size := binary.LittleEndian.Uint32(src)
			src = src[4:]
			if size == 0 {
				break
			}
			stored := size&lz4Stored != 0
			n := int(size &^ lz4Stored)
			if n > len(src) || n > blockMax {
				return nil, fmt.Errorf("lz4 block of %d bytes, %d left in a frame of %d-byte blocks", n, len(src), blockMax)
			}
			block := src[:n]
			if src = src[n:]; flg&lz4FlagBlockSum != 0 {
				if len(src) < 4 {
					return nil, errors.New("lz4 block checksum cut short")
				}
				src = src[4:]
			}
			if stored {
				if len(out)+n > maxBatchBytes {
					return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
				}
				out = append(out, block...)
				continue
			}
			var err error
			if out, err = lz4Block(out, block, frameStart, blockMax, flg&lz4FlagIndep == 0); err != nil {
				return nil, err
			}
		}
		if flg&lz4FlagContSum != 0 {
			if len(src) < 4 {
				return nil, errors.New("lz4 content checksum cut short")
			}
			src = src[4:]
		}
	}
	return out, nil
}

// lz4Block appends compressed block src, decompressed, to out: into out's
// spare capacity, doubled (up to blockMax spare bytes) while it is too
// small. A dependent block (linked) refers back to the frame's output so
// far (out[frameStart:]).
func lz4Block(out, src []byte, frameStart, blockMax int, linked bool) ([]byte, error) {
	spare := min(max(4*len(src), 64<<10), blockMax)
	for {
		if len(out)+spare > maxBatchBytes+blockMax {
			return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
		}
		out = slices.Grow(out, spare)
		dst := out[len(out):cap(out)]
		var n int
		var err error
		if linked {
			n, err = lz4.UncompressBlockWithDict(src, dst, out[max(frameStart, len(out)-lz4DictBytes):])
		} else {
			n, err = lz4.UncompressBlock(src, dst)
		}
		if err == nil {
			if len(out)+n > maxBatchBytes {
				return nil, fmt.Errorf("more than %d bytes decompressed", maxBatchBytes)
			}
			return out[:len(out)+n], nil
		}
		if len(dst) >= blockMax {
			return nil, err // room for a whole block: the block is damaged
		}
		spare = min(2*len(dst), blockMax)
	}
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

// nextBatchFrame reads the next frame of a batch segment, checks its batch
// and leaves s.batch at the first record of the frame's range with
// s.batchLeft records to return, or reads the trailer. The batch's bytes
// and its decompressed records go into s.raw and s.data, reused from
// frame to frame: the records Next returns are copies, so a reader holds
// one batch, not one per record still in use.
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
	if s.raw == nil {
		s.raw = getBatchBuffer(&rawBuffers)
	}
	if s.data == nil {
		s.data = getBatchBuffer(&dataBuffers)
	}
	// Grow with the bytes that arrive, never by the length field alone.
	buf := bytes.NewBuffer(s.raw[:0])
	_, err = io.CopyN(buf, s.br, int64(n))
	s.raw = buf.Bytes()
	if err != nil {
		return corrupt(fmt.Sprintf("reading the batch of offset %d", from), err)
	}
	it, data, err := openBatch(s.raw, s.Partition, s.data)
	s.data = data
	if err != nil {
		return err
	}
	// A first pass checks every record and finds the frame's range
	// before any record is returned (as DecodeBatch would); the records
	// are copied out one by one as Next asks for them.
	var (
		rec      Record
		at       batchRecords // the walk at the record of offset from
		held     int64        // records of the range
		first    = int64(-1)
		lastHeld int64
	)
	for range it.count {
		pos := it
		if err := it.next(&rec, outSkip, nil); err != nil {
			return err
		}
		if rec.Offset < from || rec.Offset > to {
			continue
		}
		if held == 0 {
			at, first = pos, rec.Offset
		}
		held++
		lastHeld = rec.Offset
	}
	if err := it.end(); err != nil {
		return err
	}
	if held == 0 || first != from || lastHeld != to {
		return fmt.Errorf("%w: batch frame says offsets %d..%d, its batch holds no record at one of them", ErrCorrupt, from, to)
	}
	s.batch, s.batchLeft = at, held
	return nil
}
