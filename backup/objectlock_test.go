package backup_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// objectRetentions lists every object under prefix in bucket and returns
// its Object Lock retention as versitygw reports it (GetObjectRetention;
// the zero value for an object without one), by key relative to prefix.
func objectRetentions(t *testing.T, srv testkit.S3Server, bucket, prefix string) map[string]storage.Retention {
	t.Helper()
	ctx := t.Context()
	cl := srv.Client()
	got := map[string]storage.Retention{}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			out, err := cl.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String(bucket), Key: o.Key})
			var r storage.Retention
			switch {
			case err != nil && strings.Contains(err.Error(), "NoSuchObjectLockConfiguration"):
			case err != nil:
				t.Fatalf("GetObjectRetention %s: %v", key, err)
			default:
				r = storage.Retention{Mode: string(out.Retention.Mode), Until: aws.ToTime(out.Retention.RetainUntilDate)}
			}
			got[strings.TrimPrefix(key, prefix)] = r
		}
	}
	return got
}

// lockedStore is an S3 backend on bucket under prefix "app" with a
// COMPLIANCE retention of period on what format.Retained selects, as
// kafkastreams-dr opens it with storage.object_lock.
func lockedStore(t *testing.T, srv testkit.S3Server, bucket string, period time.Duration) *storage.S3 {
	t.Helper()
	store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: bucket, Prefix: "app", Endpoint: srv.Endpoint, PathStyle: true,
		Retention: storage.ObjectRetention{Mode: storage.RetentionCompliance, Period: period}, Retained: format.Retained})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// onlyBackend hides every optional method of a Backend (RetentionReader
// among them): prune then cannot see retentions and meets the store's
// refusal instead.
type onlyBackend struct{ storage.Backend }

