package format

import (
	"fmt"
	"strings"
)

// This file spells every object key of the repository, relative to its
// prefix (docs/FORMAT.md, "Object layout"); no other package spells one.

// Object keys and prefixes, relative to the repository prefix.
const (
	LockKey              = "lock"
	backupsPrefix        = "backups/"
	segmentsPrefix       = "segments/"
	restoresPrefix       = "restores/"
	restoreJournalsDir   = restoresPrefix + "journals/"
	restoreLocksDir      = restoresPrefix + "locks/"
	restoreReportFile    = "report.json"
	drillsPrefix         = "drills/"
	drillReportFile      = "report.json"
	manifestFile         = "manifest.json"
	progressFile         = "progress.json"
	unknownTargetCluster = "unknown-cluster"
)

// ManifestKey is the key of a complete backup's manifest.
func ManifestKey(backupID string) string { return backupsPrefix + backupID + "/" + manifestFile }

// ProgressKey is the key of a running backup's progress manifest.
func ProgressKey(backupID string) string { return backupsPrefix + backupID + "/" + progressFile }

// ShardProgressKey is the key of shard's progress in a sharded backup
// (ShardRun): backups/<id>/shards/<shard>.json, a manifest in state
// running holding the cut and the segments that shard copied so far.
func ShardProgressKey(backupID string, shard int) string {
	return fmt.Sprintf("%s%s/shards/%d.json", backupsPrefix, backupID, shard)
}

// ParseManifestKey returns the backup id of a manifest's key, and whether
// the key is a running backup's progress manifest (ProgressKey) rather
// than a complete backup's (ManifestKey). ok is false for any other key,
// and for an id that does not have the form of a backup id.
func ParseManifestKey(key string) (backupID string, progress, ok bool) {
	rest, ok := strings.CutPrefix(key, backupsPrefix)
	if !ok {
		return "", false, false
	}
	id, file, _ := strings.Cut(rest, "/")
	if (file != manifestFile && file != progressFile) || !ValidBackupID(id) {
		return "", false, false
	}
	return id, file == progressFile, true
}

// BackupsPrefix is the prefix under which every backup's manifests live.
func BackupsPrefix() string { return backupsPrefix }

// SegmentsPrefix is the prefix under which every segment lives
// (SegmentKey).
func SegmentsPrefix() string { return segmentsPrefix }

// SegmentKey is the key of the segment of backupID, topic and partition whose
// first record has offset firstOffset (zero-padded to 20 digits so keys sort
// by offset).
func SegmentKey(backupID, topic string, partition int32, firstOffset int64) string {
	return fmt.Sprintf("segments/%s/%s/%d/%020d.kseg", backupID, topic, partition, firstOffset)
}

// RestoresPrefix is the prefix under which restores keep their reports,
// journals and locks.
func RestoresPrefix() string { return restoresPrefix }

// RestoreReportKey is the key of the report of the finished restore
// restoreID (a RestoreReport): restores/<restore-id>/report.json.
func RestoreReportKey(restoreID string) string {
	return restoresPrefix + restoreID + "/" + restoreReportFile
}

// ParseRestoreReportKey returns the restore id of a report key
// (RestoreReportKey) and true, or "" and false for any other key: a
// journal, a lock, a key whose id does not have the form of a backup id.
func ParseRestoreReportKey(key string) (restoreID string, ok bool) {
	rest, ok := strings.CutPrefix(key, restoresPrefix)
	if !ok {
		return "", false
	}
	id, file, _ := strings.Cut(rest, "/")
	if file != restoreReportFile || !ValidBackupID(id) {
		return "", false
	}
	return id, true
}

// RestoreJournalsPrefix is the prefix of every restore journal
// (RestoreJournalKey): restores/journals/.
func RestoreJournalsPrefix() string { return restoreJournalsDir }

// RestoreJournalKey is the key of the journal of the restores of backupID
// into the target cluster with id clusterID (a RestoreJournal):
// restores/journals/<backup-id>/<cluster-id>.json. A target whose brokers
// do not tell their cluster id is "unknown-cluster".
func RestoreJournalKey(backupID, clusterID string) string {
	if clusterID == "" {
		clusterID = unknownTargetCluster
	}
	return fmt.Sprintf("%s%s/%s.json", restoreJournalsDir, backupID, clusterID)
}

// RestoreLocksPrefix is the prefix of every restore lock
// (RestoreLockKey): restores/locks/.
func RestoreLocksPrefix() string { return restoreLocksDir }

// RestoreLockKey is the key of the lock a restore into the target cluster
// with id clusterID holds (restores/locks/<cluster-id>; "unknown-cluster"
// when the brokers do not tell it): one restore at a time into a cluster.
func RestoreLockKey(clusterID string) string {
	if clusterID == "" {
		clusterID = unknownTargetCluster
	}
	return restoreLocksDir + clusterID
}

// IsLockKey reports whether key is a lock: the repository lock (LockKey)
// or a restore lock (under RestoreLocksPrefix). Locks stay plaintext in
// an encrypted repository (docs/FORMAT.md, "Encryption"): they hold no
// record data, PutIfAbsent creates them from the bytes it compares, and
// their heartbeat rewrites them.
func IsLockKey(key string) bool {
	return key == LockKey || strings.HasPrefix(key, restoreLocksDir)
}

// DrillsPrefix is the prefix under which drills keep their reports
// (DrillReportKey): drills/.
func DrillsPrefix() string { return drillsPrefix }

// DrillReportKey is the key of the report of the drill drillID (a
// DrillReport): drills/<drill-id>/report.json.
func DrillReportKey(drillID string) string { return drillsPrefix + drillID + "/" + drillReportFile }

// ParseDrillReportKey returns the drill id of a drill report's key
// (DrillReportKey) and true, or "" and false for any other key, and for an
// id that does not have the form of a backup id.
func ParseDrillReportKey(key string) (drillID string, ok bool) {
	rest, ok := strings.CutPrefix(key, drillsPrefix)
	if !ok {
		return "", false
	}
	id, file, _ := strings.Cut(rest, "/")
	if file != drillReportFile || !ValidBackupID(id) {
		return "", false
	}
	return id, true
}

// Retained reports whether key is one of the objects a complete backup
// consists of, which an Object Lock retention protects
// (storage.S3Options.Retained, docs/OPERATIONS.md "Object Lock"): a
// backup's manifest.json (ManifestKey) and a segment (SegmentKey: under
// segments/<backup-id>/, ending in .kseg). Every other object is false:
// the lock, progress.json and shard progress (deleted or replaced while a
// backup runs), restore journals, locks, shard runs and reports, and drill
// reports (written again or deleted by restore, prune and drill).
func Retained(key string) bool {
	if id, progress, ok := ParseManifestKey(key); ok {
		return !progress && id != ""
	}
	rest, ok := strings.CutPrefix(key, segmentsPrefix)
	if !ok || !strings.HasSuffix(rest, ".kseg") {
		return false
	}
	id, _, _ := strings.Cut(rest, "/")
	return ValidBackupID(id)
}
