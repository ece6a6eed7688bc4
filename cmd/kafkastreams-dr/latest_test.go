package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// faultyRepo is an S3 repository of three backups, written directly to
// versitygw, and a config that reads it through a fault proxy with small
// storage budgets.
type faultyRepo struct {
	srv    testkit.S3Server
	proxy  *testkit.S3Proxy
	store  storage.Backend // direct, no faults
	ids    []string        // oldest first
	cfg    string
	target string // a kfake cluster to restore into
}

const faultyPrefix = "apps/order-processor"

func newFaultyRepo(t *testing.T) *faultyRepo {
	t.Helper()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: faultyPrefix,
		Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	yaml := fmt.Sprintf("storage:\n  backend: s3\n  bucket: %s\n  prefix: %s\n  region: %s\n  endpoint: %s\n  path_style: true\n  request_timeout: 500ms\n  retry_timeout: 1500ms\n",
		srv.Bucket, faultyPrefix, srv.Region, proxy.Endpoint)
	ids, cfg := threeBackups(t, store, yaml)
	return &faultyRepo{srv: srv, proxy: proxy, store: store, ids: ids, cfg: cfg, target: testkit.StartKfake(t, 1).Addrs()[0]}
}

// damage overwrites the stored object at key with its first half.
func (r *faultyRepo) damage(t *testing.T, key string) {
	t.Helper()
	rc, err := r.store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	_, err = r.srv.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(r.srv.Bucket),
		Key: aws.String(faultyPrefix + "/" + key), Body: bytes.NewReader(b[:len(b)/2])})
	if err != nil {
		t.Fatal(err)
	}
}

// runBounded runs the CLI and fails the test if it does not end within
// a minute (the budgets above are 1.5 s).
func runBounded(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, out, errOut := testStreams()
	err := run(ctx, args, s)
	if ctx.Err() != nil {
		t.Fatalf("%q hung for a minute\nstderr:\n%s", args, errOut.String())
	}
	return exitCode(ctx, err), out.String(), errOut.String()
}

