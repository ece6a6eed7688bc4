package drill

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// The names of the RTO figures a history compares (HistoryRow.RTOName),
// as in the drill report's JSON without "_seconds".
const (
	FigureRTODataRestored = "rto_data_restored"
	FigureRTOAppRunning   = "rto_app_running"
	FigureRTOAppCaughtUp  = "rto_app_caught_up"
)

// DefaultRTOGrowthThreshold is the growth of the latest RTO over the
// median of the earlier drills' beyond which a history flags it: 0.2
// (20%).
const DefaultRTOGrowthThreshold = 0.2

// HistoryRow is one drill recorded in the repository
// (drills/<drill-id>/report.json), with its change against the drill
// before it. Seconds are null when the drill did not measure the figure
// (or, for RPO, Bytes, Topics and Partitions, when its report was written
// before they were recorded: 0 for the counts).
type HistoryRow struct {
	DrillID         string          `json:"drill_id"`
	StartedAt       time.Time       `json:"started_at"`
	BackupID        string          `json:"backup_id"`
	RestoreID       string          `json:"restore_id,omitempty"`
	Strategy        format.Strategy `json:"strategy"`
	OK              bool            `json:"ok"`
	RTODataRestored *float64        `json:"rto_data_restored_seconds"`
	RTOAppRunning   *float64        `json:"rto_app_running_seconds"`
	RTOAppCaughtUp  *float64        `json:"rto_app_caught_up_seconds"`
	// RTOName is the furthest RTO figure the drill measured
	// (FigureRTOAppCaughtUp, else FigureRTOAppRunning, else
	// FigureRTODataRestored; "" for none), and RTO its seconds: the
	// figure a history compares.
	RTOName         string   `json:"rto_name,omitempty"`
	RTO             *float64 `json:"rto_seconds"`
	RPO             *float64 `json:"rpo_seconds"`
	RecordsRestored int64    `json:"records_restored"`
	Bytes           int64    `json:"bytes"`
	Topics          int      `json:"topics"`
	Partitions      int      `json:"partitions"`
	// RTOChange is RTO minus the previous drill's figure of the same name
	// (null when either has none), RPOChange and RecordsChange the same
	// for RPO and RecordsRestored; all null on the first row.
	RTOChange     *float64 `json:"rto_change_seconds"`
	RPOChange     *float64 `json:"rpo_change_seconds"`
	RecordsChange *int64   `json:"records_change"`
}

// Figure returns the row's seconds of the RTO figure name (one of the
// Figure* names), nil when it has none.
func (r *HistoryRow) Figure(name string) *float64 {
	switch name {
	case FigureRTODataRestored:
		return r.RTODataRestored
	case FigureRTOAppRunning:
		return r.RTOAppRunning
	case FigureRTOAppCaughtUp:
		return r.RTOAppCaughtUp
	}
	return nil
}

// History returns the drills of applicationID ("" for every application)
// recorded in store, oldest to newest, each with its change against the
// one before (HistoryRow). It lists drills/ and reads every report; a
// report that does not decode (repository.ErrUnreadableDrillReport) is
// left out and named in the warnings. A listing or storage error is
// returned as it is. No drill recorded: no rows, no error.
func History(ctx context.Context, store storage.Backend, applicationID string) ([]HistoryRow, []string, error) {
	ids, err := repository.DrillReportIDs(ctx, store)
	if err != nil {
		return nil, nil, err
	}
	slices.Reverse(ids) // oldest first
	var rows []HistoryRow
	var warnings []string
	for _, id := range ids {
		rep, err := repository.LoadDrillReport(ctx, store, id)
		if errors.Is(err, repository.ErrUnreadableDrillReport) {
			warnings = append(warnings, err.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if applicationID != "" && rep.ApplicationID != applicationID {
			continue
		}
		r := HistoryRow{
			DrillID: rep.DrillID, StartedAt: rep.StartedAt, BackupID: rep.BackupID, RestoreID: rep.RestoreID,
			Strategy: rep.Strategy, OK: rep.OK,
			RTODataRestored: rep.RTODataRestored, RTOAppRunning: rep.RTOAppRunning, RTOAppCaughtUp: rep.RTOAppCaughtUp,
			RPO: rep.RPO, RecordsRestored: rep.RecordsRestored, Bytes: rep.Bytes, Topics: rep.Topics, Partitions: rep.Partitions,
		}
		for _, name := range []string{FigureRTOAppCaughtUp, FigureRTOAppRunning, FigureRTODataRestored} {
			if v := r.Figure(name); v != nil {
				r.RTOName, r.RTO = name, v
				break
			}
		}
		if n := len(rows); n > 0 {
			prev := &rows[n-1]
			r.RTOChange = diff(r.RTO, prev.Figure(r.RTOName))
			r.RPOChange = diff(r.RPO, prev.RPO)
			d := r.RecordsRestored - prev.RecordsRestored
			r.RecordsChange = &d
		}
		rows = append(rows, r)
	}
	return rows, warnings, nil
}

// diff is a - b, nil when either is nil.
func diff(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	d := *a - *b
	return &d
}

// RTOTrend is how the latest drill's RTO compares with the drills before
// it (Trend).
type RTOTrend struct {
	// Figure is the latest drill's RTOName and Latest its seconds; "" and
	// null when the latest drill measured no RTO (or there is no drill).
	Figure string   `json:"figure,omitempty"`
	Latest *float64 `json:"latest_seconds"`
	// Median is the median of that figure over the earlier drills that
	// passed and measured it, and Baseline how many they are; null and 0
	// when there is none.
	Median   *float64 `json:"median_seconds"`
	Baseline int      `json:"baseline_drills"`
	// Growth is Latest / Median - 1 (0.25: 25% longer), null without a
	// median; Threshold the growth beyond which Grew is set.
	Growth    *float64 `json:"growth"`
	Threshold float64  `json:"threshold"`
	Grew      bool     `json:"grew"`
}

// Trend compares the RTO of the last of rows (History's order) with the
// median of the same figure over the earlier rows that passed with the
// same strategy, and sets Grew when it is more than threshold (a
// fraction: 0.2 is 20%) above it. A rebuild-from-input drill after
// changelog drills (or the reverse) is a change of method, not of the
// recovery time: it is compared with drills of its own strategy only.
func Trend(rows []HistoryRow, threshold float64) RTOTrend {
	t := RTOTrend{Threshold: threshold}
	if len(rows) == 0 || rows[len(rows)-1].RTO == nil {
		return t
	}
	last := rows[len(rows)-1]
	t.Figure, t.Latest = last.RTOName, last.RTO
	var earlier []float64
	for _, r := range rows[:len(rows)-1] {
		if v := r.Figure(last.RTOName); r.OK && v != nil && r.Strategy == last.Strategy {
			earlier = append(earlier, *v)
		}
	}
	if len(earlier) == 0 {
		return t
	}
	slices.Sort(earlier)
	m := earlier[len(earlier)/2]
	if len(earlier)%2 == 0 {
		m = (earlier[len(earlier)/2-1] + m) / 2
	}
	t.Median, t.Baseline = &m, len(earlier)
	if m > 0 {
		g := *t.Latest/m - 1
		t.Growth = &g
		t.Grew = g > threshold
	}
	return t
}
