package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

func TestEstimateCommand(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)

	code, stdout, stderr := runCLI(t, "estimate", "-c", cfg, "--no-cluster")
	if code != exitOK || !strings.Contains(stdout, "a default (no restore or drill") || !strings.Contains(stdout, "changelog") || !strings.Contains(stdout, "standby") {
		t.Fatalf("estimate before any restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The source cluster (lost-kafka:9092) does not answer: a warning, not an error.
	code, stdout, stderr = runCLI(t, "--log-level", "warn", "estimate", "-c", cfg, "--json")
	var e estimate.Estimate
	if err := json.Unmarshal([]byte(stdout), &e); code != exitOK || err != nil {
		t.Fatalf("estimate --json: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if e.Throughput.Source != "measured" || len(e.Strategies) != 3 || e.Strategies[0].Records == 0 || e.Strategies[0].RestoreSeconds <= 0 {
		t.Fatalf("estimate after a restore: %+v", e)
	}
}
