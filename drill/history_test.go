package drill_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func secs(f float64) *float64 { return &f }

// TestHistory: the drills of one application, oldest first, each with its
// change against the one before (the same figure only); another
// application's drills are left out, and a report that does not decode is
// a warning naming its key.
func TestHistory(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	id := func(i int) string { return format.NewBackupID(at.Add(time.Duration(i)*time.Hour), [4]byte{byte(i)}) }
	for i, r := range []format.DrillReport{
		{ApplicationID: "app", OK: true, RTODataRestored: secs(10), RecordsRestored: 100}, // recorded before rpo_seconds
		{ApplicationID: "other", OK: true, RTODataRestored: secs(99)},
		{ApplicationID: "app", OK: true, RTODataRestored: secs(12), RTOAppRunning: secs(20), RTOAppCaughtUp: secs(30), RPO: secs(2), RecordsRestored: 150, Bytes: 4096, Topics: 3, Partitions: 6},
		{ApplicationID: "app", OK: false, RTODataRestored: secs(11), RPO: secs(3), RecordsRestored: 150},
	} {
		r.DrillID, r.StartedAt = id(i), at.Add(time.Duration(i)*time.Hour)
		if err := repository.SaveDrillReport(ctx, store, &r); err != nil {
			t.Fatal(err)
		}
	}
	damaged := format.DrillReportKey(id(4))
	if err := store.Put(ctx, damaged, strings.NewReader("{"), 1); err != nil {
		t.Fatal(err)
	}

	rows, warnings, err := drill.History(ctx, store, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], damaged) {
		t.Errorf("warnings %q, want one naming %s", warnings, damaged)
	}
	if len(rows) != 3 || rows[0].DrillID != id(0) || rows[1].DrillID != id(2) || rows[2].DrillID != id(3) {
		t.Fatalf("rows %+v", rows)
	}
	r0, r1, r2 := rows[0], rows[1], rows[2]
	if r0.RTOName != drill.FigureRTODataRestored || *r0.RTO != 10 || r0.RPO != nil || r0.RTOChange != nil || r0.RecordsChange != nil {
		t.Errorf("first row %+v", r0)
	}
	// The second drill ran the application: its RTO is caught up, which
	// the first did not measure, so no change.
	if r1.RTOName != drill.FigureRTOAppCaughtUp || *r1.RTO != 30 || r1.RTOChange != nil || r1.RPOChange != nil || *r1.RecordsChange != 50 || r1.Bytes != 4096 {
		t.Errorf("second row %+v", r1)
	}
	if r2.RTOName != drill.FigureRTODataRestored || *r2.RTOChange != -1 || *r2.RPOChange != 1 || *r2.RecordsChange != 0 || r2.OK {
		t.Errorf("third row %+v", r2)
	}
	if all, _, _ := drill.History(ctx, store, ""); len(all) != 4 {
		t.Errorf("every application: %d rows, want 4", len(all))
	}
	if none, _, err := drill.History(ctx, store, "nobody"); len(none) != 0 || err != nil {
		t.Errorf("no drill: %+v, %v", none, err)
	}
}

// TestTrend: the latest RTO against the median of the same figure over
// the earlier drills that passed, flagged beyond the threshold.
func TestTrend(t *testing.T) {
	row := func(ok bool, rto float64) drill.HistoryRow {
		return drill.HistoryRow{OK: ok, RTOName: drill.FigureRTODataRestored, RTO: secs(rto), RTODataRestored: secs(rto)}
	}
	caughtUp := drill.HistoryRow{OK: true, RTOName: drill.FigureRTOAppCaughtUp, RTO: secs(50), RTODataRestored: secs(5), RTOAppCaughtUp: secs(50)}
	rebuild := func(r drill.HistoryRow) drill.HistoryRow { r.Strategy = format.StrategyRebuild; return r }
	for _, tc := range []struct {
		name     string
		rows     []drill.HistoryRow
		median   float64 // 0: none
		baseline int
		grew     bool
	}{
		{"no drill", nil, 0, 0, false},
		{"one drill", []drill.HistoryRow{row(true, 10)}, 0, 0, false},
		{"steady", []drill.HistoryRow{row(true, 10), row(true, 11), row(true, 9), row(true, 11.9)}, 10, 3, false},
		{"grew 21%", []drill.HistoryRow{row(true, 10), row(true, 10), row(true, 12.1)}, 10, 2, true},
		{"exactly 20% is not flagged", []drill.HistoryRow{row(true, 10), row(true, 12)}, 10, 1, false},
		{"even count: the mean of the middle two", []drill.HistoryRow{row(true, 10), row(true, 20), row(true, 30), row(true, 40), row(true, 31)}, 25, 4, true},
		{"failed drills are not the baseline", []drill.HistoryRow{row(false, 100), row(true, 10), row(true, 13)}, 10, 1, true},
		{"another figure is not the baseline", []drill.HistoryRow{row(true, 10), caughtUp}, 0, 0, false},
		{"a figure the earlier drill measured too", []drill.HistoryRow{caughtUp, row(true, 7)}, 5, 1, true},
		// A rebuild drill after changelog drills was flagged "RTO GREW":
		// a change of method (review of the day's change).
		{"another strategy is not the baseline", []drill.HistoryRow{row(true, 10), row(true, 10), rebuild(row(true, 40))}, 0, 0, false},
		{"the same strategy is", []drill.HistoryRow{rebuild(row(true, 30)), row(true, 10), rebuild(row(true, 40))}, 30, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := drill.Trend(tc.rows, 0.2)
			if tc.median == 0 && got.Median != nil || tc.median != 0 && (got.Median == nil || *got.Median != tc.median) ||
				got.Baseline != tc.baseline || got.Grew != tc.grew || got.Threshold != 0.2 {
				t.Errorf("Trend = %+v (median %v), want median %v of %d, grew %v", got, got.Median, tc.median, tc.baseline, tc.grew)
			}
		})
	}
}
