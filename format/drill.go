package format

import "time"

// DrillReport is what a drill measured, stored as
// drills/<drill-id>/report.json (DrillReportKey) when the drill has read
// its backup's manifest, passed or failed, so that estimate can project a
// recovery from the drills of the application (docs/FORMAT.md, "Drill
// reports"). The drill id is a backup-id-shaped id (NewBackupID) made when
// the drill starts; ids sort by start time.
//
// Every RTO is counted from LostAt, the moment the drill takes the source
// as lost (the end of its backup phase, or its start when it drilled an
// existing backup). A figure the drill did not reach is null, never 0
// (docs/DESIGN.md invariant 35).
type DrillReport struct {
	DrillID       string    `json:"drill_id"`
	ApplicationID string    `json:"application_id"`
	BackupID      string    `json:"backup_id"`
	RestoreID     string    `json:"restore_id,omitempty"`
	Strategy      Strategy  `json:"strategy"`
	StartedAt     time.Time `json:"started_at"`
	LostAt        time.Time `json:"lost_at"`
	FinishedAt    time.Time `json:"finished_at"`
	OK            bool      `json:"ok"`
	// RTODataRestored is LostAt to the restored records verified on the
	// target (the end of the drill's verify-cluster phase), in seconds.
	RTODataRestored *float64 `json:"rto_data_restored_seconds"`
	// RTOAppRunning is LostAt to the application running on the target:
	// its group Stable with every partition (task) assigned; null when
	// the drill did not start the application or it never got there.
	RTOAppRunning *float64 `json:"rto_app_running_seconds"`
	// RTOAppCaughtUp is LostAt to the application caught up: running, and
	// its group's committed offsets at the partitions' ends (lag zero).
	RTOAppCaughtUp *float64 `json:"rto_app_caught_up_seconds"`
	// RecordsRestored are the records the restore produced, and
	// ChangelogRecords those of them in changelog topics (what Kafka
	// Streams restores its stores from after a changelog restore);
	// InputRecords = RecordsRestored - ChangelogRecords are those of the
	// other topics (inputs and outputs: what a rebuild restores and its
	// application reprocesses the inputs of).
	RecordsRestored  int64 `json:"records_restored"`
	ChangelogRecords int64 `json:"changelog_records"`
	InputRecords     int64 `json:"input_records"`
	// GroupType is the type of the application's group on the target as
	// ListGroups told it ("classic", "streams"); "" when the drill did not
	// start the application. A streams group (KIP-1071) was measured to
	// take seconds longer to its first stable assignment.
	GroupType string `json:"group_type,omitempty"`
	// RPO is LostAt - the backup's cut_at, in seconds (never below 0);
	// null in reports written before it was recorded.
	RPO *float64 `json:"rpo_seconds"`
	// Topics, Partitions and Bytes are the backup's topics, partitions
	// and stored segment bytes (the whole chain); 0 in reports written
	// before they were recorded.
	Topics     int   `json:"topics,omitempty"`
	Partitions int   `json:"partitions,omitempty"`
	Bytes      int64 `json:"bytes,omitempty"`
}
