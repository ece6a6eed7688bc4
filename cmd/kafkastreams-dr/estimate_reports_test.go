package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// saveTestReport stores a restore report of restore id that produced
// records in d.
func saveTestReport(t *testing.T, store storage.Backend, id string, records int64, d time.Duration) {
	t.Helper()
	start := time.Date(2026, 6, 16, 12, 0, 0, 0, time.UTC)
	rep := &format.RestoreReport{RestoreID: id, StartedAt: start, FinishedAt: start.Add(d), Records: records}
	if err := repository.SaveReport(t.Context(), store, rep); err != nil {
		t.Fatal(err)
	}
}

// TestEstimateSkipsAnUnreadableReport is a new user's fault: one truncated
// restores/<id>/report.json failed the whole estimate (exit 1, "decode
// restores/.../report.json: unexpected EOF", no hint) although other
// reports were readable; state check warns about the same file. The
// report is skipped with a warning naming it, and the throughput is
// measured from the readable ones only.
func TestEstimateSkipsAnUnreadableReport(t *testing.T) {
	store, storageYAML := catalogRepos[0].open(t)
	craftBackup(t, store, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), 1)
	good := format.NewBackupID(time.Date(2026, 6, 16, 12, 0, 0, 0, time.UTC), [4]byte{0, 0, 0, 1})
	saveTestReport(t, store, good, 1000, 2*time.Second)
	bad := format.NewBackupID(time.Date(2026, 6, 17, 12, 0, 0, 0, time.UTC), [4]byte{0, 0, 0, 2})
	broken := `{"restore_id":"` + bad + `","rec`
	if err := store.Put(t.Context(), format.RestoreReportKey(bad), strings.NewReader(broken), int64(len(broken))); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", "application_id: order-processor\nsource:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\n"+storageYAML)

	code, stdout, stderr := runCLI(t, "estimate", "-c", cfg, "--no-cluster", "--json")
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	if code != exitOK {
		t.Fatalf("exit %d, want 0: one unreadable report is skipped", code)
	}
	var e estimate.Estimate
	if err := json.Unmarshal([]byte(stdout), &e); err != nil {
		t.Fatal(err)
	}
	if e.Throughput.Source != "measured" || len(e.Throughput.Reports) != 1 || e.Throughput.Reports[0] != good || e.Throughput.RecordsPerSecond != 500 {
		t.Errorf("throughput %+v, want 500 records/s measured from %s alone", e.Throughput, good)
	}
	if len(e.Throughput.Unreadable) != 1 || !strings.Contains(e.Throughput.Unreadable[0], format.RestoreReportKey(bad)) {
		t.Errorf("unreadable reports %q, want %s", e.Throughput.Unreadable, format.RestoreReportKey(bad))
	}
	if !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, format.RestoreReportKey(bad)) {
		t.Errorf("stderr has no warning naming %s", format.RestoreReportKey(bad))
	}

	// The table says it too.
	code, stdout, stderr = runCLI(t, "estimate", "-c", cfg, "--no-cluster")
	if code != exitOK || !strings.Contains(stdout, "measured") || !strings.Contains(stderr, format.RestoreReportKey(bad)) {
		t.Errorf("estimate: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestEstimateReportsStorageFailure: when the storage fails while the
// reports are read (no answer), estimate fails: exit 1 with the re-run
// hint, never a skipped report.
func TestEstimateReportsStorageFailure(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	saveTestReport(t, r.store, format.NewBackupID(time.Date(2026, 6, 16, 12, 0, 0, 0, time.UTC), [4]byte{0, 0, 0, 1}), 1000, 2*time.Second)
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/report.json", Action: testkit.FaultHang, Ranged: true})
	code, stdout, stderr := runBounded(t, "estimate", "-c", r.cfg, "--no-cluster")
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	if len(r.proxy.Injected()) == 0 {
		t.Fatal("no fault injected: the test shows nothing")
	}
	if code != exitError || !strings.Contains(stderr, "run the command again") {
		t.Errorf("exit %d, want 1 with the re-run hint", code)
	}
	if strings.Contains(stderr, "warning: ") {
		t.Errorf("a storage failure is skipped with a warning")
	}
}