// TestLatestIsTheNewestCompleteBackup is issue 9's first fault: restore
// and drill of "latest" restored an older backup, exit 0, after HTTP 500s
// on the newest manifest or with a truncated newest manifest. Now each
// reader of "latest" fails naming the newest manifest's key, with the fix
// for the kind of failure (re-run for a store that failed, exit 1;
// verify, an explicit older --backup-id or backup --full for damage, exit
// 2 as for damaged segments: it was exit 1, the re-run code), never reads
// the older backup in its place, and no hint sends the user back to the
// command that failed (verify told the user to run verify). list's
// "latest" is the same backup, named unreadable (it said "latest
// complete: <older id>").
func TestLatestIsTheNewestCompleteBackup(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	newest, older := r.ids[2], r.ids[1]
	key := format.ManifestKey(newest)
	commands := map[string][]string{
		"restore":  {"restore", "-c", r.cfg, "--dry-run", "--target-bootstrap-servers", r.target},
		"describe": {"describe", "-c", r.cfg},
		"verify":   {"verify", "-c", r.cfg},
		"drill":    {"drill", "-c", r.cfg, "--backup-id", "latest", "--target-bootstrap-servers", r.target},
	}
	faults := []struct {
		name   string
		fault  *testkit.Fault
		resume *testkit.Fault // for the resumed (Range) requests, when not fault
		damage bool
		want   []string // in stderr
	}{
		{"newest manifest answers 500", &testkit.Fault{Method: http.MethodGet, PathContains: key, Action: testkit.FaultStatus500}, nil, false,
			[]string{"InternalError", "storage.retry_timeout", "run the command again"}},
		// Every first download is cut short and every resume reset: a
		// truncation of every resume too would give half the bytes left
		// each time, and a manifest could still arrive whole within the
		// budget (the test was flaky).
		{"newest manifest download cut short", &testkit.Fault{Method: http.MethodGet, PathContains: key, Action: testkit.FaultTruncate},
			&testkit.Fault{Method: http.MethodGet, PathContains: key, Ranged: true, Action: testkit.FaultReset}, false,
			[]string{"the download failed after", "storage.retry_timeout", "run the command again"}},
		{"newest manifest download reset", &testkit.Fault{Method: http.MethodGet, PathContains: key, Action: testkit.FaultResetMidBody},
			&testkit.Fault{Method: http.MethodGet, PathContains: key, Ranged: true, Action: testkit.FaultReset}, false,
			[]string{"storage.retry_timeout", "run the command again"}},
		{"newest manifest truncated in storage", nil, nil, true,
			[]string{"verify", "--backup-id", "backup", "--full"}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			r.proxy.Clear()
			if f.fault != nil {
				r.proxy.Fault(*f.fault)
			}
			if f.resume != nil {
				r.proxy.Fault(*f.resume)
			}
			if f.damage {
				r.damage(t, key)
			}
			for name, args := range commands {
				code, stdout, stderr := runBounded(t, args...)
				t.Logf("%s: exit %d\n%s", name, code, stderr)
				want := exitError
				if f.damage {
					want = exitUsage
				}
				if code != want {
					t.Errorf("%s: exit %d, want %d\nstdout:\n%s", name, code, want, stdout)
				}
				if strings.Contains(stderr, "kafkastreams-dr "+name+" ") {
					t.Errorf("%s: the hint sends the user back to %s, the command that just failed", name, name)
				}
				if !strings.Contains(stderr, key) {
					t.Errorf("%s: stderr does not name %s", name, key)
				}
				for _, w := range f.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr does not say %q", name, w)
					}
				}
				if f.damage && name != "verify" && !strings.Contains(stderr, older) {
					t.Errorf("%s: stderr does not name the older backup %s to restore explicitly", name, older)
				}
				if strings.Contains(stderr, "check the drill target") {
					t.Errorf("%s: a repository failure is blamed on the drill target", name)
				}
				if f.fault != nil && strings.Contains(stderr, "damaged") {
					t.Errorf("%s: a storage failure is called damage", name)
				}
				if strings.Contains(strings.ReplaceAll(stdout, "--backup-id "+older, ""), older) {
					t.Errorf("%s: the output names the older backup %s: it was used in place of the latest\n%s", name, older, stdout)
				}
			}
			if f.fault != nil && len(r.proxy.Injected()) == 0 {
				t.Fatal("no fault injected: the test shows nothing")
			}
			if f.damage {
				code, stdout, stderr := runBounded(t, "list", "-c", r.cfg)
				t.Logf("list: exit %d\n%s\n%s", code, stdout, stderr)
				if code != exitUsage {
					t.Errorf("list: exit %d, want %d", code, exitUsage)
				}
				if strings.Contains(stdout, "latest complete: "+older) {
					t.Errorf("list: names %s the latest, but --backup-id latest means %s", older, newest)
				}
				if !strings.Contains(stdout, "latest: "+newest+" (unreadable") {
					t.Errorf("list: does not name %s the latest, unreadable", newest)
				}
			}
		})
	}

	// An older backup is used when it is asked for by id.
	r.proxy.Clear()
	code, stdout, stderr := runBounded(t, "describe", "-c", r.cfg, "--backup-id", older)
	if code != exitOK || !strings.Contains(stdout, older) {
		t.Errorf("describe --backup-id %s: exit %d\n%s\n%s", older, code, stdout, stderr)
	}
}