// TestObjectLockRetainsWhatABackupKeeps: with storage.object_lock, two
// backups (a full one and an incremental one) on versitygw leave every
// segment and manifest.json retained in COMPLIANCE mode until their
// upload + the period (read back with GetObjectRetention, and with the AWS
// CLI), and nothing else: the lock and the progress manifests, which the
// run deletes, carry none and are gone. Prune with keep-last 1 then keeps
// the older backup whole (its manifest is retained: RetainUntil, a reason
// naming the date), skips a retained unreferenced segment with a count
// instead of failing, and the kept backup verifies. The same prune on an
// unlocked repository forgets it (the control). A prune that cannot see
// retentions meets versitygw's refusal of the manifest's delete and stops
// naming the object and its retain-until date, before deleting any
// segment.
func TestObjectLockRetainsWhatABackupKeeps(t *testing.T) {
	kf := seededKfake(t)
	ctx := t.Context()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	bucket := "kdr-locked-app"
	srv.CreateLockedBucket(t, bucket)
	const period = 3 * time.Hour
	store := lockedStore(t, srv, bucket, period)
	plain, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Prefix: "app", Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var first, second string
	for i, st := range []storage.Backend{store, plain} {
		r1, err := backup.Run(ctx, sampleOptions(kf.Addrs(), st))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			cl := manualClient(t, kf.Addrs())
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sample.Orders, Partition: 1, Key: []byte("k"), Value: []byte("after the first backup")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		r2, err := backup.Run(ctx, sampleOptions(kf.Addrs(), st))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first, second = r1.BackupID, r2.BackupID
		}
	}
	end := time.Now()

	got := objectRetentions(t, srv, bucket, "app/")
	var segments, manifests int
	for key, r := range got {
		if !format.Retained(key) {
			t.Errorf("%s: in the repository after two complete backups; only segments and manifests should stay", key)
			continue
		}
		if strings.HasSuffix(key, ".kseg") {
			segments++
		} else {
			manifests++
		}
		if r.Mode != storage.RetentionCompliance || r.Until.Before(start.Add(period).Add(-time.Second)) || r.Until.After(end.Add(period)) {
			t.Errorf("%s: retention %+v, want COMPLIANCE until %s..%s", key, r, start.Add(period), end.Add(period))
		}
	}
	if segments < 5 || manifests != 2 {
		t.Fatalf("repository holds %d segments and %d manifests, want several segments and 2 manifests: %v", segments, manifests, got)
	}
	t.Logf("retained: %d segments and %d manifests (COMPLIANCE, until upload + %s); objects without retention: 0", segments, manifests, period)
	firstUntil := got[format.ManifestKey(first)].Until
	var cli struct {
		Retention struct{ Mode, RetainUntilDate string }
	}
	srv.AWSS3API(t, &cli, "get-object-retention", "--bucket", bucket, "--key", "app/"+format.ManifestKey(first))
	if u, err := time.Parse(time.RFC3339, cli.Retention.RetainUntilDate); cli.Retention.Mode != "COMPLIANCE" || err != nil || !u.Equal(firstUntil) {
		t.Errorf("aws s3api get-object-retention of the first manifest: %+v, want COMPLIANCE until %s", cli.Retention, firstUntil)
	}

	// A segment of the first backup that no manifest names (as a killed
	// and resumed run leaves), retained as every segment is.
	garbage := format.SegmentKey(first, sample.Orders, 0, 1<<40)
	if err := store.Put(ctx, garbage, strings.NewReader("garbage"), 7); err != nil {
		t.Fatal(err)
	}
	segs := segmentCount(t, store)

	// A prune that does not see retentions: versitygw refuses the
	// manifest's delete; prune stops there and deletes no segment.
	_, err = catalog.Prune(ctx, onlyBackend{store}, catalog.PruneOptions{Policy: catalog.Policy{Last: 1}})
	var re *storage.RetainedError
	if !errors.As(err, &re) || re.Key != format.ManifestKey(first) || !re.Retention.Until.Equal(firstUntil) {
		t.Fatalf("prune without retention checks: %v, want the refusal of %s's manifest until %s", err, first, firstUntil)
	}
	if !strings.Contains(err.Error(), firstUntil.UTC().Format(time.RFC3339)) || !strings.Contains(err.Error(), "app/"+format.ManifestKey(first)) {
		t.Errorf("prune error %q does not name the manifest and its retain-until date", err)
	}
	if n := segmentCount(t, store); n != segs {
		t.Errorf("the refused prune left %d segments of %d", n, segs)
	}

	// The prune: the older backup is kept whole, the garbage segment
	// stays with a count.
	res, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 1}})
	if err != nil {
		t.Fatalf("prune of a retained repository: %v", err)
	}
	if res.Forgotten != 0 || res.Segments != 0 || res.RetainedSegments != 1 || res.RetainedUntil == nil || res.KeptSegments != segs {
		t.Errorf("prune: forgot %d, deleted %d segments, %d retained (until %v), %d kept; want 0, 0, 1 and all %d kept",
			res.Forgotten, res.Segments, res.RetainedSegments, res.RetainedUntil, res.KeptSegments, segs)
	}
	for _, d := range res.Backups {
		if d.BackupID != first {
			continue
		}
		if !d.Keep || d.RetainUntil == nil || !d.RetainUntil.Equal(firstUntil) ||
			!strings.Contains(d.Reason, "under S3 Object Lock retention (COMPLIANCE) until "+firstUntil.UTC().Format(time.RFC3339)) {
			t.Errorf("decision for the retained backup %s: %+v, want kept until %s", first, d, firstUntil)
		}
	}
	if n := segmentCount(t, store); n != segs {
		t.Errorf("prune left %d segments of %d", n, segs)
	}
	t.Logf("prune keep-last 1: forgot %d, deleted %d segments, %d unreferenced segment retained, %d segments kept", res.Forgotten, res.Segments, res.RetainedSegments, res.KeptSegments)
	m := backupcheck.Latest(t, store, second)
	if r, err := verify.Repository(ctx, store, m, true); err != nil || !r.OK() {
		t.Fatalf("verify --deep of the latest backup after prune: %v %+v", err, r)
	}

	// The control: without retention, the same policy forgets it.
	res, err = catalog.Prune(ctx, plain, catalog.PruneOptions{Policy: catalog.Policy{Last: 1}})
	if err != nil || res.Forgotten != 1 {
		t.Fatalf("prune of the unlocked repository: %v, forgot %v; want 1", err, res)
	}
}

