package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestVerifyAgainstClusterNeedsTheRestoreReport is a regression test
// (issue 10, the discarded store.List error of cmd_verify.go): verify
// --against-cluster compares with the cut and offset maps of the latest
// restore of the backup into the target, read from its report; a report
// that could not be listed or read was ignored, and the comparison went on
// without them, exit 0 (or a wrong "target differs"). Now the command fails
// naming the report: exit 1, with the re-run hint for a storage failure.
func TestVerifyAgainstClusterNeedsTheRestoreReport(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	if code, stdout, stderr := runBounded(t, "restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ids, err := repository.ReportIDs(t.Context(), r.store)
	if err != nil || len(ids) != 1 {
		t.Fatalf("restore reports %v, %v", ids, err)
	}
	key := format.RestoreReportKey(ids[0])
	if code, stdout, stderr := runBounded(t, "verify", "-c", r.cfg, "--against-cluster", "--target-bootstrap-servers", target); code != exitOK ||
		!strings.Contains(stderr, "offset maps of restore "+ids[0]) {
		t.Fatalf("intact report: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Run("the report's storage fails", func(t *testing.T) {
		r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: key, Ranged: true, Action: testkit.FaultStatus500})
		defer r.proxy.Clear()
		code, stdout, stderr := runBounded(t, "verify", "-c", r.cfg, "--against-cluster", "--target-bootstrap-servers", target)
		if code != exitError || !strings.Contains(stderr, key) || !strings.Contains(stderr, storage.TransientHint(r.store.Location())) || strings.Contains(stdout, "OK") {
			t.Errorf("exit %d, want 1 naming %s with the re-run hint:\n%s\n%s", code, key, stdout, stderr)
		}
	})
	t.Run("the report does not decode", func(t *testing.T) {
		r.damage(t, key)
		code, stdout, stderr := runBounded(t, "verify", "-c", r.cfg, "--against-cluster", "--target-bootstrap-servers", target)
		if code != exitError || !strings.Contains(stderr, "restore report "+key+" is damaged") || strings.Contains(stdout, "OK") {
			t.Errorf("exit %d, want 1 naming %s:\n%s\n%s", code, key, stdout, stderr)
		}
	})
}
