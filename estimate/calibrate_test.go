package estimate_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func secs(f float64) *float64 { return &f }

// TestEstimateCalibratedByDrills: without a drill that started the
// application each strategy's recovery is uncalibrated (seconds null);
// with drills of the application it is the drills' restore rate, start
// and rehydration (changelog) or reprocessing (rebuild) rate scaled to the
// backup; drills of another application, that did not reach caught up, or
// of the other strategy, and older drills of another group type than the
// newest's are not used; an unreadable drill report is skipped and named.
// calibrationStore is a repository holding one backup of application
// cal-app: 400 records of an input and 400 of a changelog.
func calibrationStore(t *testing.T) storage.Backend {
	t.Helper()
	src := testkit.StartKfake(t, 1)
	ctx := context.Background()
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"cal-input", "cal-app-store-changelog"} {
		if _, err := adm.CreateTopic(ctx, 2, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 400 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	if _, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: "cal-app", Include: []string{"cal-*"}}); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestEstimateCalibratedByDrills(t *testing.T) {
	ctx := context.Background()
	store := calibrationStore(t)
	recovery := func(t *testing.T) (changelog, rebuild *estimate.Recovery, e *estimate.Estimate) {
		t.Helper()
		e, err := estimate.Run(ctx, estimate.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range e.Strategies {
			switch s.Name {
			case "changelog":
				changelog = s.Recovery
			case "rebuild":
				rebuild = s.Recovery
			case "standby":
				if s.Recovery != nil {
					t.Errorf("standby has a recovery: %+v", s.Recovery)
				}
			}
		}
		return changelog, rebuild, e
	}

	c, r, _ := recovery(t)
	for _, rec := range []*estimate.Recovery{c, r} {
		if rec == nil || rec.Calibrated || rec.Seconds != nil || !strings.Contains(rec.Note, "uncalibrated") || !strings.Contains(rec.Note, "--app-command") {
			t.Fatalf("without drills: %+v, want uncalibrated, seconds null, saying how to calibrate", rec)
		}
	}

	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := func(n int) string { return format.NewBackupID(at.Add(time.Duration(n)*time.Minute), [4]byte{byte(n)}) }
	reports := []*format.DrillReport{
		// The drill the changelog projection uses: 800 records restored in
		// 2s (400/s), running 3s later, 400 changelog records rehydrated
		// in 4s (100/s).
		{DrillID: id(1), ApplicationID: "cal-app", Strategy: format.StrategyChangelog, RTODataRestored: secs(2), RTOAppRunning: secs(5), RTOAppCaughtUp: secs(9),
			RecordsRestored: 800, ChangelogRecords: 400, InputRecords: 400, GroupType: "streams"},
		// Not used: older, and of another group type than the newest.
		{DrillID: id(0), ApplicationID: "cal-app", Strategy: format.StrategyChangelog, RTODataRestored: secs(1), RTOAppRunning: secs(1.5), RTOAppCaughtUp: secs(2),
			RecordsRestored: 800, ChangelogRecords: 400, InputRecords: 400, GroupType: "classic"},
		// Not used: another application, a drill that did not get to
		// caught up.
		{DrillID: id(2), ApplicationID: "other-app", Strategy: format.StrategyChangelog, RTODataRestored: secs(1), RTOAppRunning: secs(1.5), RTOAppCaughtUp: secs(2), RecordsRestored: 800, ChangelogRecords: 400},
		{DrillID: id(3), ApplicationID: "cal-app", Strategy: format.StrategyChangelog, RTODataRestored: secs(1), RTOAppRunning: secs(60)},
		// The rebuild projection: 200 records in 1s, start 2s, 200 records
		// reprocessed in 10s (20/s).
		{DrillID: id(4), ApplicationID: "cal-app", Strategy: format.StrategyRebuild, RTODataRestored: secs(1), RTOAppRunning: secs(3), RTOAppCaughtUp: secs(13), RecordsRestored: 200, InputRecords: 200},
	}
	for _, d := range reports {
		if err := repository.SaveDrillReport(ctx, store, d); err != nil {
			t.Fatal(err)
		}
	}
	damaged := format.DrillReportKey(id(5))
	if err := store.Put(ctx, damaged, bytes.NewReader([]byte(`{"drill_id": `)), 13); err != nil {
		t.Fatal(err)
	}

	c, r, e := recovery(t)
	// changelog: 800 records at 400/s + 3s + 400 changelog records at 100/s.
	if c == nil || !c.Calibrated || c.Seconds == nil || math.Abs(*c.Seconds-9) > 1e-9 || len(c.Drills) != 1 || c.Drills[0] != id(1) || c.AppRecords != 400 || c.GroupType != "streams" {
		t.Errorf("changelog recovery %+v, want 9s calibrated by drill %s", c, id(1))
	}
	// rebuild: 400 records at 200/s + 2s + 400 records at 20/s.
	if r == nil || !r.Calibrated || r.Seconds == nil || math.Abs(*r.Seconds-(2+2+20)) > 1e-9 || len(r.Drills) != 1 || r.Drills[0] != id(4) {
		t.Errorf("rebuild recovery %+v, want 24s calibrated by drill %s", r, id(4))
	}
	if len(e.UnreadableDrills) != 1 || !strings.Contains(e.UnreadableDrills[0], damaged) {
		t.Errorf("unreadable drills %q, want %s named", e.UnreadableDrills, damaged)
	}
}

// TestEstimateFitsFixedAndPerRecordTime: with drills of two backup sizes
// the restore and the application's work are each a fixed time plus a
// time per record (a least-squares line), not all per record: measured,
// a drill's verification and the application's first poll and commit do
// not grow with the records, and a projection all per record put a
// backup 3 times larger at 1.7-1.9 times its measured recovery.
func TestEstimateFitsFixedAndPerRecordTime(t *testing.T) {
	ctx := context.Background()
	store := calibrationStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range []*format.DrillReport{
		// restore: 400 records in 1.5s, 1600 in 3s: 1s + 800 records/s;
		// work: 200 changelog records in 3s, 800 in 6s: 2s + 200 records/s;
		// start: 3s each.
		{RTODataRestored: secs(1.5), RTOAppRunning: secs(4.5), RTOAppCaughtUp: secs(7.5), RecordsRestored: 400, ChangelogRecords: 200},
		{RTODataRestored: secs(3), RTOAppRunning: secs(6), RTOAppCaughtUp: secs(12), RecordsRestored: 1600, ChangelogRecords: 800},
	} {
		d.DrillID, d.ApplicationID, d.Strategy, d.GroupType = format.NewBackupID(at.Add(time.Duration(i)*time.Minute), [4]byte{byte(i)}), "cal-app", format.StrategyChangelog, "classic"
		if err := repository.SaveDrillReport(ctx, store, d); err != nil {
			t.Fatal(err)
		}
	}
	e, err := estimate.Run(ctx, estimate.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	c := e.Strategies[0].Recovery
	// The backup: 800 records restored (1s + 1s), 400 changelog records
	// (2s + 2s), start 3s: 9s. All per record it would be 8.4s.
	if c == nil || c.Seconds == nil || math.Abs(*c.Seconds-9) > 1e-9 || math.Abs(c.RestoreFixedSeconds-1) > 1e-9 || math.Abs(c.RestoreRecordsPerSecond-800) > 1e-6 ||
		math.Abs(c.AppWorkFixedSeconds-2) > 1e-9 || math.Abs(c.AppRecordsPerSecond-200) > 1e-6 || len(c.Drills) != 2 {
		t.Errorf("changelog recovery %+v, want 9s: restore 1s + 800 records/s, start 3s, work 2s + 200 records/s", c)
	}
}
