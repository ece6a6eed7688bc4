package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

func sampleBackup(t *testing.T) (string, storage.Backend, *format.Manifest) {
	t.Helper()
	src := testkit.StartKfake(t, 3)
	ctx := context.Background()
	if err := sample.Seed(ctx, testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include, SegmentMaxBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return dir, store, backupcheck.Latest(t, store, res.BackupID)
}

func TestRepositoryDetectsDamage(t *testing.T) {
	dir, store, m := sampleBackup(t)
	ctx := context.Background()
	for _, deep := range []bool{false, true} {
		res, err := verify.Repository(ctx, store, m, deep)
		if err != nil || !res.OK() || res.Segments == 0 {
			t.Fatalf("intact backup (deep %v): %v %+v", deep, err, res)
		}
	}
	cuts := backupcheck.Topic(m, sample.Orders).PartitionCuts
	flipped, missing := cuts[0].Segments[0].Key, cuts[1].Segments[0].Key

	b, _ := os.ReadFile(filepath.Join(dir, flipped))
	b[len(b)/2] ^= 0x20
	os.WriteFile(filepath.Join(dir, flipped), b, 0o600)
	os.Remove(filepath.Join(dir, missing))

	res, err := verify.Repository(ctx, store, m, true)
	if err != nil {
		t.Fatal(err)
	}
	var sawFlip, sawMissing bool
	for _, p := range res.Problems {
		sawFlip = sawFlip || (p.Object == flipped && strings.Contains(p.Message, "SHA-256") && p.Topic == sample.Orders)
		sawMissing = sawMissing || (p.Object == missing && strings.Contains(p.Message, "missing"))
	}
	if !sawFlip || !sawMissing {
		t.Fatalf("problems %v: want the flipped byte in %s and the missing %s named", res.Problems, flipped, missing)
	}
}

func TestAgainstClusterDetectsMissingAndChangedRecords(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	if _, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store}); err != nil {
		t.Fatal(err)
	}
	res, err := verify.AgainstCluster(ctx, store, m, target, nil, nil)
	if err != nil || !res.OK() {
		t.Fatalf("restored cluster: %v %v", err, res.Problems)
	}
	var total int64
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			total += p.Records
		}
	}
	if res.Records != total {
		t.Fatalf("compared %d records, the backup holds %d", res.Records, total)
	}

	// A changed record: one more record in payments is "extra"; an
	// unrestored topic is missing records; a changed value is named.
	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sample.Payments, Partition: 0, Key: []byte("x"), Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{sample.Totals: {0: {Topic: sample.Totals, Partition: 0, At: 5, LeaderEpoch: -1}}})
	if err != nil || dr.Error() != nil {
		t.Fatal(err, dr.Error())
	}
	res, err = verify.AgainstCluster(ctx, store, m, target, []string{sample.Payments, sample.Totals}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var extra, gone bool
	for _, p := range res.Problems {
		extra = extra || (p.Topic == sample.Payments && p.Offset == 12 && strings.Contains(p.Message, "extra"))
		gone = gone || (p.Topic == sample.Totals && p.Partition == 0 && strings.Contains(p.Message, "missing"))
	}
	if !extra || !gone {
		t.Fatalf("problems %v: want the extra payments record at offset 12 and the deleted customer-totals records", res.Problems)
	}
}

func TestAgainstClusterNamesAChangedRecord(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 1)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, sample.Payments); err != nil {
		t.Fatal(err)
	}
	// The backup's payments records, but the third with another value.
	for i, r := range backupcheck.Records(t, store, m, sample.Payments, 0) {
		v := r.Value
		if i == 2 {
			v = []byte("tampered")
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sample.Payments, Key: r.Key, Value: v, Timestamp: time.UnixMilli(r.Timestamp)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := verify.AgainstCluster(ctx, store, m, target, []string{sample.Payments}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].Offset != 2 || !strings.Contains(res.Problems[0].Message, `value "tampered", want "10"`) {
		t.Fatalf("problems %v: want the changed record at offset 2 named with its value", res.Problems)
	}
}
