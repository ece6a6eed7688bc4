package repository

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestDrillReports: a saved drill report reads back equal (a figure not
// reached stays null), ids list newest first and only report keys count,
// a report that does not decode is ErrUnreadableDrillReport naming its
// key, a missing one is storage.ErrNotFound, and an id that is not of the
// form of a backup id is refused before any write.
func TestDrillReports(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	older, newer := format.NewBackupID(at, [4]byte{1}), format.NewBackupID(at.Add(time.Minute), [4]byte{2})
	data := 1.5
	want := &format.DrillReport{DrillID: older, ApplicationID: "app", BackupID: older, Strategy: format.StrategyChangelog,
		StartedAt: at, LostAt: at, FinishedAt: at.Add(time.Minute), OK: false, RTODataRestored: &data, RecordsRestored: 10, ChangelogRecords: 4, InputRecords: 6}
	if err := SaveDrillReport(ctx, store, want); err != nil {
		t.Fatal(err)
	}
	if err := SaveDrillReport(ctx, store, &format.DrillReport{DrillID: newer, ApplicationID: "app"}); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDrillReport(ctx, store, older)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadDrillReport = %+v, %v; want %+v", got, err, want)
	}
	putObject(t, store, "drills/not-an-id/report.json", "{}")
	putObject(t, store, "drills/"+newer+"/other.json", "{}")
	if ids, err := DrillReportIDs(ctx, store); err != nil || !reflect.DeepEqual(ids, []string{newer, older}) {
		t.Errorf("DrillReportIDs = %v, %v; want [%s %s]", ids, err, newer, older)
	}
	putObject(t, store, format.DrillReportKey(newer), `{"drill_id": 12`)
	if _, err := LoadDrillReport(ctx, store, newer); !errors.Is(err, ErrUnreadableDrillReport) || !strings.Contains(err.Error(), format.DrillReportKey(newer)) {
		t.Errorf("a truncated report: %v, want ErrUnreadableDrillReport naming its key", err)
	}
	// Third new-user pass: it says that the object is damaged, in our
	// words, and what still works, not "decode <key>: unexpected end of
	// JSON input" alone.
	if _, err := LoadDrillReport(ctx, store, newer); err == nil || !strings.Contains(err.Error(), "drill report "+format.DrillReportKey(newer)+" is damaged: it ends early") ||
		!strings.Contains(err.Error(), "estimate leaves it out") {
		t.Errorf("a truncated report: %v, want it called damaged, cut short, and what still works", err)
	}
	// Issue 15: valid JSON that is not a drill report was read as a
	// report of no application, and drill history dropped it silently.
	putObject(t, store, format.DrillReportKey(newer), `{"hello":"x"}`)
	if _, err := LoadDrillReport(ctx, store, newer); !errors.Is(err, ErrUnreadableDrillReport) ||
		!strings.Contains(err.Error(), "drill report "+format.DrillReportKey(newer)+" is damaged: it is not the report of drill "+newer+` (its drill_id is "")`) {
		t.Errorf("JSON that is not a drill report: %v, want ErrUnreadableDrillReport saying it is not the drill's report", err)
	}
	if _, err := LoadDrillReport(ctx, store, format.NewBackupID(at.Add(time.Hour), [4]byte{3})); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a missing report: %v, want storage.ErrNotFound", err)
	}
	if err := SaveDrillReport(ctx, store, &format.DrillReport{DrillID: "../x"}); err == nil {
		t.Error("a drill id that is not a backup id was written")
	}
}
