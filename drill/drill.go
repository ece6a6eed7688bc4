// Package drill runs a disaster-recovery drill of one Kafka Streams
// application and reports how it went: it backs the application up (or
// takes an existing backup), checks the repository, restores the backup
// into a drill target cluster, compares the restored records with the
// backup and reads the group's committed offsets back from the target.
// Every phase is timed; the report states the recovery time (RTO), the age
// of the backup's cut when the source was lost (RPO), the data volume, the
// translated offsets and the warnings, as JSON or JUnit XML for CI.
//
// A drill never repairs anything: a failed phase stops it, and the phases
// after it are reported as skipped.
package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// Phase names, in the order a drill runs them.
const (
	PhaseBackup           = "backup"            // back up the source (absent when Options.BackupID is set)
	PhasePlan             = "restore-plan"      // the restore's preflight on the drill target (a dry run): refusals before any segment is read
	PhaseVerifyRepository = "verify-repository" // every segment of the backup: size, SHA-256 and (deep) decoded contents
	PhaseRestore          = "restore"           // restore into the drill target, which must not hold the application yet
	PhaseVerifyCluster    = "verify-cluster"    // the target's records against the backup's, field for field
	PhaseVerifyOffsets    = "verify-offsets"    // the group's committed offsets on the target against the restore's plan
	PhaseAppRunning       = "app-running"       // start the application (Options.App) and wait for its group running on the target
	PhaseAppCaughtUp      = "app-caught-up"     // wait for the group's committed offsets at the partitions' ends (lag zero)
)

// Options configures one drill.
type Options struct {
	// Store is the backup repository. It replaces Backup.Store and
	// Restore.Store.
	Store storage.Backend
	// Backup configures the backup phase (Source, ApplicationID, topic
	// filters, ...). Unused when BackupID is set.
	Backup backup.Options
	// BackupID, when set, skips the backup phase and drills with that
	// backup: a backup id, or "latest" for the latest complete backup in
	// Store. Empty: the drill takes a new backup first.
	BackupID string
	// Restore configures the restore into the drill target: Target (the
	// franz-go options of the drill target cluster), Strategy, ToTime,
	// Topics, ReplicationFactor, ApplicationID, SourceChangelogTopics.
	// Store, BackupID and DryRun are set by the drill. The target must not
	// hold any of the topics to restore nor committed offsets of the
	// application's group: a drill proves a restore into a new cluster.
	Restore restorer.Options
	// Shallow checks the repository by size and SHA-256 only; by default
	// every segment is also decoded and its records, offsets and
	// timestamps compared with the manifest (verify --deep).
	Shallow bool
	// OnPhase, when set, is called after each phase ends (and for each
	// phase skipped after a failure), before the next one starts, from the
	// goroutine that called Run: to show progress, or to stop the source
	// cluster after the backup (the disaster).
	OnPhase func(Phase)
	// Logger gets the drill's progress; it is passed to the backup and the
	// restore when their own Logger is nil. nil: discard.
	Logger *slog.Logger
	// App, when set, is the application the drill starts on the drill
	// target once the restore is verified (phases app-running and
	// app-caught-up), and stops at the end of the drill, whatever the
	// outcome (SIGTERM, then SIGKILL after App.StopGrace).
	App *App
	// NoRecord leaves the drill's measurements out of the repository;
	// by default they are stored as drills/<drill-id>/report.json
	// (format.DrillReport) for estimate.
	NoRecord bool
}

// Status is the outcome of a phase.
type Status string

const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped" // an earlier phase failed
)

// Phase is one timed step of a drill.
type Phase struct {
	Name      string    `json:"name"`
	Status    Status    `json:"status"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Duration  Duration  `json:"duration_seconds"`
	// Detail summarises what the phase did ("24 segments, 145 records decoded").
	Detail string `json:"detail,omitempty"`
	// Error is why a failed phase could not finish (a cluster, storage or
	// refusal error); Problems are what it found wrong, one per line,
	// naming the object, topic, partition and offset.
	Error    string   `json:"error,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Refused is set when the restore was refused before writing anything
	// (its reasons are the Problems).
	Refused bool `json:"refused,omitempty"`
	// TargetNotNew is set with Refused when the refusal is that the drill
	// target is not new: it holds the application's topics, its group's
	// offsets, or an earlier restore of the backup. Other refusals
	// (KAFKA-20254, --to-time, a strategy) leave it false.
	TargetNotNew bool `json:"target_not_new,omitempty"`
	// RefusalHint is the command that does it safely, when the restore's
	// refusal names one (restorer.RefusedError.Hint).
	RefusalHint string `json:"refusal_hint,omitempty"`
	// Locked is set when the phase could not start its work because
	// another run holds the repository lock (backup) or the target
	// cluster's restore lock (restore): nothing was done, try again later.
	Locked bool `json:"locked,omitempty"`
	// Transient is set when Error is a storage failure that outlasted the
	// storage retries (storage.IsTransient): a re-run may pass.
	Transient bool `json:"transient,omitempty"`
	// Damaged is set when Error is a manifest that was read in full and
	// does not decode (repository.ErrDamaged).
	Damaged bool `json:"damaged,omitempty"`
	// OtherApplication is set when the repository's backups are of
	// another application.id than the drill's (repository.ErrOtherApplication):
	// nothing was written; one repository prefix holds one application.
	OtherApplication bool `json:"other_application,omitempty"`
	// NoBackup is set when the backup the drill was given (Options.BackupID)
	// does not exist or is not complete (repository.ErrNoBackup): nothing
	// was read or written.
	NoBackup bool `json:"no_backup,omitempty"`
}

