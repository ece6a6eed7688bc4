package restorer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// failingReport fails the first Put of a restore report, as a run killed
// just before it would have written it.
type failingReport struct {
	storage.Backend
	failed atomic.Bool
}

func (f *failingReport) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasSuffix(key, "/report.json") && !strings.HasPrefix(key, "drills/") && f.failed.CompareAndSwap(false, true) {
		return errors.New("injected: the run ends here")
	}
	return f.Backend.Put(ctx, key, r, size)
}

func (f *failingReport) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasSuffix(key, "/report.json") && !strings.HasPrefix(key, "drills/") && f.failed.CompareAndSwap(false, true) {
		return errors.New("injected: the run ends here")
	}
	return f.Backend.PutIfAbsent(ctx, key, data)
}

// TestRestoreEndedBeforeItsReportWritesItOnTheRerun is a regression test
// found by the crash loop on S3 (TestCrashLoopS3RestoreAndPrune): a
// restore killed after its journal said complete and before its report
// was saved left a restore that every re-run found complete ("already
// restored") and that had no report, for good. The report is now written
// before the journal says complete, under the restore id the journal
// keeps: the re-run completes the restore and writes the one report.
func TestRestoreEndedBeforeItsReportWritesItOnTheRerun(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	fs := &failingReport{Backend: store}
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: fs}
	if _, err := restorer.Run(ctx, o); err == nil || !fs.failed.Load() {
		t.Fatalf("the injected failure of the report's write did not end the run: %v", err)
	}
	rep, err := restorer.Run(ctx, o)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	ids, err := repository.ReportIDs(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || rep.RestoreID != ids[0] {
		t.Fatalf("restore reports %v after the re-run (it returned restore id %q), want the one report of the restore", ids, rep.RestoreID)
	}
	saved, err := repository.LoadReport(ctx, store, ids[0])
	if err != nil || !saved.Committed || len(saved.Partitions) == 0 {
		t.Fatalf("the report %+v (%v): want the completed restore's", saved, err)
	}
	j, err := repository.LoadJournal(ctx, store, m.BackupID, rep.TargetClusterID)
	if err != nil || j == nil || !j.Complete || j.RestoreID != ids[0] {
		t.Fatalf("journal %+v (%v): want complete, with restore id %s", j, err, ids[0])
	}
	restoredOnce(t, store, m, dst.Addrs())
}

// TestRestoreIntoAFreshClusterWithTheSameIDGetsItsOwnReport is a
// regression test (issue 15): a second restore of one backup into a
// fresh cluster whose cluster id equals the first target's (Docker's
// apache/kafka image keeps one default CLUSTER_ID) adopted the restore id
// the first restore's journal keeps and overwrote its report, so the
// first drill's scorecard, bound to that report's SHA-256, then failed
// verify-report as tampered. The journal's restore id is kept only by a
// run that resumes that restore.
func TestRestoreIntoAFreshClusterWithTheSameIDGetsItsOwnReport(t *testing.T) {
	_, store, _ := backedUpSample(t)
	ctx := context.Background()
	var ids []string
	var firstBytes []byte
	for i := range 2 {
		dst := testkit.StartKfake(t, 3, kfake.ClusterID("docker-default-cluster-id"))
		rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
		if err != nil {
			t.Fatalf("restore %d: %v", i+1, err)
		}
		if rep.Records == 0 || rep.Plan.Complete {
			t.Fatalf("restore %d restored %d records (plan complete %v): want the whole backup into the fresh cluster", i+1, rep.Records, rep.Plan.Complete)
		}
		ids = append(ids, rep.RestoreID)
		if i == 0 {
			firstBytes = readObject(t, store, "restores/"+rep.RestoreID+"/report.json")
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("both restores have restore id %s: the second is a new restore and needs its own", ids[0])
	}
	listed, err := repository.ReportIDs(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Fatalf("restore reports %v, want one for each restore (%v)", listed, ids)
	}
	if got := readObject(t, store, "restores/"+ids[0]+"/report.json"); !bytes.Equal(got, firstBytes) {
		t.Fatalf("the first restore's report changed after the second restore:\n%s\nwas\n%s", got, firstBytes)
	}
}

// readObject is the stored bytes of key.
func readObject(t *testing.T, store storage.Backend, key string) []byte {
	t.Helper()
	rc, err := store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
