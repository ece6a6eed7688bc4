package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestCrashLoopS3RestoreAndPrune is the crash loop's restore from S3 and
// prune on S3 (versitygw): the sample application plus 3,000 orders
// backed up once under a prefix, copied (CopyObject) under a new prefix
// for each iteration; the restore and the prune are SIGKILLed once or
// twice at random points of an uninterrupted run's length and run again
// to completion, then compared with the uninterrupted run: the restore
// record for record and offset for offset on a new kfake target, exactly
// once, with the same committed group offsets; the prune keeping exactly
// the backups the uninterrupted prune keeps, each passing verify --deep.
// Both must leave no multipart upload in progress and the same objects
// under the prefix as the uninterrupted run (restore ids aside): no stray
// object, no lock left. KDR_CRASH_ITERATIONS (default 6) and
// KDR_CRASH_SEED apply; the seed is logged.
func TestCrashLoopS3RestoreAndPrune(t *testing.T) {
	iterations, seed := crashLoopEnv(t)
	t.Logf("S3 restore and prune crash loop: %d iterations per command, seed %d (replay: KDR_CRASH_SEED=%d KDR_CRASH_ITERATIONS=%d go test ./cmd/kafkastreams-dr -run '^TestCrashLoopS3RestoreAndPrune$')", iterations, seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, seed^0xbb67ae8584caa73b))
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	s3c := srv.Client()

	src := testkit.StartKfake(t, 3)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, crashOrders)
	// cfg is the config of every command: the sample's topics, the
	// repository under prefix, and, for restores, a target.
	cfg := func(prefix string, target []string) string {
		return sampleConfig(t, "crash-s3.yaml", src.Addrs(), target, fmt.Sprintf(`storage:
  backend: s3
  bucket: %s
  prefix: %s
  region: %s
  endpoint: %s
  path_style: true
backup:
  segment_max_bytes: 16KiB
`, srv.Bucket, prefix, srv.Region, srv.Endpoint))
	}
	open := func(prefix string) storage.Backend {
		store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	// keys lists the objects under prefix, relative to it.
	keys := func(prefix string) []string {
		var out []string
		p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: &srv.Bucket, Prefix: aws.String(prefix + "/")})
		for p.HasMorePages() {
			page, err := p.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				out = append(out, strings.TrimPrefix(*o.Key, prefix+"/"))
			}
		}
		slices.Sort(out)
		return out
	}
	// copyPrefix copies every object under from to under to, on the server.
	copyPrefix := func(from, to string) {
		for _, k := range keys(from) {
			if _, err := s3c.CopyObject(t.Context(), &s3.CopyObjectInput{Bucket: &srv.Bucket, Key: aws.String(to + "/" + k),
				CopySource: aws.String(srv.Bucket + "/" + from + "/" + k)}); err != nil {
				t.Fatalf("copy %s/%s to %s: %v", from, k, to, err)
			}
		}
	}
	uploads := func(prefix string) int {
		out, err := s3c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &srv.Bucket, Prefix: aws.String(prefix + "/")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	// restoreIDs and targets stand for the restore ids and target
	// cluster ids in keys, which differ from run to run: the objects a
	// restore leaves are compared without them.
	restoreIDs := regexp.MustCompile(`^restores/\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}/`)
	targets := regexp.MustCompile(`crash-s3-target-\d+`)
	normalized := func(ks []string) []string {
		var out []string
		for _, k := range ks {
			k = targets.ReplaceAllString(restoreIDs.ReplaceAllString(k, "restores/<restore-id>/"), "<target>")
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}

	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg("base", nil)); code != exitOK {
		t.Fatalf("backup: exit %d\n%s\n%s", code, stdout, stderr)
	}
	baseStore := open("base")
	want, err := repository.Latest(t.Context(), baseStore)
	if err != nil || want == nil {
		t.Fatalf("the backup: %v, %v", want, err)
	}
	t.Logf("backup %s: %d objects", want.BackupID, len(keys("base")))

	t.Run("restore", func(t *testing.T) {
		// target starts a new target cluster (each Produce answered 5 ms
		// late: the copy is most of a run) and copies the repository
		// under a prefix of its own (restores write their journal, lock
		// and report there).
		target := func(id int) (prefix, config string, addrs []string) {
			c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID(fmt.Sprintf("crash-s3-target-%d", id)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			slowDown(c, kmsg.Produce, 5*time.Millisecond)
			prefix = fmt.Sprintf("restore-%d", id)
			copyPrefix("base", prefix)
			addrs = c.ListenAddrs()
			return prefix, cfg(prefix, addrs), addrs
		}
		prefix, config, addrs := target(0)
		full := &crashRun{t: t, args: []string{"--log-level", "info", "restore", "-c", config, "--yes"}}
		code, stderr, took := full.once()
		if code != exitOK {
			t.Fatalf("uninterrupted restore: exit %d\n%s", code, stderr)
		}
		wantRecs, wantGroup := restored(t, want, addrs)
		wantKeys := normalized(keys(prefix))
		wantTotal := 0
		for _, parts := range wantRecs {
			for _, rs := range parts {
				wantTotal += len(rs)
			}
		}
		t.Logf("uninterrupted restore from S3: %v, %d records, objects after it: %d", took, wantTotal, len(wantKeys))
		var total crashRun
		for i := range iterations {
			prefix, config, addrs := target(i + 1)
			c := &crashRun{t: t, args: []string{"--log-level", "info", "restore", "-c", config, "--yes"}}
			c.atKill = func() string {
				recs, group := restoredCounts(t, want, addrs)
				return fmt.Sprintf("%d of %d records restored, %d group offsets committed, %d objects", recs, wantTotal, group, len(keys(prefix)))
			}
			c.loop(rng, 1+rng.IntN(2), took)
			sameRestore(t, fmt.Sprintf("iteration %d", i), baseStore, want, addrs, wantRecs, wantGroup)
			if n := uploads(prefix); n != 0 {
				t.Errorf("iteration %d: %d multipart uploads left in progress", i, n)
			}
			if got := normalized(keys(prefix)); !slices.Equal(got, wantKeys) {
				t.Errorf("iteration %d: the objects differ from the uninterrupted restore's: only here %v, only there %v", i, without(got, wantKeys), without(wantKeys, got))
			}
			t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers: equal", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers)
			total.add(c)
		}
		total.mustHaveKilled(t, "S3 restore")
		t.Logf("S3 restore: %d iterations, %d kills, %d runs ended before their kill, %d lock takeovers; records lost 0, duplicated 0, uploads left 0, stray objects 0", iterations, total.kills, total.finished, total.takeovers)
	})

	t.Run("prune", func(t *testing.T) {
		// Four more backups of new orders, each with segments of its own.
		for n := range 4 {
			produceOrders(t, cl, crashOrders+300*n, 300)
			if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg("base", nil)); code != exitOK {
				t.Fatalf("backup %d: exit %d\n%s\n%s", n+2, code, stdout, stderr)
			}
		}
		before := completeIDs(t, baseStore)
		if len(before) != 5 {
			t.Fatalf("%d complete backups, want 5: %v", len(before), before)
		}
		prune := func(prefix string) *crashRun {
			return &crashRun{t: t, args: []string{"--log-level", "info", "prune", "-c", cfg(prefix, nil), "--keep-last", "2"}}
		}
		copyPrefix("base", "prune-ref")
		code, stderr, took := prune("prune-ref").once()
		if code != exitOK {
			t.Fatalf("uninterrupted prune: exit %d\n%s", code, stderr)
		}
		kept := completeIDs(t, open("prune-ref"))
		if len(kept) != 2 {
			t.Fatalf("the uninterrupted prune kept %v, want the last 2 of %v", kept, before)
		}
		wantKeys := keys("prune-ref")
		t.Logf("uninterrupted prune on S3: %v, kept %v of %v, %d of %d objects left", took, kept, before, len(wantKeys), len(keys("base")))
		var total crashRun
		for i := range iterations {
			prefix := fmt.Sprintf("prune-%d", i)
			copyPrefix("base", prefix)
			store := open(prefix)
			c := prune(prefix)
			c.atKill = func() string {
				return fmt.Sprintf("%d of %d backups left, %d objects", len(completeIDs(t, store)), len(before), len(keys(prefix)))
			}
			c.loop(rng, 1+rng.IntN(2), took)
			if got := completeIDs(t, store); !slices.Equal(got, kept) {
				t.Fatalf("iteration %d: %v remain, the uninterrupted prune kept %v", i, got, kept)
			}
			for _, id := range kept {
				if code, stdout, stderr := runCLI(t, "verify", "-c", cfg(prefix, nil), "--backup-id", id, "--deep"); code != exitOK {
					t.Fatalf("iteration %d: verify --deep %s: exit %d\n%s\n%s", i, id, code, stdout, stderr)
				}
			}
			if n := uploads(prefix); n != 0 {
				t.Errorf("iteration %d: %d multipart uploads left in progress", i, n)
			}
			if got := keys(prefix); !slices.Equal(got, wantKeys) {
				t.Errorf("iteration %d: the objects differ from the uninterrupted prune's: only here %v, only there %v", i, without(got, wantKeys), without(wantKeys, got))
			}
			t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers: kept %v", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers, kept)
			total.add(c)
		}
		total.mustHaveKilled(t, "S3 prune")
		t.Logf("S3 prune: %d iterations, %d kills, %d runs ended before their kill, %d lock takeovers; backups lost 0, stray objects 0", iterations, total.kills, total.finished, total.takeovers)
	})
}