// Reached reports whether the drill started the phase name (it passed or
// failed; not skipped, not left out).
func (r *Report) Reached(name string) bool {
	for _, p := range r.Phases {
		if p.Name == name {
			return p.Status != StatusSkipped
		}
	}
	return false
}

// OK reports whether the phase passed.
func (p *Phase) OK() bool { return p.Status == StatusPassed }

// Volume is how much data the drill moved.
type Volume struct {
	Topics     int   `json:"topics"`     // topics in the backup
	Partitions int   `json:"partitions"` // partitions in the backup
	Segments   int   `json:"segments"`   // segment objects the backup names
	Records    int64 `json:"records"`    // records the backup holds (the whole chain)
	Bytes      int64 `json:"bytes"`      // stored (compressed) segment bytes of the backup
	// InFlightTopics are the repartition topics whose in-flight tails the
	// backup holds: counted in Topics, Partitions and Records too.
	InFlightTopics int `json:"in_flight_topics,omitempty"`
	// BackupRecords and BackupBytes are what the drill's own backup run
	// copied (less than the whole chain for an incremental backup; 0
	// with Options.BackupID).
	BackupRecords int64 `json:"backup_records"`
	BackupBytes   int64 `json:"backup_bytes"`
	// RecordsRestored are the records the restored partitions hold (after
	// a --to-time cut, without skipped topics); RecordsVerified the
	// records compared with the backup on the target.
	RecordsRestored int64 `json:"records_restored"`
	RecordsVerified int64 `json:"records_verified"`
}

// Offset is one committed offset of the backup's group: as committed on
// the source, as the restore translated it, and as read back from the
// target.
type Offset struct {
	Topic      string              `json:"topic"`
	Partition  int32               `json:"partition"`
	Committed  int64               `json:"committed"`      // on the source cluster
	Translated int64               `json:"translated"`     // what the restore committed; -1 when dropped
	OnTarget   int64               `json:"on_target"`      // read back from the target; -1 when none
	Action     format.OffsetAction `json:"action"`         // format.OffsetCommit or OffsetDrop
	Note       string              `json:"note,omitempty"` // why dropped, or what the translation means
	// NeverCommitted is true for a restored in-flight partition the group
	// never committed on the source (format.OffsetPlan.NeverCommitted):
	// Committed is then the tail's start offset.
	NeverCommitted bool `json:"never_committed,omitempty"`
}

// RestoredPartition is what the restore wrote into one partition of the
// drill target: its records and bytes, and its offsets on the source (as
// the backup holds them) and on the target.
type RestoredPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Class is the topic's class in the backup (input, output,
	// changelog, repartition, ...; topicfilter's classes; a source-topic
	// changelog is "changelog").
	Class string `json:"class"`
	// Records are the records restored into the partition.
	Records int64 `json:"records"`
	// Bytes are their bytes as produced (keys, values, header keys and
	// values); StoredBytes the backup's segment bytes of the partition
	// (compressed, as stored).
	Bytes       int64 `json:"bytes"`
	StoredBytes int64 `json:"stored_bytes"`
	// OldStart and OldEnd are the offsets the backup covers on the
	// source, [OldStart, OldEnd) (the manifest's start_offset and
	// end_offset); NewStart and NewEnd the restored records' offsets on
	// the target, [NewStart, NewEnd) (NewStart is NewEnd when nothing was
	// restored). They differ where the source had holes (compaction,
	// transaction markers, aborted records, a --to-time cut).
	OldStart int64 `json:"old_start"`
	OldEnd   int64 `json:"old_end"`
	NewStart int64 `json:"new_start"`
	NewEnd   int64 `json:"new_end"`
	// State is the restore's state check of a changelog partition
	// (format.PartitionReport.StateDigestResult: equal, different, not
	// recorded, cut, loss accepted); "" for other partitions.
	State string `json:"state,omitempty"`
}

