package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// cluster is what the tests need of a Kafka cluster, real or kfake.
type cluster interface {
	Bootstrap() string
	Addrs() []string
}

// seedWithKcat seeds the sample application with franz-go, then adds
// records produced by kcat (librdkafka), an independent producer: key:value
// lines with duplicate headers, and tombstones (-Z).
func seedWithKcat(t *testing.T, c cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sample.Seed(ctx, testkit.Client(t, c.Addrs())); err != nil {
		t.Fatal(err)
	}
	testkit.KcatProduce(t, c.Bootstrap(), sample.Totals, 0, []string{"kcat-1:100", "kcat-2:200", "kcat-3:"},
		"-K:", "-H", "source=kcat", "-H", "source=librdkafka", "-H", "empty=")
	testkit.KcatProduce(t, c.Bootstrap(), sample.Totals, 0, []string{"kcat-1:"}, "-K:", "-Z") // tombstone
}

func s3Store(t *testing.T, prefix string) storage.Backend {
	t.Helper()
	srv := testkit.StartS3(t)
	srv.SetEnv(t) // credentials through the standard AWS chain, as in production
	st, err := storage.NewS3(context.Background(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix,
		Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func options(c cluster, store storage.Backend) backup.Options {
	return backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs,
		Include: sample.Include, Exclude: sample.Exclude, SourceClusterID: "test", SegmentMaxBytes: 4 << 10}
}

// checkBackup runs every assertion on a backup of the kcat-seeded sample.
func checkBackup(t *testing.T, c cluster, store storage.Backend, id string) *format.Manifest {
	t.Helper()
	m := backupcheck.Latest(t, store, id)
	backupcheck.SampleManifest(t, m)
	backupcheck.MatchesCluster(t, store, m, c.Addrs())
	backupcheck.SampleRecords(t, store, m)
	checkAgainstKcat(t, c, store, m)
	return m
}

// checkAgainstKcat compares the backup of every text topic with what kcat
// (librdkafka, read_committed) reads: offsets, keys, values, headers, null
// versus empty.
func checkAgainstKcat(t *testing.T, c cluster, store storage.Backend, m *format.Manifest) {
	t.Helper()
	for _, topic := range []string{sample.Totals, sample.Customers, sample.Changelog, sample.Payments} {
		tp := backupcheck.Topic(m, topic)
		msgs := testkit.KcatConsume(t, c.Bootstrap(), topic, "-X", "isolation.level=read_committed")
		var want []string
		for _, msg := range msgs {
			want = append(want, fmt.Sprintf("%d/%d k=%s v=%s h=%s", msg.Partition, msg.Offset, str(msg.Key), str(msg.Payload), strs(msg.Headers)))
		}
		var got []string
		for _, p := range tp.PartitionCuts {
			for _, r := range backupcheck.Records(t, store, m, topic, p.Partition) {
				var hs []*string
				for _, h := range r.Headers {
					k := h.Key
					hs = append(hs, &k, bstr(h.Value))
				}
				got = append(got, fmt.Sprintf("%d/%d k=%s v=%s h=%s", r.Partition, r.Offset, str(bstr(r.Key)), str(bstr(r.Value)), strs(hs)))
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("topic %q: backup and kcat disagree\nbackup: %q\n  kcat: %q", topic, got, want)
		}
	}
}

func bstr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func str(s *string) string {
	if s == nil {
		return "<null>"
	}
	return fmt.Sprintf("%q", *s)
}

func strs(ss []*string) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, str(s))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// waitForCompaction waits until the broker's log cleaner has left holes in
// the compacted customers topic.
func waitForCompaction(t *testing.T, c cluster) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		recs, err := sample.ReadCommitted(context.Background(), c.Addrs(), sample.Customers, map[int32]int64{0: 1 << 40, 1: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		holes := map[int32]bool{}
		last := map[int32]int64{0: -1, 1: -1}
		for _, r := range recs {
			if r.Offset != last[r.Partition]+1 {
				holes[r.Partition] = true
			}
			last[r.Partition] = r.Offset
		}
		if holes[0] && holes[1] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log cleaner compacted nothing in 90s (holes %v)", holes)
		}
		// Appending rolls the active segment (segment.ms=100) so the
		// cleaner can clean the previous one.
		cl := testkit.Client(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for p := range int32(2) {
			cl.ProduceSync(context.Background(), &kgo.Record{Topic: sample.Customers, Partition: p, Key: []byte("cust-0"), Value: []byte(`{"roll":true}`)})
		}
		time.Sleep(time.Second)
	}
}

// TestBackupRealKafka backs the sample application up from a real Apache
// Kafka 4.x broker (KRaft) to S3 on a real S3-compatible server and to a
// local directory.
func TestBackupRealKafka(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t,
		testkit.KafkaProperty("log.cleaner.backoff.ms", "100"),
		testkit.KafkaProperty("log.cleaner.min.compaction.lag.ms", "0"),
		testkit.KafkaProperty("log.retention.check.interval.ms", "1000"))
	seedWithKcat(t, k)
	waitForCompaction(t, k)

	s3 := s3Store(t, "streams/order-processor")
	res, err := backup.Run(context.Background(), options(k, s3))
	if err != nil {
		t.Fatal(err)
	}
	m := checkBackup(t, k, s3, res.BackupID)
	if m.KafkaClusterID != k.ClusterID() {
		t.Errorf("kafka_cluster_id %q, broker says %q", m.KafkaClusterID, k.ClusterID())
	}

	fs, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res2, err := backup.Run(context.Background(), options(k, fs))
	if err != nil {
		t.Fatal(err)
	}
	checkBackup(t, k, fs, res2.BackupID)
}

// TestBackupKfakeToS3 is the same on a 3-broker kfake cluster.
func TestBackupKfakeToS3(t *testing.T) {
	t.Parallel()
	kf := testkit.StartKfake(t, 3)
	seedWithKcat(t, kf)
	kf.Compact()
	s3 := s3Store(t, "")
	res, err := backup.Run(context.Background(), options(kf, s3))
	if err != nil {
		t.Fatal(err)
	}
	checkBackup(t, kf, s3, res.BackupID)
}
