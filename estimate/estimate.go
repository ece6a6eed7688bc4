// Package estimate answers the operator's question before an incident
// (docs/DOMAIN.md#rto): what recovery time does each strategy give us? For
// each strategy of docs/DOMAIN.md#strategies it sums the data a restore
// must move, from the latest backup's manifest (and, when the source
// cluster is reachable, the current log sizes of the input topics a rebuild
// must reprocess), and projects the restore time from the throughput this
// repository's own past restores measured (their reports), or a stated
// default. The restore is a small part of a recovery: the full recovery,
// to the application caught up, is projected from the drills of the
// application that started it (drill --app-command; their reports in
// drills/), scaled to the backup; without such a drill it is uncalibrated.
package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// DefaultRecordsPerSecond is the restore throughput assumed when the
// repository holds no restore report to measure it from. It is this
// project's own figure for a restore into a small cluster; a restore or
// drill into the real target replaces it with a measured one.
const DefaultRecordsPerSecond = 20000

// Throughput is the restore throughput used for the projections.
type Throughput struct {
	RecordsPerSecond float64  `json:"records_per_second"`
	Source           string   `json:"source"`            // "measured" or "default"
	Reports          []string `json:"reports,omitempty"` // restore ids it was measured from
	Records          int64    `json:"records,omitempty"` // records those restores produced
	Seconds          float64  `json:"seconds,omitempty"` // time they took
	// Unreadable names the reports that were skipped because they do not
	// decode (truncated, overwritten), each as "<key>: <error>", newest
	// first. They are not counted in Reports or in MaxReports.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Strategy is one strategy's estimate.
type Strategy struct {
	Name     string   `json:"name"` // changelog, rebuild, standby
	Topics   []string `json:"topics"`
	Records  int64    `json:"records"`   // records the restore produces
	RawBytes int64    `json:"raw_bytes"` // their keys, values and headers
	// RestoreSeconds is the projected time of the restore itself (the
	// tool writing the records), from the throughput.
	RestoreSeconds float64 `json:"restore_seconds"`
	// Reprocess is what the application must do after the restore before
	// it has caught up, which the tool cannot time.
	Reprocess string `json:"reprocess"`
	Note      string `json:"note,omitempty"`
	// Recovery is the projected time from the loss of the source to the
	// application caught up, calibrated by drills; nil for standby.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Recovery is the projection of one strategy's full recovery from the
// drills that measured it (format.DrillReport): the drill's restore rate,
// the application's start, and the application's own work (state
// rehydration from the changelogs, or reprocessing of the input), each
// scaled to this backup:
//
//	seconds = RestoreFixedSeconds + Records / RestoreRecordsPerSecond + AppStartSeconds
//	        + AppWorkFixedSeconds + AppRecords / AppRecordsPerSecond
//
// Each rate comes with a fixed time when the drills had backups of more
// than one size (a least-squares line; see fit). The restore part is what
// the drill did before it started the application (its plan, verification of the backup, restore and
// verification of the target), measured from the loss to the data
// restored (rto_data_restored). Calibrated is false when no drill of this
// application with this strategy reached the application caught up:
// Seconds is then nil and only the tool's RestoreSeconds is known.
type Recovery struct {
	Calibrated bool `json:"calibrated"`
	// Seconds is the projected recovery time to the application caught
	// up; nil when not calibrated.
	Seconds *float64 `json:"seconds"`
	// Drills are the ids of the drills it is calibrated by, newest first.
	Drills []string `json:"drills,omitempty"`
	// RestoreFixedSeconds and RestoreRecordsPerSecond fit the drills'
	// rto_data_restored as a fixed time plus records restored at a rate
	// (one drill: all of it at a rate).
	RestoreFixedSeconds     float64 `json:"restore_fixed_seconds"`
	RestoreRecordsPerSecond float64 `json:"restore_records_per_second,omitempty"`
	// AppStartSeconds is the mean time from the data restored to the
	// application running (its start and the group's first assignment).
	AppStartSeconds float64 `json:"app_start_seconds,omitempty"`
	// AppRecords is what the application must work through in this
	// backup: the changelog records (changelog strategy: it restores its
	// stores from them) or the records restored (rebuild: it reprocesses
	// the input), and AppWorkFixedSeconds plus AppRecords at
	// AppRecordsPerSecond the time the drills measured from running to
	// caught up, fitted as for the restore.
	AppRecords          int64   `json:"app_records"`
	AppWorkFixedSeconds float64 `json:"app_work_fixed_seconds"`
	AppRecordsPerSecond float64 `json:"app_records_per_second,omitempty"`
	// GroupType is the group type of the drills used ("classic",
	// "streams"): those of the newest drill's.
	GroupType string `json:"group_type,omitempty"`
	// Note says how it was calibrated, or why not.
	Note string `json:"note"`
}

// Estimate is the answer for one backup.
type Estimate struct {
	BackupID   string     `json:"backup_id"`
	CutAt      time.Time  `json:"cut_at"`
	Throughput Throughput `json:"throughput"`
	Strategies []Strategy `json:"strategies"`
	// UnreadableDrills names the drill reports that were skipped because
	// they do not decode, each as "<key>: <error>", newest first.
	UnreadableDrills []string `json:"unreadable_drills,omitempty"`
}

// Options says what to estimate.
type Options struct {
	Store    storage.Backend
	BackupID string // "" or "latest"
	// InputLogRecords, when non-nil, gives the current number of offsets
	// (log end - log start) of an input topic on the source cluster: a
	// rebuild reprocesses those, which can exceed what the backup holds.
	InputLogRecords func(topic string) (int64, bool)
	// MaxReports bounds how many of the latest restore reports the
	// throughput is measured from, and how many of the latest drills of
	// each strategy a recovery is calibrated by; default 5.
	MaxReports int
}

// Run computes the estimate. A restore report that does not decode is
// skipped (Throughput.Unreadable names it); an error reading the manifest,
// listing the reports or reading one (the storage failed) is returned.
func Run(ctx context.Context, o Options) (*Estimate, error) {
	if o.MaxReports <= 0 {
		o.MaxReports = 5
	}
	m, err := repository.Manifest(ctx, o.Store, o.BackupID)
	if err != nil {
		return nil, err
	}
	tp, err := measure(ctx, o.Store, o.MaxReports)
	if err != nil {
		return nil, err
	}
	e := &Estimate{BackupID: m.BackupID, CutAt: m.CutAt, Throughput: tp}
	changelog := Strategy{Name: "changelog", Reprocess: "Kafka Streams restores every store from its restored changelog (about as many records as the changelogs hold), then processes the input after the committed offsets"}
	rebuild := Strategy{Name: "rebuild", Reprocess: "the application reprocesses every restored input record from the start to rebuild its state: this takes as long as processing that volume takes (not measured here)"}
	for _, t := range m.Topics {
		var recs, raw int64
		for _, p := range t.PartitionCuts {
			recs += p.Records
			for _, s := range p.Segments {
				raw += s.RawSize
			}
		}
		changelog.Topics = append(changelog.Topics, t.Name)
		changelog.Records += recs
		changelog.RawBytes += raw
		if t.Class != string(topicfilter.Changelog) || t.SourceChangelog {
			rebuild.Topics = append(rebuild.Topics, t.Name)
			rebuild.Records += recs
			rebuild.RawBytes += raw
		}
	}
	// A changelog restore also produces the in-flight tails (invariant 38);
	// a rebuild restores none.
	for _, t := range m.InFlight {
		for _, p := range t.PartitionCuts {
			changelog.Records += p.Records
			for _, s := range p.Segments {
				changelog.RawBytes += s.RawSize
			}
		}
		changelog.Topics = append(changelog.Topics, t.Name)
	}
	var changelogRecords int64
	for _, t := range m.Topics {
		if t.Class == string(topicfilter.Changelog) {
			for _, p := range t.PartitionCuts {
				changelogRecords += p.Records
			}
		}
	}
	var reprocess int64
	for _, name := range rebuild.Topics {
		if o.InputLogRecords != nil {
			if n, ok := o.InputLogRecords(name); ok {
				reprocess += n
			}
		}
	}
	if reprocess > 0 {
		rebuild.Note = fmt.Sprintf("the source cluster's logs of these topics hold %d offsets now", reprocess)
	}
	changelog.RestoreSeconds = float64(changelog.Records) / tp.RecordsPerSecond
	rebuild.RestoreSeconds = float64(rebuild.Records) / tp.RecordsPerSecond
	drills, unreadable, err := loadDrills(ctx, o.Store, m.ApplicationID)
	if err != nil {
		return nil, err
	}
	e.UnreadableDrills = unreadable
	changelog.Recovery = calibrate(drills, format.StrategyChangelog, changelog.Records, changelogRecords, o.MaxReports)
	rebuild.Recovery = calibrate(drills, format.StrategyRebuild, rebuild.Records, rebuild.Records, o.MaxReports)
	standby := Strategy{Name: "standby", Reprocess: "none", Note: "num.standby.replicas > 0 keeps a warm copy of each task on another instance: near-instant failover, but it does not survive the loss of the cluster or region (standbys read the same cluster)"}
	e.Strategies = []Strategy{changelog, rebuild, standby}
	return e, nil
}

// measure derives the throughput from the latest restore reports, newest
// first. A report that does not decode (repository.ErrUnreadableReport) is
// skipped and named in Unreadable, as state check skips it; any other error
// (the storage failed, the listing failed) is returned.
func measure(ctx context.Context, store storage.Backend, max int) (Throughput, error) {
	ids, err := repository.ReportIDs(ctx, store)
	if err != nil {
		return Throughput{}, err
	}
	tp := Throughput{Source: "measured"}
	var unreadable []string
	for _, id := range ids {
		if len(tp.Reports) == max {
			break
		}
		rep, err := repository.LoadReport(ctx, store, id)
		if errors.Is(err, repository.ErrUnreadableReport) && !storage.IsTransient(err) {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if err != nil {
			return Throughput{}, err
		}
		d := rep.FinishedAt.Sub(rep.StartedAt).Seconds()
		if rep.Records <= 0 || d <= 0 {
			continue // a resumed or complete run measures nothing
		}
		tp.Reports = append(tp.Reports, id)
		tp.Records += rep.Records
		tp.Seconds += d
	}
	if tp.Records == 0 {
		return Throughput{RecordsPerSecond: DefaultRecordsPerSecond, Source: "default", Unreadable: unreadable}, nil
	}
	tp.RecordsPerSecond = float64(tp.Records) / tp.Seconds
	tp.Unreadable = unreadable
	return tp, nil
}

// loadDrills reads the drill reports of application app, newest first. A
// report that does not decode is skipped and named in unreadable; any
// other error (the storage failed) is returned.
func loadDrills(ctx context.Context, store storage.Backend, app string) (drills []*format.DrillReport, unreadable []string, err error) {
	ids, err := repository.DrillReportIDs(ctx, store)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		d, err := repository.LoadDrillReport(ctx, store, id)
		if errors.Is(err, repository.ErrUnreadableDrillReport) && !storage.IsTransient(err) {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if d.ApplicationID == app {
			drills = append(drills, d)
		}
	}
	return drills, unreadable, nil
}

// calibrate projects the recovery of strategy for a backup whose restore
// moves records and whose application then works through appRecords, from
// the newest max drills of that strategy that reached the application
// caught up with the group type of the newest of them (format.DrillReport
// GroupType: a classic and a streams group start differently, and the
// newest drill tells how the application runs now). The restore and the
// application's work are each a fixed time plus a time per record, fitted
// over the drills (fit); the application's start is their mean.
func calibrate(drills []*format.DrillReport, strategy format.Strategy, records, appRecords int64, max int) *Recovery {
	r := &Recovery{AppRecords: appRecords}
	var restore, work []point
	var startSec float64
	groupType := ""
	for _, d := range drills {
		if len(r.Drills) == max {
			break
		}
		if d.Strategy != strategy || d.RTODataRestored == nil || d.RTOAppRunning == nil || d.RTOAppCaughtUp == nil || *d.RTODataRestored <= 0 {
			continue
		}
		if len(r.Drills) == 0 {
			groupType = d.GroupType
		} else if d.GroupType != groupType {
			continue
		}
		r.Drills = append(r.Drills, d.DrillID)
		restore = append(restore, point{float64(d.RecordsRestored), *d.RTODataRestored})
		startSec += max0(*d.RTOAppRunning - *d.RTODataRestored)
		volume := d.RecordsRestored
		if strategy == format.StrategyChangelog {
			volume = d.ChangelogRecords
		}
		work = append(work, point{float64(volume), max0(*d.RTOAppCaughtUp - *d.RTOAppRunning)})
	}
	if len(r.Drills) == 0 {
		r.Note = fmt.Sprintf("uncalibrated: no drill of this application with the %s strategy reached the application caught up; the restore time is the tool's alone, which is only part of a recovery: run kafkastreams-dr drill --strategy %s --app-command COMMAND to measure it", strategy, strategy)
		return r
	}
	r.Calibrated = true
	r.GroupType = groupType
	var perRecord float64
	r.RestoreFixedSeconds, perRecord = fit(restore)
	if perRecord > 0 {
		r.RestoreRecordsPerSecond = 1 / perRecord
	}
	r.AppStartSeconds = startSec / float64(len(r.Drills))
	r.AppWorkFixedSeconds, perRecord = fit(work)
	if perRecord > 0 {
		r.AppRecordsPerSecond = 1 / perRecord
	}
	seconds := r.restoreSeconds(records) + r.AppStartSeconds + r.workSeconds(appRecords)
	r.Seconds = &seconds
	what := "state rehydration of the changelog records"
	if strategy == format.StrategyRebuild {
		what = "reprocessing of the restored records"
	}
	r.Note = fmt.Sprintf("calibrated by %d drill(s) of this application with the %s strategy (%s group): restore %.1fs + %.0f records/s, application start %.1fs, %s %.1fs + %.0f records/s",
		len(r.Drills), strategy, orUnknown(groupType), r.RestoreFixedSeconds, r.RestoreRecordsPerSecond, r.AppStartSeconds, what, r.AppWorkFixedSeconds, r.AppRecordsPerSecond)
	if len(r.Drills) == 1 {
		r.Note += "; one drill cannot tell a fixed time from a time per record, so all of it is taken as per record: drill backups of other sizes to separate them"
	}
	return r
}

// RestoreSeconds is the projected time from the loss of the source to
// the data restored and verified, for a restore of records.
func (r *Recovery) RestoreSeconds(records int64) float64 { return r.restoreSeconds(records) }

func (r *Recovery) restoreSeconds(records int64) float64 {
	s := r.RestoreFixedSeconds
	if r.RestoreRecordsPerSecond > 0 {
		s += float64(records) / r.RestoreRecordsPerSecond
	}
	return s
}

func (r *Recovery) workSeconds(records int64) float64 {
	s := r.AppWorkFixedSeconds
	if r.AppRecordsPerSecond > 0 {
		s += float64(records) / r.AppRecordsPerSecond
	}
	return s
}

// point is one drill's volume (records) and the seconds a part took.
type point struct{ x, y float64 }

// fit returns the fixed seconds a and the seconds per record b of
// y = a + b*x over points: a least-squares line when the points have at
// least two volumes, a >= 0 and b >= 0; with one volume (or a line that
// would go below 0) the time is taken as per record alone (a = 0,
// b = sum y / sum x), or as fixed when the volumes are 0.
func fit(points []point) (a, b float64) {
	var sx, sy float64
	for _, p := range points {
		sx += p.x
		sy += p.y
	}
	n := float64(len(points))
	proportional := func() (float64, float64) {
		if sx > 0 {
			return 0, sy / sx
		}
		return sy / n, 0
	}
	mx, my := sx/n, sy/n
	var cov, vx float64
	for _, p := range points {
		cov += (p.x - mx) * (p.y - my)
		vx += (p.x - mx) * (p.x - mx)
	}
	if vx == 0 {
		return proportional()
	}
	b = cov / vx
	a = my - b*mx
	switch {
	case b < 0:
		return my, 0 // more records did not take longer: a fixed time
	case a < 0:
		return proportional()
	}
	return a, b
}

func max0(f float64) float64 { return math.Max(0, f) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