// Report is the outcome of a drill. It is JSON-serialisable; JUnit writes
// it as JUnit XML.
type Report struct {
	ApplicationID string            `json:"application_id,omitempty"`
	Repository    string            `json:"repository"`
	BackupID      string            `json:"backup_id,omitempty"`
	BackupTaken   bool              `json:"backup_taken"` // the drill took the backup (no Options.BackupID)
	RestoreID     string            `json:"restore_id,omitempty"`
	Strategy      restorer.Strategy `json:"strategy"`
	ToTime        *time.Time        `json:"to_time,omitempty"`

	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	OK         bool      `json:"ok"` // every phase passed
	// Interrupted is set when the drill's context was cancelled (SIGINT,
	// SIGTERM): the phase it was in failed with Error "interrupted" and
	// the phases after it are skipped; OK is false.
	Interrupted bool    `json:"interrupted,omitempty"`
	Phases      []Phase `json:"phases"`

	// RTO is the time from the start of the drill to restored and
	// verified (the end of the verify-cluster phase); 0 when the drill
	// did not get there (RTOReached), which the JSON report writes as
	// null and the JUnit report leaves out.
	RTO Duration `json:"rto_seconds"`
	// RPO is how old the backup's cut was when the source was lost:
	// LostAt - CutAt, never below 0. Records written to the source after
	// the cut are not in the backup. Unknown (RPOKnown false: null in JSON,
	// left out of JUnit) when the drill did not read the backup's manifest.
	RPO Duration `json:"rpo_seconds"`
	// CutAt is when the backup captured the end offsets (the manifest's
	// cut_at).
	CutAt time.Time `json:"cut_at,omitzero"`
	// LostAt is the moment the drill takes the source as lost: the end of
	// the backup phase when the drill took the backup, the start of the
	// drill when it used an existing one.
	LostAt time.Time `json:"lost_at,omitzero"`

	Volume Volume `json:"volume"`
	// GroupID and Offsets are the application.id group's committed offsets:
	// on the source, translated, and read back from the target.
	GroupID string   `json:"group_id,omitempty"`
	Offsets []Offset `json:"offsets,omitempty"`
	// WipeState is set after a changelog restore: every instance must
	// start with an empty state directory (restorer.WipeInstruction).
	WipeState bool `json:"wipe_state"`
	// Warnings of the backup and the restore, each prefixed with
	// "backup: " or "restore: ".
	Warnings []string `json:"warnings,omitempty"`

	// The recovery time to the application (issue 11). Each figure counts
	// from LostAt and is 0 when the drill did not get there, which the
	// JSON report writes as null and the JUnit report leaves out
	// (RTODataRestoredReached, RTOAppRunningReached,
	// RTOAppCaughtUpReached):
	//   - RTODataRestored: to the restored records verified on the target
	//     (the end of verify-cluster). RTO is the same moment counted from
	//     StartedAt: they differ by the backup phase when the drill took
	//     the backup.
	//   - RTOAppRunning: to the application running: its group Stable with
	//     every partition of its input (classic group) or every active task
	//     (streams group) assigned. The drill starts the application after
	//     verify-offsets.
	//   - RTOAppCaughtUp: to the application caught up: running, and every
	//     committed offset of its group at its partition's last stable
	//     offset (lag zero), and for a streams group every task offset the
	//     members report at its end offset.
	RTODataRestored Duration `json:"rto_data_restored_seconds"`
	RTOAppRunning   Duration `json:"rto_app_running_seconds"`
	RTOAppCaughtUp  Duration `json:"rto_app_caught_up_seconds"`
	// App is what the drill saw of the application it started (Options.App).
	App *AppReport `json:"app,omitempty"`
	// DrillID is the id of this drill; DrillReportKey is where its
	// measurements are stored in the repository, "" when they are not
	// (Options.NoRecord, the drill did not read its backup's manifest, or
	// the write failed: a warning says so).
	DrillID        string `json:"drill_id,omitempty"`
	DrillReportKey string `json:"drill_report_key,omitempty"`
	// States is the state check of each restored state store
	// (docs/FORMAT.md, "State digest"; verify.Stores): whether its
	// changelog on the target holds the state the backup recorded (equal,
	// different, or not recorded: a backup written before digests
	// existed). From the verify-cluster phase, or from the restore's
	// report when the restore itself found a state that differs. Empty when
	// no changelog was restored or the drill did not get that far.
	States []verify.StoreSummary `json:"states,omitempty"`
	// Partitions are the partitions the restore wrote, in the restore's
	// order (by topic, then partition). Empty when the restore did not
	// finish.
	Partitions []RestoredPartition `json:"partitions,omitempty"`
	// RestoreProgress samples the restore phase's progress over time
	// (Sample: at most every 10 ms and never more than 240 samples, the
	// interval doubling as needed; the first at 0 and the last at the end
	// of the restore, also when it failed): the throughput chart of the
	// HTML report. Empty when the drill did not get to the restore.
	RestoreProgress []Sample `json:"restore_progress,omitempty"`
	// SourceKafkaVersion and TargetKafkaVersion are the Kafka versions
	// of the source cluster (read after the drill's backup) and of the
	// drill target (read after the restore plan), as franz-go guesses
	// them from a broker's ApiVersions ("v4.4", "at least v4.4"); "" when
	// not read (a drill of an existing backup does not contact the
	// source) or the broker did not answer.
	SourceKafkaVersion string `json:"source_kafka_version,omitempty"`
	TargetKafkaVersion string `json:"target_kafka_version,omitempty"`
}

