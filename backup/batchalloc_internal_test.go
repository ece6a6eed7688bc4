package backup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// fetchedBatches is the RecordBatches field of a fetch answer: batches
// RecordBatch v2 of perBatch records each (a key, a value of 200 bytes,
// one header), from offset 0, compressed with lz4 (as the bench's
// producer does) when lz4Codec.
func fetchedBatches(t *testing.T, batches, perBatch int, lz4Codec bool) []byte {
	t.Helper()
	var out []byte
	off := int64(0)
	for range batches {
		var recs []byte
		for i := range perBatch {
			r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: fmt.Appendf(nil, "k-%d", off), Value: bytes.Repeat([]byte{'v'}, 200),
				Headers: []kmsg.Header{{Key: "trace", Value: []byte("0123456789abcdef")}}}
			r.Length = int32(len(r.AppendTo(nil)) - 1) // the length varint of 0 is one byte
			recs = r.AppendTo(recs)
			off++
		}
		var attrs int16
		if lz4Codec {
			var buf bytes.Buffer
			zw := lz4.NewWriter(&buf)
			if _, err := zw.Write(recs); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			recs, attrs = buf.Bytes(), 3
		}
		b := kmsg.RecordBatch{FirstOffset: off - int64(perBatch), Magic: 2, Attributes: attrs, LastOffsetDelta: int32(perBatch - 1),
			FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000 + int64(perBatch-1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
			NumRecords: int32(perBatch), Records: recs}
		raw := b.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		out = append(out, raw...)
	}
	return out
}

// TestKeepBatchesDoesNotAllocatePerRecord: the batch backup decodes every
// batch it stores only to look at its records (statistics, the state
// digest, the unrestorable warnings); keepBatches' decoder reuses its
// buffers and hands out records that alias them, so a fetch answer costs
// a few allocations per batch, not per record (format.DecodeBatch made
// each record's key, value and headers its own: 3 allocations per
// record, 2,000 per batch here, and a new decompression buffer per batch).
func TestKeepBatchesDoesNotAllocatePerRecord(t *testing.T) {
	for _, codec := range []struct {
		name string
		lz4  bool
	}{{"none", false}, {"lz4", true}} {
		t.Run(codec.name, func(t *testing.T) {
			const batches, perBatch = 4, 500
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.RecordBatches = fetchedBatches(t, batches, perBatch, codec.lz4)
			var dec format.BatchDecoder
			var records, bytesSeen int64
			keep := func(b keptBatch) error {
				for i := range b.recs {
					records++
					bytesSeen += int64(len(b.recs[i].Key) + len(b.recs[i].Value) + len(b.recs[i].Headers[0].Value))
				}
				return nil
			}
			next, ok, err := keepBatches(&rp, 0, 0, 1<<40, &dec, keep)
			if err != nil || !ok || next != batches*perBatch || records != batches*perBatch {
				t.Fatalf("keepBatches: next %d, ok %v, err %v, %d records; want next %d, ok, %d records", next, ok, err, records, batches*perBatch, batches*perBatch)
			}
			allocs := testing.AllocsPerRun(10, func() {
				if _, _, err := keepBatches(&rp, 0, 0, 1<<40, &dec, keep); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%.0f allocations per fetch answer of %d batches of %d records", allocs, batches, perBatch)
			// SplitBatches' slice and the aborted map, then per batch at
			// most the decoder's growth (none once warm).
			if max := float64(2 + batches); allocs > max {
				t.Errorf("keepBatches of %d batches of %d records: %.0f allocations, more than %.0f", batches, perBatch, allocs, max)
			}
		})
	}
}
