package verify_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestAgainstClusterFindsASegmentOfAnotherPartition is a regression test
// (issue 9): a segment swapped with another partition's, its checksum
// swapped with it in the manifest, was restored into the wrong partition
// and verify --against-cluster, reading the same swapped segment, said OK.
// The target here is what that restore wrote: each segment's records in
// the partition the manifest has it under.
func TestAgainstClusterFindsASegmentOfAnotherPartition(t *testing.T) {
	dir, store, m := sampleBackup(t)
	ctx := context.Background()
	tp := backupcheck.Topic(m, sample.Orders)
	a, c := &tp.PartitionCuts[0].Segments[0], &tp.PartitionCuts[len(tp.PartitionCuts)-1].Segments[0]
	ba, _ := os.ReadFile(filepath.Join(dir, a.Key))
	bc, _ := os.ReadFile(filepath.Join(dir, c.Key))
	if len(ba) == 0 || len(bc) == 0 {
		t.Fatalf("segments %s and %s are empty", a.Key, c.Key)
	}
	os.WriteFile(filepath.Join(dir, a.Key), bc, 0o600)
	os.WriteFile(filepath.Join(dir, c.Key), ba, 0o600)
	a.Size, c.Size = c.Size, a.Size
	a.SHA256, c.SHA256 = c.SHA256, a.SHA256

	// The checksums agree: only a decoded header can tell.
	if res, err := verify.Repository(ctx, store, m, false); err != nil || !res.OK() {
		t.Fatalf("shallow verify of the swapped backup: %v %v; want OK (the checksums were swapped too)", err, res.Problems)
	}

	dst := testkit.StartKfake(t, 1)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(tp.Partitions), -1, nil, sample.Orders); err != nil {
		t.Fatal(err)
	}
	for _, p := range tp.PartitionCuts {
		for _, s := range p.Segments {
			rc, err := store.Get(ctx, s.Key)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			var recs []*kgo.Record
			if _, _, _, err := format.ReadSegment(bytes.NewReader(b), func(r *format.Record) error {
				kr := &kgo.Record{Topic: sample.Orders, Partition: p.Partition, Key: r.Key, Value: r.Value, Timestamp: timeOf(r)}
				for _, h := range r.Headers {
					kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				recs = append(recs, kr)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := verify.AgainstCluster(ctx, store, m, target, []string{sample.Orders}, nil)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, p := range res.Problems {
		if strings.Contains(p.Message, "another partition") {
			named[p.Object] = true
		}
	}
	if !named[a.Key] || !named[c.Key] {
		t.Fatalf("problems %v: want both swapped segments %s and %s named as another partition's", res.Problems, a.Key, c.Key)
	}
}

// TestAgainstRestoreComparesOriginalOffsets: with the restore's offset
// maps, a restored record equal to the backup's but mapped from another
// original offset is a problem; a faithful restore has none.
func TestAgainstRestoreComparesOriginalOffsets(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	rep, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	maps := map[string]map[int32]*offsets.Map{}
	for _, pr := range rep.Partitions {
		if maps[pr.Topic] == nil {
			maps[pr.Topic] = map[int32]*offsets.Map{}
		}
		maps[pr.Topic][pr.Partition] = pr.Map
	}
	lookup := func(t string, p int32) *offsets.Map { return maps[t][p] }
	res, err := verify.AgainstRestore(ctx, store, m, target, nil, nil, lookup)
	if err != nil || !res.OK() {
		t.Fatalf("faithful restore: %v %v", err, res.Problems)
	}
	om := maps[sample.Orders][0]
	if om == nil || len(om.Runs) == 0 {
		t.Fatal("no offset map for orders/0")
	}
	om.Runs[0].Orig += 100 // the map says the first records came from elsewhere
	res, err = verify.AgainstRestore(ctx, store, m, target, []string{sample.Orders}, nil, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].Partition != 0 || !strings.Contains(res.Problems[0].Message, "moved") {
		t.Fatalf("problems %v: want orders/0's first record named as moved", res.Problems)
	}
}

func timeOf(r *format.Record) time.Time { return time.UnixMilli(r.Timestamp) }

// TestAgainstClusterChecksEachSegmentAgainstTheManifest is a regression
// test (issue 10, one verified partition reader): verify --against-cluster
// compared the target with a segment whose SHA-256 is not the one the
// manifest records and said OK; every reader of a partition now checks a
// segment read to its end against its manifest entry.
func TestAgainstClusterChecksEachSegmentAgainstTheManifest(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	if _, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store}); err != nil {
		t.Fatal(err)
	}
	s := &backupcheck.Topic(m, sample.Orders).PartitionCuts[0].Segments[0]
	s.SHA256 = strings.Repeat("0", 64)
	res, err := verify.AgainstCluster(ctx, store, m, target, []string{sample.Orders}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].Object != s.Key || !strings.Contains(res.Problems[0].Message, "SHA-256") ||
		!strings.Contains(res.Problems[0].Message, "the backup is damaged") {
		t.Fatalf("problems %v: want the one segment %s named for its SHA-256", res.Problems, s.Key)
	}
}
