package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/estimate"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedir"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestOutputFunctions pins the text of the rendering functions the output
// files gained when they moved out of the commands' run functions: each
// row renders plain values into a buffer and compares every byte.
func TestOutputFunctions(t *testing.T) {
	cut := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	problem := verify.Problem{Object: "backups/b/segments/orders/0/00000000000000000000.seg", Message: "size 10, manifest says 12"}
	tests := []struct {
		name   string
		render func(w *strings.Builder) error
		want   string
	}{
		{"verify: objects and checksums, OK", func(w *strings.Builder) error {
			return writeVerifyResult(w, false, "B1", "/repo", false, false, &verify.Result{Segments: 1, Bytes: 2048})
		}, "backup B1: checked objects and checksums in /repo: 1 segment, 2.0 KiB read\nOK\n"},
		{"verify: deep, with records, a problem and a warning", func(w *strings.Builder) error {
			return writeVerifyResult(w, false, "B1", "/repo", true, false, &verify.Result{Segments: 2, Bytes: 10, Records: 1,
				Problems: []verify.Problem{problem}, Warnings: []string{"unread"}})
		}, "backup B1: checked objects, checksums and records (deep) in /repo: 2 segments, 10 bytes read, 1 record decoded\n1 problem:\n  " +
			problem.String() + "\nwarning: unread\n"},
		{"verify: against the cluster", func(w *strings.Builder) error {
			return writeVerifyResult(w, false, "B1", "/repo", true, true, &verify.Result{Records: 3})
		}, "backup B1: checked the target cluster against the backup: 3 records compared\nOK\n"},
		{"verify: JSON", func(w *strings.Builder) error {
			return writeVerifyResult(w, true, "B1", "/repo", false, false, &verify.Result{BackupID: "B1", Problems: []verify.Problem{}})
		}, "{\n  \"backup_id\": \"B1\",\n  \"deep\": false,\n  \"segments\": 0,\n  \"bytes\": 0,\n  \"records\": 0,\n  \"problems\": []\n}\n"},
		{"topics: no decision as JSON is an empty array", func(w *strings.Builder) error {
			return writeDecisions(w, true, nil)
		}, "[]\n"},
		{"topics: a table", func(w *strings.Builder) error {
			return writeDecisions(w, false, []topicfilter.Decision{{Topic: "orders", Class: topicfilter.External, Partitions: 3, Selected: true, Reason: "r"}})
		}, "TOPIC   CLASS     ROLE  PARTITIONS  SELECTED  REASON\norders  external  -     3           yes       r\n"},
		{"topics: a table with roles", func(w *strings.Builder) error {
			return writeDecisions(w, false, []topicfilter.Decision{{Topic: "orders", Class: topicfilter.External, Role: topicfilter.RoleInput, Partitions: 3, Selected: true, Reason: "r"}})
		}, "TOPIC   CLASS     ROLE   PARTITIONS  SELECTED  REASON\norders  external  input  3           yes       r\n"},
		{"topics: JSON has the role", func(w *strings.Builder) error {
			return writeDecisions(w, true, []topicfilter.Decision{{Topic: "p", Class: topicfilter.Changelog, SourceChangelog: true, Role: topicfilter.RoleSourceChangelog, Partitions: 1, Selected: true, Reason: "r"}})
		}, "[\n  {\n    \"topic\": \"p\",\n    \"class\": \"changelog\",\n    \"source_changelog\": true,\n    \"role\": \"source-changelog\",\n    \"partitions\": 1,\n    \"selected\": true,\n    \"reason\": \"r\"\n  }\n]\n"},
		{"list: no backups, JSON", func(w *strings.Builder) error {
			return writeBackupList(w, true, "/repo", nil, nil, cut)
		}, "{\n  \"repository\": \"/repo\",\n  \"backups\": []\n}\n"},
		{"list: no backups, text", func(w *strings.Builder) error {
			return writeBackupList(w, false, "/repo", []catalog.Summary{}, nil, cut)
		}, "no backups in /repo\n"},
		{"offsets translate: no group", func(w *strings.Builder) error {
			return writeOffsetTranslation(w, false, "B1", restorer.StrategyChangelog, nil, nil)
		}, "backup B1 holds no group offsets (application_id was not set when it was taken)\n"},
		{"offsets translate: a cut, one offset", func(w *strings.Builder) error {
			return writeOffsetTranslation(w, false, "B1", restorer.StrategyRebuild, &cut, &restorer.GroupPlan{GroupID: "app",
				Offsets: []restorer.OffsetPlan{{Topic: "orders", Partition: 0, Committed: 5, Translated: 2, Action: "commit"}}})
		}, "group app of backup B1 restored into empty topics (strategy rebuild, to 2024-05-01T12:00:00Z): 1 offset to commit\n\n" +
			"TOPIC   PARTITION  COMMITTED  TRANSLATED  ACTION  NOTE\norders  0          5          2           commit  \n"},
		{"estimate: the default throughput", func(w *strings.Builder) error {
			return writeEstimate(w, false, &estimate.Estimate{BackupID: "B1", CutAt: cut, Throughput: estimate.Throughput{RecordsPerSecond: 20000, Source: "default"},
				Strategies: []estimate.Strategy{{Name: "changelog", Topics: []string{"a"}, Records: 40000, RawBytes: 1 << 20, RestoreSeconds: 2, Reprocess: "restore stores"},
					{Name: "standby", Note: "n"}}}, cut.Add(90*time.Second))
		}, "backup B1 (cut 2024-05-01T12:00:00Z, 1m30s ago)\nrestore throughput: 20000 records/s, a default (no restore or drill has run from this repository yet)\n\n" +
			"STRATEGY   TOPICS  RECORDS  BYTES    RESTORE TIME  THEN\nchangelog  1       40000    1.0 MiB  2s            restore stores\nstandby    -       -        -        -             n\n"},
		// Second new-user pass: with every past report unreadable, estimate
		// warned that it skipped one and then said no restore had run.
		{"estimate: the default throughput when every report is unreadable", func(w *strings.Builder) error {
			return writeEstimate(w, false, &estimate.Estimate{BackupID: "B1", CutAt: cut, Throughput: estimate.Throughput{RecordsPerSecond: 20000, Source: "default",
				Unreadable: []string{"restores/R1/report.json"}}, Strategies: []estimate.Strategy{{Name: "standby", Note: "n"}}}, cut.Add(90*time.Second))
		}, "backup B1 (cut 2024-05-01T12:00:00Z, 1m30s ago)\nrestore throughput: 20000 records/s, a default (no readable restore or drill report: 1 unreadable, skipped)\n\n" +
			"STRATEGY  TOPICS  RECORDS  BYTES  RESTORE TIME  THEN\nstandby   -       -        -      -             n\n"},
		{"restore: dry run", func(w *strings.Builder) error {
			return writeDryRun(w, false, &restorer.Plan{BackupID: "B1", Strategy: restorer.StrategyChangelog}, "k:9092", restorer.Options{})
		}, "restore plan for backup B1\n  strategy     changelog (topics and state; group offsets translated)\n  target       k:9092\n" +
			"  restores     0 records in 0 topics (0 partitions)\n\nno group offsets: the backup holds none (was application_id set when it was taken?)\n\nsegments: not checked (add --precheck digest or deep to check them as a restore does; verify --deep checks every segment)\ndry run: nothing was written to k:9092\n"},
		// New-user pass, issue 12: a share group's plan asked whether
		// application_id was set, under the share-group warning.
		{"restore: dry run of a share group's backup", func(w *strings.Builder) error {
			return writeDryRun(w, false, &restorer.Plan{BackupID: "B1", Strategy: restorer.StrategyChangelog, ShareGroup: "app"}, "k:9092", restorer.Options{})
		}, "restore plan for backup B1\n  strategy     changelog (topics and state; group offsets translated)\n  target       k:9092\n" +
			"  restores     0 records in 0 topics (0 partitions)\n\nno group offsets: group \"app\" was a share group (KIP-932) on the source; the restore leaves the target's group alone\n\nsegments: not checked (add --precheck digest or deep to check them as a restore does; verify --deep checks every segment)\ndry run: nothing was written to k:9092\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w strings.Builder
			if err := tt.render(&w); err != nil {
				t.Fatal(err)
			}
			if w.String() != tt.want {
				t.Errorf("output:\n%q\nwant:\n%q", w.String(), tt.want)
			}
		})
	}
}

