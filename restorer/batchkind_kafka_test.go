package restorer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestBatchBackupRestoresLikeRecordBackupOnKafka: on a real Kafka 4.4
// source written by producers of every codec (franz-go: none, gzip,
// snappy in the xerial framing, lz4, zstd; kcat/librdkafka: snappy as a
// raw block), a transactional producer with committed and aborted
// transactions interleaved with a plain one, a compacted changelog with
// tombstones and a LogAppendTime topic, and a log start moved into the
// middle of a batch (DeleteRecords: the first fetch returns a batch
// straddling the backup's start), a chain of two backups in batch kind
// holds the records a chain in record kind holds, record for record, and
// restored into two other Kafka 4.4 brokers they give the same topics,
// records (key, value, headers, timestamp) and offset maps. The batch
// backup verifies deep; with one of its batch segments damaged, a restore
// refuses before its first write (the target has no topic).
func TestBatchBackupRestoresLikeRecordBackupOnKafka(t *testing.T) {
	const app = "pt-app"
	changelog := app + "-store-changelog"
	codecs := map[string]kgo.CompressionCodec{
		"pt-none": kgo.NoCompression(), "pt-gzip": kgo.GzipCompression(), "pt-snappy": kgo.SnappyCompression(),
		"pt-lz4": kgo.Lz4Compression(), "pt-zstd": kgo.ZstdCompression(),
	}
	src := testkit.StartKafka(t)
	srcAdm := testkit.Admin(t, src.Addrs())
	ctx := t.Context()
	create := func(topic string, parts int32, cfg map[string]*string) {
		t.Helper()
		if resp, err := srcAdm.CreateTopic(ctx, parts, 1, cfg, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	topics := []string{"pt-kcat-snappy", "pt-txn", "pt-logappend", changelog}
	for topic := range codecs {
		create(topic, 2, nil)
		topics = append(topics, topic)
	}
	create("pt-kcat-snappy", 1, nil)
	create("pt-txn", 1, nil)
	create("pt-logappend", 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")})
	create(changelog, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})

	// round writes n records to every topic; the codec topics get them in
	// batches of many records (one flush), with null keys, tombstones and
	// headers among them.
	round := func(from, n int) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		rec := func(topic string, i int) *kgo.Record {
			r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%17), Value: bytes.Repeat(fmt.Appendf(nil, "v%d-", i), 1+i%9),
				Headers: []kgo.RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}, {Key: "null", Value: nil}}}
			switch i % 11 {
			case 3:
				r.Key = nil
			case 5:
				r.Value = nil
			}
			if topic == changelog && r.Key == nil {
				r.Key = []byte("k-null") // a compacted topic refuses a null key
			}
			return r
		}
		for topic, codec := range codecs {
			cl := testkit.Client(t, src.Addrs(), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
			for i := from; i < from+n; i++ {
				cl.Produce(pctx, rec(topic, i), func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
			if err := cl.Flush(pctx); err != nil {
				t.Fatal(err)
			}
		}
		plain := testkit.Client(t, src.Addrs(), kgo.ProducerBatchCompression(kgo.GzipCompression()))
		for i := from; i < from+n; i++ {
			if err := plain.ProduceSync(pctx, rec(changelog, i), rec("pt-logappend", i)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("kcat-%d", from+i)
		}
		testkit.KcatProduce(t, src.Bootstrap(), "pt-kcat-snappy", 0, lines, "-X", "compression.codec=snappy", "-X", "linger.ms=100")
		txn := testkit.Client(t, src.Addrs(), kgo.TransactionalID("pt-txn-producer"), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
		for k, commit := range []bool{true, false, true, false} {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				txn.Produce(pctx, rec("pt-txn", from*10+k*5+i), nil)
			}
			if err := txn.Flush(pctx); err != nil {
				t.Fatal(err)
			}
			// A plain producer's record between the transaction's.
			if err := plain.ProduceSync(pctx, rec("pt-txn", from*10+k*5+99)).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := txn.EndTransaction(pctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
		}
	}
	round(0, 300)
	// The log start in the middle of a batch: the first fetch returns the
	// whole batch, records below the start included.
	del := kadm.Offsets{}
	del.AddOffset("pt-zstd", 0, 7, -1)
	if resp, err := srcAdm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}

	recordStore, _ := filesystemStore(t)
	batchStore, batchDir := filesystemStore(t)
	backupAll := func(store storage.Backend, kind string) *format.Manifest {
		t.Helper()
		res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
			ApplicationID: app, Include: topics, SegmentKind: kind, SegmentMaxBytes: 8 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return backupcheck.Latest(t, store, res.BackupID)
	}
	backupAll(recordStore, format.KindRecord)
	backupAll(batchStore, format.KindBatch)
	round(300, 200)
	recordM := backupAll(recordStore, format.KindRecord)
	batchM := backupAll(batchStore, format.KindBatch)

	if recordM.FormatVersion != format.Version || batchM.FormatVersion != format.VersionBatch || batchM.ParentBackupID == "" {
		t.Fatalf("format_version %d (record kind), %d (batch kind, parent %q): want %d and %d, an incremental batch backup",
			recordM.FormatVersion, batchM.FormatVersion, batchM.ParentBackupID, format.Version, format.VersionBatch)
	}
	var batchSegments int
	var damaged format.Segment
	for _, tp := range batchM.Topics {
		for i := range tp.PartitionCuts {
			p := &tp.PartitionCuts[i]
			want := backupcheck.Records(t, recordStore, recordM, tp.Name, p.Partition)
			got := backupcheck.Records(t, batchStore, batchM, tp.Name, p.Partition)
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%d: the batch backup holds %d records, the record backup %d (or they differ): %s",
					tp.Name, p.Partition, len(got), len(want), restorecheck.Summary(got))
			}
			if rp := findCut(recordM, tp.Name, p.Partition); rp == nil || rp.StartOffset != p.StartOffset || rp.EndOffset != p.EndOffset ||
				!reflect.DeepEqual(rp.StateDigest, p.StateDigest) {
				t.Errorf("%s/%d: cut or state digest differs from the record backup's: %+v vs %+v", tp.Name, p.Partition, p, rp)
			}
			for _, s := range p.Segments {
				if s.Kind == format.KindBatch {
					batchSegments++
					if tp.Name == "pt-txn" {
						damaged = s
					}
				}
			}
		}
	}
	if batchSegments < len(topics) || damaged.Key == "" {
		t.Fatalf("%d batch segments (none of pt-txn?): the batch backup did not store batches", batchSegments)
	}
	if res, err := verify.Repository(ctx, batchStore, batchM, true); err != nil || !res.OK() {
		t.Fatalf("deep verify of the batch backup: %v %+v", err, res)
	}

	// A damaged batch segment: the restore refuses before its first write.
	path := filepath.Join(batchDir, filepath.FromSlash(damaged.Key))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(orig)
	bad[len(bad)-40] ^= 0x10
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	batchDst := testkit.StartKafka(t)
	batchAdm := testkit.Admin(t, batchDst.Addrs())
	if _, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(batchDst.Addrs()...)}, Store: batchStore, ApplicationID: app}); err == nil ||
		!strings.Contains(err.Error(), damaged.Key) {
		t.Fatalf("restore of a damaged batch segment: %v, want a refusal naming %s", err, damaged.Key)
	}
	for topic := range restorecheck.Topics(t, batchAdm) {
		if !strings.HasPrefix(topic, "__") {
			t.Fatalf("refused restore created topic %q", topic)
		}
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	recordDst := testkit.StartKafka(t)
	restored := map[string]restorecheck.Records{}
	maps := map[string]map[string]any{}
	for kind, c := range map[string]struct {
		store storage.Backend
		dst   []string
	}{format.KindRecord: {recordStore, recordDst.Addrs()}, format.KindBatch: {batchStore, batchDst.Addrs()}} {
		rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(c.dst...)}, Store: c.store, ApplicationID: app})
		if err != nil {
			t.Fatalf("restore of the %s backup: %v", kind, err)
		}
		ends := restorecheck.EndOffsets(t, testkit.Admin(t, c.dst), topics...)
		restored[kind] = restorecheck.ReadAll(t, c.dst, ends)
		maps[kind] = map[string]any{}
		for _, p := range rep.Partitions {
			maps[kind][fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = []any{p.Map, p.NewEnd, p.Records, p.StateDigestResult}
		}
	}
	for topic, parts := range restored[format.KindRecord] {
		for p, want := range parts {
			got := restored[format.KindBatch][topic][p]
			restorecheck.SameRecords(t, fmt.Sprintf("%s/%d restored from the batch backup", topic, p), got, want, false)
			for i := range min(len(got), len(want)) {
				if got[i].Offset != want[i].Offset {
					t.Errorf("%s/%d: record %d restored at offset %d from the batch backup, at %d from the record backup", topic, p, i, got[i].Offset, want[i].Offset)
					break
				}
			}
		}
	}
	if !reflect.DeepEqual(maps[format.KindBatch], maps[format.KindRecord]) {
		t.Errorf("offset maps differ:\n batch  %v\n record %v", maps[format.KindBatch], maps[format.KindRecord])
	}
}

func filesystemStore(t *testing.T) (storage.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func findCut(m *format.Manifest, topic string, partition int32) *format.Partition {
	for _, tp := range m.Topics {
		for i := range tp.PartitionCuts {
			if tp.Name == topic && tp.PartitionCuts[i].Partition == partition {
				return &tp.PartitionCuts[i]
			}
		}
	}
	return nil
}