// TestBackupParentIsNotAnOlderBackupAfterAStorageFailure: the parent of a
// backup is the latest backup; when the store fails to deliver its
// manifest the backup fails (exit 1, naming the key, re-run) instead of
// starting its chain from an older backup. A damaged newest manifest is
// skipped with a warning, as before (TestDamagedManifestOrSegment...).
func TestBackupParentIsNotAnOlderBackupAfterAStorageFailure(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	key := format.ManifestKey(r.ids[2])
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: key, Ranged: true, Action: testkit.FaultResetMidBody})
	code, stdout, stderr := runBounded(t, "backup", "-c", r.cfg)
	t.Logf("exit %d\n%s", code, stderr)
	if code != exitError || !strings.Contains(stderr, key) || strings.Contains(stderr, "damaged") {
		t.Errorf("exit %d, want 1 naming %s and no damage\nstdout:\n%s", code, key, stdout)
	}
	if !strings.Contains(stderr, "run the command again") && !strings.Contains(stderr, "re-run") {
		t.Errorf("stderr does not say to run the backup again")
	}
	if len(r.proxy.Injected()) == 0 {
		t.Fatal("no fault injected: the test shows nothing")
	}
	ids, err := repositoryIDs(t, r.store)
	if err != nil || len(ids) != 3 {
		t.Errorf("the repository holds %d complete backups (%v), want the 3 it had", len(ids), err)
	}
}

func repositoryIDs(t *testing.T, store storage.Backend) ([]string, error) {
	t.Helper()
	var ids []string
	err := store.List(t.Context(), format.BackupsPrefix(), func(oi storage.ObjectInfo) error {
		if strings.HasSuffix(oi.Key, "/manifest.json") {
			ids = append(ids, oi.Key)
		}
		return nil
	})
	return ids, err
}

// TestStorageThatNeverAnswers is issue 9's "no hangs", the S3 half: an
// endpoint that accepts connections and never answers, and one that
// answers the bucket check but then never answers a read, make backup,
// list, restore and verify exit 1 within the (test-set) budget, naming the
// endpoint, with the re-run hint.
func TestStorageThatNeverAnswers(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	silent := "http://" + testkit.StartSilentListener(t)
	silentCfg := writeFile(t, "silent.yaml", strings.Replace(readFile(t, r.cfg), r.proxy.Endpoint, silent, 1))
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/" + faultyPrefix + "/", Ranged: true, Action: testkit.FaultHang})
	for _, tc := range []struct {
		name     string
		cfg      string
		endpoint string
	}{
		{"accepts and never answers", silentCfg, silent},
		{"answers the bucket check, then never answers", r.cfg, r.proxy.Endpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, args := range map[string][]string{
				"backup":  {"backup", "-c", tc.cfg},
				"list":    {"list", "-c", tc.cfg},
				"restore": {"restore", "-c", tc.cfg, "--yes", "--target-bootstrap-servers", r.target},
				"verify":  {"verify", "-c", tc.cfg},
			} {
				code, stdout, stderr := runBounded(t, args...)
				t.Logf("%s: exit %d\n%s", name, code, stderr)
				if code != exitError {
					t.Errorf("%s: exit %d, want 1\nstdout:\n%s", name, code, stdout)
				}
				if !strings.Contains(stderr, tc.endpoint) {
					t.Errorf("%s: stderr does not name the endpoint %s", name, tc.endpoint)
				}
				if !strings.Contains(stderr, "storage.retry_timeout") || !strings.Contains(stderr, "again") {
					t.Errorf("%s: stderr does not say which budget ran out and to run again", name)
				}
			}
		})
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestoreSurvivesCutDownloads is issue 9's "with 5% of downloads cut
// short 13 restore runs in a row failed": with the default budgets, 5% of
// the segment and manifest downloads cut short, reset or answered 500,
// restores into empty clusters succeed, and a second reader sees every
// record.
func TestRestoreSurvivesCutDownloads(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	cfg := writeFile(t, "default-budgets.yaml", strings.NewReplacer("  request_timeout: 500ms\n", "", "  retry_timeout: 1500ms\n", "").Replace(readFile(t, r.cfg)))
	for _, action := range []testkit.FaultAction{testkit.FaultTruncate, testkit.FaultResetMidBody, testkit.FaultStatus500} {
		r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/" + faultyPrefix + "/", Ranged: true, Action: action, Rate: 0.05})
	}
	m := backupcheck.Latest(t, r.store, r.ids[2])
	for run := range 3 {
		target := testkit.StartKfake(t, 3).Addrs()
		code, stdout, stderr := runBounded(t, "restore", "-c", cfg, "--yes", "--target-bootstrap-servers", strings.Join(target, ","))
		if code != exitOK {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, code, stdout, stderr)
		}
		sameRecords(t, r.store, m, target)
	}
	if len(r.proxy.Injected()) == 0 {
		t.Fatal("no fault injected: the test shows nothing")
	}
	t.Logf("%d faults injected: %q", len(r.proxy.Injected()), r.proxy.Injected())
}

