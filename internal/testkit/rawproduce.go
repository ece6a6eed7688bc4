package testkit

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawRecord is one record for ProduceRaw: its CreateTime in milliseconds
// is sent as it is, whatever its value (-1, Long.MAX, year 3000).
type RawRecord struct {
	Key, Value []byte
	Timestamp  int64
}

// ProduceRaw writes recs to topic's partition, one v2 record batch per
// record (DefaultRecordBatch: magic 2, CRC-32C, CreateTime, no producer id),
// encoded here with kmsg and sent with a raw ProduceRequest (acks all) to
// the partition's leader. franz-go's producer sends a record's time as
// time.Time.UnixNano()/1e6, so it cannot write a timestamp outside
// 1677-09-21..2262-04-11; a test that needs one (as another client may
// write it) uses this. A failed write fails the test.
func ProduceRaw(t testing.TB, addrs []string, topic string, partition int32, recs []RawRecord) {
	t.Helper()
	cl := Client(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %q: %v", topic, err)
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok || p.Err != nil {
		t.Fatalf("topic %q partition %d: not in the metadata (%v)", topic, partition, p.Err)
	}
	for i, r := range recs {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.TopicID = md.Topics[topic].ID // ProduceRequest v13+ (KIP-516) names the topic by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = partition
		rp.Records = rawBatch(r)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(p.Leader)))
		if err != nil {
			t.Fatalf("produce record %d to %s/%d: %v", i, topic, partition, err)
		}
		for _, tr := range resp.Topics {
			for _, pr := range tr.Partitions {
				if err := kerr.ErrorForCode(pr.ErrorCode); err != nil {
					t.Fatalf("produce record %d (timestamp %d) to %s/%d: %v", i, r.Timestamp, topic, partition, err)
				}
			}
		}
	}
}

// rawBatch encodes one record as a v2 record batch.
func rawBatch(r RawRecord) []byte {
	rec := kmsg.Record{Key: r.Key, Value: r.Value}
	body := rec.AppendTo(nil)[1:] // without the Length varint (0: one byte)
	rec.Length = int32(len(body))
	records := rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2,
		Attributes: 0, LastOffsetDelta: 0,
		FirstTimestamp: r.Timestamp, MaxTimestamp: r.Timestamp,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: records,
	}
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[8:12], uint32(len(enc)-12))
	// The CRC covers everything from the attributes (offset 21) on.
	crc := crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(enc[17:21], crc)
	return enc
}
