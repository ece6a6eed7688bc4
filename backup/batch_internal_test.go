package backup

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestKeepBatchesFallsBackForOldMessageSets: a fetch answer holding a
// message set older than magic 2 (a log written before Kafka 0.11) is not
// stored as batches: keepBatches says so, and the caller copies its
// records into record segments.
func TestKeepBatchesFallsBackForOldMessageSets(t *testing.T) {
	// A magic 1 message: offset int64, size int32, crc int32, magic int8,
	// attributes int8, timestamp int64, key and value int32-length bytes.
	msg := binary.BigEndian.AppendUint64(nil, 5)
	body := []byte{0, 0, 0, 0, 1, 0}
	body = binary.BigEndian.AppendUint64(body, 1700000000000)
	body = binary.BigEndian.AppendUint32(body, 0xffffffff) // null key
	body = binary.BigEndian.AppendUint32(body, 1)
	body = append(body, 'v')
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(body)))
	msg = append(msg, body...)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = msg
	var dec format.BatchDecoder
	kept := 0
	next, ok, err := keepBatches(&rp, 0, 5, 10, &dec, func(keptBatch) error { kept++; return nil })
	if err != nil || ok || kept != 0 || next != 5 {
		t.Fatalf("keepBatches of a magic 1 message set: kept %d, next %d, ok %v, err %v; want ok false", kept, next, ok, err)
	}
}
