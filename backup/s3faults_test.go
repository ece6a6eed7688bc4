package backup_test

import (
	"context"
	"math/rand/v2"
	"slices"
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

// TestS3FaultsEndExact is issue 14's S3 fault suite, end to end: a backup
// to versitygw through the fault proxy (testkit.S3Proxy) with HTTP 500s,
// 503 SlowDown, connection resets (before an answer, inside a multipart
// upload's parts, on its completion), lost answers, stalled and hanging
// requests, each on a share of the requests, ends with a backup equal to
// an unfaulted one record for record (offsets, keys, values, timestamps,
// state digests, group offsets); a restore from that backup through the
// proxy with downloads cut short, reset mid-body, stalled and throttled
// puts every record on the target once. The faults stay within the retry
// budget: each case must end exact, none may fail or hang. One partition
// holds ~6 MiB of incompressible values so that its segment is a
// multipart upload of two 5 MiB parts.
func TestS3FaultsEndExact(t *testing.T) {
	kf := seededKfake(t)
	ctx := t.Context()
	cl := manualClient(t, kf.Addrs())
	rnd := rand.New(rand.NewPCG(14, 14))
	var big []*kgo.Record
	for i := range 1500 {
		v := make([]byte, 4096)
		for j := range v {
			v[j] = byte(rnd.Uint32())
		}
		big = append(big, &kgo.Record{Topic: sample.Orders, Partition: 2, Key: []byte{byte(i), byte(i >> 8)}, Value: v})
	}
	if err := cl.ProduceSync(ctx, big...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	options := func(store storage.Backend) backup.Options {
		o := sampleOptions(kf.Addrs(), store)
		o.SegmentMaxBytes = 16 << 20 // the big partition in one segment of two parts
		return o
	}
	fsStore, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := backup.Run(ctx, options(fsStore))
	if err != nil {
		t.Fatal(err)
	}
	wantM := backupcheck.Latest(t, fsStore, want.BackupID)

	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	faulty := func(t *testing.T, prefix string) (storage.Backend, *testkit.S3Proxy) {
		t.Helper()
		proxy := testkit.StartS3Proxy(t, srv.Endpoint)
		store, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Endpoint: proxy.Endpoint, PathStyle: true,
			PartSize: 5 << 20, RequestTimeout: 2 * time.Second, RetryTimeout: 60 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return store, proxy
	}
	backupCases := []struct {
		name   string
		faults []testkit.Fault
		kinds  []string // each must have been injected at least once
	}{
		{"500 and 503 SlowDown on a third of the writes", []testkit.Fault{
			{Method: "PUT", Action: testkit.FaultStatus500, Rate: 0.2},
			{Method: "PUT", Action: testkit.FaultSlowDown, Rate: 0.2},
		}, []string{"500 PUT", "503-slowdown PUT"}},
		{"resets inside a multipart upload", []testkit.Fault{
			{Method: "PUT", QueryContains: "partNumber=2", Action: testkit.FaultReset, Times: 2},
			{Method: "POST", QueryContains: "uploadId", Action: testkit.FaultLoseResponse, Times: 1},
			{Method: "PUT", PathContains: "/segments/", Action: testkit.FaultReset, Times: 3, Skip: 2},
		}, []string{"reset PUT", "partNumber=2", "lose-response POST"}},
		{"lost answers, stalls and a hang on manifest writes and lists", []testkit.Fault{
			{Method: "PUT", PathContains: "progress.json", Action: testkit.FaultLoseResponse, Times: 1},
			{Method: "PUT", PathContains: "manifest.json", Action: testkit.FaultHang, Times: 1},
			{Method: "GET", Action: testkit.FaultStallBody, Times: 2},
		}, []string{"lose-response PUT", "hang PUT"}},
	}
	var donePrefix string
	var doneM *format.Manifest
	for i, tc := range backupCases {
		t.Run("backup/"+tc.name, func(t *testing.T) {
			store, proxy := faulty(t, "faults-"+string(rune('a'+i)))
			for _, f := range tc.faults {
				proxy.Fault(f)
			}
			bctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			res, err := backup.Run(bctx, options(store))
			if err != nil {
				t.Fatalf("backup through %v: %v", proxy.Injected(), err)
			}
			injectedEach(t, proxy, tc.kinds)
			m := backupcheck.Latest(t, store, res.BackupID)
			sameBackups(t, fsStore, wantM, store, m)
			if r, err := verify.Repository(ctx, store, m, true); err != nil || !r.OK() {
				t.Fatalf("verify --deep of the faulted backup: %v %+v", err, r)
			}
			donePrefix, doneM = "faults-"+string(rune('a'+i)), m
		})
	}
	if doneM == nil {
		t.Fatal("no faulted backup completed")
	}
	// The faulted backup's objects, read without a proxy: the oracle.
	done, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Prefix: donePrefix, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}

	restoreCases := []struct {
		name   string
		faults []testkit.Fault
		kinds  []string
	}{
		{"downloads cut short and reset mid-body", []testkit.Fault{
			{Method: "GET", PathContains: "/segments/", Action: testkit.FaultTruncate, Times: 3},
			{Method: "GET", PathContains: "/segments/", Action: testkit.FaultResetMidBody, Times: 3, Skip: 3},
		}, []string{"truncate GET", "reset-mid-body GET"}},
		{"stalled bodies and throttling", []testkit.Fault{
			{Method: "GET", PathContains: "/segments/", Action: testkit.FaultStallBody, Times: 2},
			{Action: testkit.FaultSlowDown, Rate: 0.2},
			{Method: "PUT", Action: testkit.FaultStatus500, Rate: 0.3},
		}, []string{"stall-body GET", "503-slowdown"}},
	}
	for _, tc := range restoreCases {
		t.Run("restore/"+tc.name, func(t *testing.T) {
			// The same objects as the faulted backup's, read through a
			// new proxy.
			store, proxy := faulty(t, donePrefix)
			for _, f := range tc.faults {
				proxy.Fault(f)
			}
			dst := testkit.StartKfake(t, 3)
			target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
			rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			rep, err := restorer.Run(rctx, restorer.Options{Target: target, Store: store, ApplicationID: sample.AppID, BackupID: doneM.BackupID})
			if err != nil {
				t.Fatalf("restore through %v: %v", proxy.Injected(), err)
			}
			injectedEach(t, proxy, tc.kinds)
			if !rep.Committed {
				t.Fatal("the restore did not commit the group's offsets")
			}
			adm := kadm.NewClient(testkit.Client(t, dst.Addrs()))
			for _, tp := range slices.Concat(doneM.Topics, doneM.InFlight) {
				ends, err := adm.ListEndOffsets(ctx, tp.Name)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range tp.PartitionCuts {
					if o, _ := ends.Lookup(tp.Name, p.Partition); o.Offset != p.Records {
						t.Errorf("%s/%d: %d records on the target, the backup has %d", tp.Name, p.Partition, o.Offset, p.Records)
					}
				}
			}
			res, err := verify.AgainstCluster(ctx, done, doneM, target, nil, nil)
			if err != nil || !res.OK() {
				t.Fatalf("restored cluster against the backup: %v %+v", err, res)
			}
		})
	}
}

// injectedEach logs the faults proxy injected, fails t unless each of
// kinds (an action and method like "500 PUT", or a part of the line like
// "partNumber=2") is among them, and clears the proxy's rules.
func injectedEach(t *testing.T, proxy *testkit.S3Proxy, kinds []string) {
	t.Helper()
	injected := proxy.Injected()
	t.Logf("%d faults injected: %v", len(injected), injected)
	for _, k := range kinds {
		if !slices.ContainsFunc(injected, func(s string) bool { return strings.Contains(s, k) }) {
			t.Errorf("no %q fault was injected: the case no longer exercises it", k)
		}
	}
	proxy.Clear()
}
