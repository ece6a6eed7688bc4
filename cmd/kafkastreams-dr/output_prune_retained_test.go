package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
)

// TestPrintPruneRetained: a backup kept by its Object Lock retention shows
// "keep" with the reason naming the date, and unreferenced segments left
// under retention get their own line with the latest retain-until.
func TestPrintPruneRetained(t *testing.T) {
	until := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &catalog.PruneResult{
		Backups: []catalog.Decision{{
			Summary:     catalog.Summary{BackupID: "20261129T074512.345Z-9f3a01bc", State: "complete"},
			Keep:        true,
			RetainUntil: &until,
			Reason:      "under S3 Object Lock retention (COMPLIANCE) until 2027-01-02T03:04:05Z, not kept by the policy (keep-last 1)",
		}},
		KeptSegments: 20, KeptBytes: 2048, RetainedSegments: 1, RetainedUntil: &until,
	}
	var out bytes.Buffer
	printPrune(&out, "s3://b/app", r)
	for _, want := range []string{
		"keep    20261129T074512.345Z-9f3a01bc",
		"under S3 Object Lock retention (COMPLIANCE) until 2027-01-02T03:04:05Z",
		"1 segment no backup names stay under S3 Object Lock retention until 2027-01-02 03:04:05 at the latest; a prune after that deletes them",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prune output does not say %q:\n%s", want, out.String())
		}
	}
	r.RetainedSegments, r.RetainedUntil = 0, nil
	out.Reset()
	printPrune(&out, "s3://b/app", r)
	if strings.Contains(out.String(), "no backup names stay") {
		t.Errorf("prune output without retained segments speaks of them:\n%s", out.String())
	}
}
