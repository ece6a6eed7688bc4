package drill

import (
	"context"
	"errors"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// The definitions a scorecard gives its figures (format.ScorecardFigures),
// the same as the drill's --help and docs/OPERATIONS.md.
const (
	DefinitionRTO             = "from the start of the drill to the restored records verified on the target (the end of verify-cluster)"
	DefinitionRTODataRestored = "from the loss of the source (lost_at) to the restored records verified on the target (the end of verify-cluster)"
	DefinitionRTOAppRunning   = "from the loss of the source (lost_at) to the application running on the target: its group Stable with every input partition (classic group) or active task (streams group) assigned"
	DefinitionRTOAppCaughtUp  = "from the loss of the source (lost_at) to the application caught up: running, and every committed offset of its group at its partition's last stable offset (lag zero)"
	DefinitionRPO             = "the age of the backup's cut when the source was lost: lost_at - cut_at; records written to the source after the cut are not in the backup"
)

// NewScorecard builds the scorecard of the drill rep (format.Scorecard):
// its figures, volume, state checks and phases, bound to the restore
// report restores/<restore-id>/report.json and the backup's manifest by
// the SHA-256 of their bytes as stored in store (read back now; a restore
// that failed before its end left no report to bind, and a drill that did
// not read its manifest binds none). toolVersion is the binary's
// version. A storage error reading either object is returned, naming it.
func NewScorecard(ctx context.Context, store storage.Backend, rep *Report, toolVersion string) (*format.Scorecard, error) {
	seconds := func(reached bool, d Duration) *float64 {
		if !reached {
			return nil
		}
		s := recordedSeconds(d)
		return &s
	}
	sc := &format.Scorecard{
		ScorecardVersion: format.ScorecardVersion, Tool: "kafkastreams-dr", ToolVersion: toolVersion,
		DrillID: rep.DrillID, ApplicationID: rep.ApplicationID, BackupID: rep.BackupID, RestoreID: rep.RestoreID,
		Strategy: rep.Strategy, StartedAt: rep.StartedAt.UTC(), LostAt: rep.LostAt.UTC(), CutAt: rep.CutAt.UTC(), FinishedAt: rep.FinishedAt.UTC(), OK: rep.OK,
		Figures: format.ScorecardFigures{
			RTO:             format.ScorecardFigure{Name: "rto", Seconds: seconds(rep.RTOReached(), rep.RTO), Definition: DefinitionRTO},
			RTODataRestored: format.ScorecardFigure{Name: "rto_data_restored", Seconds: seconds(rep.RTODataRestoredReached(), rep.RTODataRestored), Definition: DefinitionRTODataRestored},
			RTOAppRunning:   format.ScorecardFigure{Name: "rto_app_running", Seconds: seconds(rep.RTOAppRunningReached(), rep.RTOAppRunning), Definition: DefinitionRTOAppRunning},
			RTOAppCaughtUp:  format.ScorecardFigure{Name: "rto_app_caught_up", Seconds: seconds(rep.RTOAppCaughtUpReached(), rep.RTOAppCaughtUp), Definition: DefinitionRTOAppCaughtUp},
			RPO:             format.ScorecardFigure{Name: "rpo", Seconds: seconds(rep.RPOKnown(), rep.RPO), Definition: DefinitionRPO},
		},
		Volume: format.ScorecardVolume{
			Topics: rep.Volume.Topics, Partitions: rep.Volume.Partitions, Records: rep.Volume.Records, Bytes: rep.Volume.Bytes,
			RecordsRestored: rep.Volume.RecordsRestored, RecordsVerified: rep.Volume.RecordsVerified,
		},
		Phases: []format.ScorecardPhase{},
	}
	if rep.RPOKnown() && rep.RPO == 0 {
		zero := 0.0 // a real RPO of 0: seconds() reads 0 as not reached
		sc.Figures.RPO.Seconds = &zero
	}
	for _, st := range rep.States {
		sc.States = append(sc.States, format.ScorecardState{Store: st.Store, Topic: st.Topic, Result: st.Result, Equal: st.Result == format.StateDigestEqual})
	}
	for _, p := range rep.Phases {
		sc.Phases = append(sc.Phases, format.ScorecardPhase{Name: p.Name, Status: string(p.Status), DurationSeconds: recordedSeconds(p.Duration)})
	}
	if rep.RestoreID != "" {
		key := format.RestoreReportKey(rep.RestoreID)
		sum, err := repository.ObjectSHA256(ctx, store, key)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			// A restore that failed before its end writes no report:
			// nothing to bind, and restore_report_sha256 says so.
		case err != nil:
			return nil, fmt.Errorf("scorecard: bind it to the restore: %w", err)
		default:
			sc.Binding.RestoreReportKey, sc.Binding.RestoreReportSHA256 = key, sum
		}
	}
	if rep.BackupID != "" && rep.RPOKnown() {
		key := format.ManifestKey(rep.BackupID)
		sum, err := repository.ObjectSHA256(ctx, store, key)
		if err != nil {
			return nil, fmt.Errorf("scorecard: bind it to the backup: %w", err)
		}
		sc.Binding.ManifestKey, sc.Binding.ManifestSHA256 = key, sum
	}
	return sc, nil
}
