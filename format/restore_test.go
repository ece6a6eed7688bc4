package format

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
)

// goldenRestore is a report and a journal with every field set. Their
// golden files were written by the restorer's own types before they moved
// here (issue 10): the JSON a restore stores must not change.
func goldenRestore() (*RestoreReport, *RestoreJournal) {
	at := time.Date(2026, 11, 29, 7, 45, 12, 345000000, time.UTC)
	cut := at.Add(-time.Hour)
	rep := &RestoreReport{
		Plan: Plan{BackupID: "20261129T074512.345Z-9f3a01bc", ApplicationID: "order-processor", Strategy: StrategyRebuild, ToTime: &cut,
			TargetClusterID: "dr-cluster", TargetBrokers: 3,
			Topics: []TopicPlan{{Topic: "orders", Class: "input", SourceChangelog: true, Action: "fill", Partitions: 2, ReplicationFactor: 3,
				Configs: map[string]string{"cleanup.policy": "delete"}, FinalConfigs: map[string]string{"message.timestamp.type": "LogAppendTime"},
				PreConfigs: map[string]string{"retention.ms": "-1"}, MaxMessageBytes: 1048588,
				Retention:      &RetentionPlan{RetentionMs: 604800000, PastRetention: 5, OldestTimestamp: 1700000000000, Choice: RetentionKeep, Override: "retention.ms=-1", SetBack: "kafka-configs --alter"},
				PartitionPlans: []PartitionPlan{{Partition: 1, Records: 10, SourceEnd: 12, CutAt: 11, AlreadyThere: 2, NoTimestamp: 1, PastRetention: 5}}}},
			Skipped:  []SkippedTopic{{Topic: "order-processor-store-changelog", Reason: "a changelog: rebuild restores no changelog"}},
			Group:    &GroupPlan{GroupID: "order-processor", TargetState: "Empty", TargetType: "classic", Offsets: []OffsetPlan{{Topic: "orders", Partition: 1, Committed: 9, Translated: 7, Current: -1, Action: "commit", Note: "translated"}}},
			Warnings: []string{"a warning"}, Complete: true},
		RestoreID: "20261129T084512.345Z-0badf00d", StartedAt: at, FinishedAt: at.Add(time.Minute),
		Partitions: []PartitionReport{{Topic: "orders", Partition: 1, Class: "input", SourceEnd: 12, NewEnd: 10, Records: 10,
			Map: &offsets.Map{Runs: []offsets.Run{{Orig: 2, New: 0, Count: 10}}, NewEnd: 10}}},
		Committed: true, WipeState: true, Records: 10,
	}
	j := &RestoreJournal{BackupID: "20261129T074512.345Z-9f3a01bc", TargetClusterID: "dr-cluster", Strategy: StrategyRebuild, ToTime: &cut,
		Topics: map[string]string{"orders": "AAAAAAAAAAAAAAAAAAAAAQ"}, Complete: true, Committed: map[string]int64{"orders/1": 7}, UpdatedAt: at}
	return rep, j
}

// TestRestoreObjectsGolden pins the JSON of restores/<id>/report.json and
// restores/journals/<backup>/<cluster>.json (docs/FORMAT.md is the
// contract), and that each decodes back to what was encoded.
func TestRestoreObjectsGolden(t *testing.T) {
	rep, j := goldenRestore()
	for _, tc := range []struct {
		file string
		v    any
		back any
	}{
		{"restore-report-v1.golden.json", rep, &RestoreReport{}},
		{"restore-journal-v1.golden.json", j, &RestoreJournal{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := json.MarshalIndent(tc.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			path := filepath.Join("testdata", tc.file)
			if *update {
				os.WriteFile(path, b, 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("%s encoding changed (docs/FORMAT.md is the contract):\n%s", tc.file, b)
			}
			if err := json.Unmarshal(want, tc.back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.back, tc.v) {
				t.Fatalf("decoded %+v, want %+v", tc.back, tc.v)
			}
		})
	}
}

func TestRestoreKeys(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	for _, tc := range []struct{ got, want string }{
		{RestoresPrefix(), "restores/"},
		{RestoreReportKey(id), "restores/" + id + "/report.json"},
		{RestoreJournalsPrefix(), "restores/journals/"},
		{RestoreJournalKey(id, "dr-cluster"), "restores/journals/" + id + "/dr-cluster.json"},
		{RestoreJournalKey(id, ""), "restores/journals/" + id + "/unknown-cluster.json"},
		{RestoreLocksPrefix(), "restores/locks/"},
		{RestoreLockKey("dr-cluster"), "restores/locks/dr-cluster"},
		{RestoreLockKey(""), "restores/locks/unknown-cluster"},
		{SegmentsPrefix(), "segments/"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		key, id string
		ok      bool
	}{
		{RestoreReportKey(id), id, true},
		{"restores/" + id + "/report.json.tmp", "", false},
		{"restores/" + id + "/other.json", "", false},
		{"restores/not-an-id/report.json", "", false},
		{RestoreJournalKey(id, "c"), "", false},
		{RestoreLockKey("c"), "", false},
		{"backups/" + id + "/report.json", "", false},
		{"restores/", "", false},
	} {
		got, ok := ParseRestoreReportKey(tc.key)
		if got != tc.id || ok != tc.ok {
			t.Errorf("ParseRestoreReportKey(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.id, tc.ok)
		}
	}
}

func TestParseManifestKey(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	for _, tc := range []struct {
		key          string
		id           string
		progress, ok bool
	}{
		{ManifestKey(id), id, false, true},
		{ProgressKey(id), id, true, true},
		{"backups/" + id + "/manifest.json.tmp-1", "", false, false},
		{"backups/" + id + "/notes.txt", "", false, false},
		{"backups/not-an-id/manifest.json", "", false, false},
		{"backups/" + id, "", false, false},
		{"restores/" + id + "/manifest.json", "", false, false},
		{SegmentKey(id, "t", 0, 0), "", false, false},
	} {
		id, progress, ok := ParseManifestKey(tc.key)
		if id != tc.id || progress != tc.progress || ok != tc.ok {
			t.Errorf("ParseManifestKey(%q) = %q, %v, %v; want %q, %v, %v", tc.key, id, progress, ok, tc.id, tc.progress, tc.ok)
		}
	}
}