// sameRecords asserts that each partition of the cluster at seeds holds
// the backup's records in order, compared by key, value, headers and
// timestamp (a restore assigns new offsets), read by an independent
// read_committed consumer.
func sameRecords(t *testing.T, store storage.Backend, m *format.Manifest, seeds []string) {
	t.Helper()
	adm := kadm.NewClient(testkit.Client(t, seeds))
	compared := 0
	for _, tp := range m.Topics {
		listed, err := adm.ListEndOffsets(t.Context(), tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		ends := map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		got, err := sample.ReadCommitted(t.Context(), seeds, tp.Name, ends)
		if err != nil {
			t.Fatal(err)
		}
		byPart := map[int32][]string{}
		for _, rec := range got {
			byPart[rec.Partition] = append(byPart[rec.Partition], recordText(rec))
		}
		for _, p := range tp.PartitionCuts {
			var want []string
			for _, rec := range backupcheck.Records(t, store, m, tp.Name, p.Partition) {
				want = append(want, recordText(rec))
			}
			compared += len(want)
			if !slices.Equal(byPart[p.Partition], want) {
				t.Errorf("topic %q partition %d: the target holds %d records, the backup %d, or they differ", tp.Name, p.Partition, len(byPart[p.Partition]), len(want))
			}
		}
	}
	if compared == 0 {
		t.Fatal("the backup holds no record: the comparison shows nothing")
	}
}

func recordText(r format.Record) string {
	return fmt.Sprintf("%q=%q %d %q", r.Key, r.Value, r.Timestamp, fmt.Sprint(r.Headers))
}

// TestSegmentStorageFailureIsNotCorruption is issue 9's "a reset segment
// download said corrupt segment": a segment download that keeps failing
// past the budget makes restore and verify exit 1 saying the storage
// failed and to run again, not that the segment is corrupt or damaged.
func TestSegmentStorageFailureIsNotCorruption(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	// Every first download is reset mid-body and every resume at once: a
	// reset of each resume after half the bytes left lets a small segment
	// arrive whole within the budget (the test was flaky).
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Action: testkit.FaultResetMidBody})
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Ranged: true, Action: testkit.FaultReset})
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	for name, args := range map[string][]string{
		"restore": {"restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target},
		"verify":  {"verify", "-c", r.cfg},
	} {
		code, stdout, stderr := runBounded(t, args...)
		t.Logf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		if code != exitError {
			t.Errorf("%s: exit %d, want 1", name, code)
		}
		for _, word := range []string{"corrupt", "damaged", "--full"} {
			if strings.Contains(stdout+stderr, word) {
				t.Errorf("%s: a storage failure is reported as damage (%q)", name, word)
			}
		}
		if !strings.Contains(stderr, "storage.retry_timeout") || !strings.Contains(stderr, "again") || !strings.Contains(stderr, "/segments/") {
			t.Errorf("%s: stderr does not name the segment, the budget, and say to run again", name)
		}
	}
	if len(r.proxy.Injected()) == 0 {
		t.Fatal("no fault injected: the test shows nothing")
	}
}