// RTODataRestoredReached, RTOAppRunningReached and RTOAppCaughtUpReached
// report whether the drill measured that figure.
func (r *Report) RTODataRestoredReached() bool { return r.RTODataRestored > 0 }
func (r *Report) RTOAppRunningReached() bool   { return r.RTOAppRunning > 0 }
func (r *Report) RTOAppCaughtUpReached() bool  { return r.RTOAppCaughtUp > 0 }

// RTOReached reports whether the drill got to restored and verified, so
// that RTO is measured (a passed verify-cluster phase takes time: RTO > 0).
func (r *Report) RTOReached() bool { return r.RTO > 0 }

// RPOKnown reports whether the drill read the backup's cut (CutAt), so that
// RPO is measured; 0 is then a real RPO.
func (r *Report) RPOKnown() bool { return !r.CutAt.IsZero() }

// MarshalJSON writes the report with rto_seconds and rpo_seconds null when
// the drill did not reach them (RTOReached, RPOKnown): a dashboard must not
// read a failed drill's RTO as 0 seconds. Reading null back gives 0.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report // without this method
	out := struct {
		plain
		RTO         *Duration `json:"rto_seconds"`
		RPO         *Duration `json:"rpo_seconds"`
		RTOData     *Duration `json:"rto_data_restored_seconds"`
		RTORunning  *Duration `json:"rto_app_running_seconds"`
		RTOCaughtUp *Duration `json:"rto_app_caught_up_seconds"`
	}{plain: plain(r)}
	if r.RTODataRestoredReached() {
		out.RTOData = &r.RTODataRestored
	}
	if r.RTOAppRunningReached() {
		out.RTORunning = &r.RTOAppRunning
	}
	if r.RTOAppCaughtUpReached() {
		out.RTOCaughtUp = &r.RTOAppCaughtUp
	}
	if r.RTOReached() {
		out.RTO = &r.RTO
	}
	if r.RPOKnown() {
		out.RPO = &r.RPO
	}
	return json.Marshal(out)
}

// Phase returns the report's phase named name, or nil.
func (r *Report) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// Failed returns the phase that failed, or nil when none did.
func (r *Report) Failed() *Phase {
	for i := range r.Phases {
		if r.Phases[i].Status == StatusFailed {
			return &r.Phases[i]
		}
	}
	return nil
}

// Duration is a time.Duration that JSON encodes as seconds, with
// millisecond precision.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// recordedSeconds is d in seconds exactly as Duration.MarshalJSON writes it
// (rounded to the millisecond): the number a reader of the JSON report
// parses, so the repository's drill report and the JSON report agree.
func recordedSeconds(d Duration) float64 {
	return float64(time.Duration(d).Round(time.Millisecond).Milliseconds()) / 1000 // the double nearest the 3-decimal number
}

func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(recordedSeconds(d), 'f', 3, 64)), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration in seconds: %w", err)
	}
	*d = Duration(time.Duration(s * float64(time.Second)).Round(time.Millisecond))
	return nil
}

// Run runs the drill. A failed phase is not an error: it is in the report
// (OK false), and the phases after it are skipped. The error is for
// options that cannot make a drill (no repository, no target) and for a
// cancelled ctx, which also returns the report so far.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Store == nil {
		return nil, errors.New("drill: no backup repository (Options.Store)")
	}
	if len(o.Restore.Target) == 0 {
		return nil, errors.New("drill: no target cluster (Options.Restore.Target)")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.App != nil {
		if o.App.Command == "" {
			return nil, errors.New("drill: an application without a command (Options.App.Command)")
		}
		a := *o.App
		if a.Timeout <= 0 {
			a.Timeout = DefaultAppTimeout
		}
		if a.StopGrace <= 0 {
			a.StopGrace = DefaultAppStopGrace
		}
		o.App = &a
	}
	return run(ctx, o)
}
