package restorer_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

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