// TestDrillHeader: a drill that takes a new backup names the source; one of
// an existing backup names the backup instead.
func TestDrillHeader(t *testing.T) {
	tests := []struct {
		name, app, backupID string
		want                []string
	}{
		{"new backup", "order-processor", "", []string{"DR drill of order-processor", "  source       s:9092", "  repository   /repo", "  target       t:9092"}},
		{"existing backup, no application", "", "latest", []string{"DR drill of unknown",
			"  backup       latest (existing; the source counts as lost when the drill starts)", "  repository   /repo", "  target       t:9092"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drillHeader(tt.app, "s:9092", tt.backupID, "/repo", "t:9092")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("header:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestWipeSummary: what state wipe says it removes, and its dry run.
func TestWipeSummary(t *testing.T) {
	p := &statedir.WipePlan{Dir: "/s/app", Tasks: []string{"0_0"}, Files: 2, Bytes: 3}
	if got, want := wipeSummary(p), "/s/app (1 task directory, 2 files, 3 bytes)"; got != want {
		t.Errorf("wipeSummary = %q, want %q", got, want)
	}
	var w strings.Builder
	printWipeDryRun(&w, p) // a plan made by hand has no entries
	if got, want := w.String(), "would remove /s/app (1 task directory, 2 files, 3 bytes); nothing was removed (dry run)\n"; got != want {
		t.Errorf("dry run = %q, want %q", got, want)
	}
}