func segmentCount(t *testing.T, store storage.Backend) int {
	t.Helper()
	n := 0
	if err := store.List(context.WithoutCancel(t.Context()), format.SegmentsPrefix(), func(storage.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// racingStore writes every manifest.json twice with the same bytes: first
// as the other shard of a sharded run committing at the same moment does
// (commitShards), then as the caller asked.
type racingStore struct{ storage.Backend }

func (s racingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if !strings.HasSuffix(key, "/manifest.json") {
		return s.Backend.Put(ctx, key, r, size)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := s.Backend.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return err
	}
	return s.Backend.Put(ctx, key, bytes.NewReader(b), int64(len(b)))
}

// TestShardsCommittingTogetherUnderObjectLock is a regression test: two
// shards of a sharded backup that find every shard done at the same moment
// both write the same manifest.json; on a store with Object Lock and no
// versioning (versitygw's posix backend) the second write is refused as
// the replacement of a retained object, and that shard failed ("write
// manifest …: under Object Lock retention") although the backup was
// complete. A refused write of a manifest holding exactly the shard's bytes
// is the other shard's commit: the shard completes.
func TestShardsCommittingTogetherUnderObjectLock(t *testing.T) {
	kf := seededKfake(t)
	ctx := t.Context()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	bucket := "kdr-locked-shards"
	srv.CreateLockedBucket(t, bucket)
	store := lockedStore(t, srv, bucket, time.Hour)
	shard := func(i int, st storage.Backend) backup.Options {
		o := sampleOptions(kf.Addrs(), st)
		o.Shard = &backup.Shard{Index: i, Count: 2, Run: "r1"}
		return o
	}
	r0, err := backup.Run(ctx, shard(0, store))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := backup.Run(ctx, shard(1, racingStore{store}))
	if err != nil {
		t.Fatalf("shard 1, its manifest already written by the other shard: %v", err)
	}
	if r1.Manifest != format.ManifestKey(r0.BackupID) || len(r1.ShardsPending) != 0 {
		t.Fatalf("shard 1: manifest %q pending %v, want backup %s complete", r1.Manifest, r1.ShardsPending, r0.BackupID)
	}
	m := backupcheck.Latest(t, store, r0.BackupID)
	if r, err := verify.Repository(ctx, store, m, true); err != nil || !r.OK() {
		t.Fatalf("verify --deep of the sharded backup: %v %+v", err, r)
	}
	for key := range objectRetentions(t, srv, bucket, "app/") {
		if !format.Retained(key) {
			t.Errorf("%s left after the sharded backup completed", key)
		}
	}
}

// stopsAtProgress fails every write of a progress manifest after the first
// (the cut), and of the manifest: the run stops as a kill would after
// segments were stored and before a progress manifest named them.
type stopsAtProgress struct {
	storage.Backend
	writes *atomic.Int32
}

func (s stopsAtProgress) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasSuffix(key, "/manifest.json") || strings.HasSuffix(key, "/progress.json") && s.writes.Add(1) > 1 {
		return errors.New("stopped before the progress write (as a kill)")
	}
	return s.Backend.Put(ctx, key, r, size)
}

// TestResumeRewritesRetainedSegments is a regression test: a backup that
// stopped after storing segments no progress manifest names is resumed by
// the next run, which writes those segments again under the same keys
// (the same first offsets). On a store with Object Lock and no versioning
// the rewrite of a retained segment was refused and the resumed run failed
// ("store segment …: under Object Lock retention"). The rewrite holds the
// same bytes (same records, same encoder): a refused write whose stored
// object has the segment's SHA-256 and size is the segment written; the
// resumed backup completes, equal to the sample, and verifies.
func TestResumeRewritesRetainedSegments(t *testing.T) {
	kf := seededKfake(t)
	ctx := t.Context()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	bucket := "kdr-locked-resume"
	srv.CreateLockedBucket(t, bucket)
	store := lockedStore(t, srv, bucket, time.Hour)
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), stopsAtProgress{store, new(atomic.Int32)})); err == nil {
		t.Fatal("the stopped run succeeded")
	}
	unnamed := segmentCount(t, store)
	if unnamed == 0 {
		t.Fatal("the stopped run stored no segment: nothing to rewrite")
	}
	res, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatalf("resume over %d retained unnamed segments: %v", unnamed, err)
	}
	if !res.Resumed {
		t.Fatal("the second run did not resume the stopped one")
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	backupcheck.SampleManifest(t, m)
	backupcheck.SampleRecords(t, store, m)
	if r, err := verify.Repository(ctx, store, m, true); err != nil || !r.OK() {
		t.Fatalf("verify --deep of the resumed backup: %v %+v", err, r)
	}
	t.Logf("resumed over %d retained segments the stopped run stored", unnamed)
}
