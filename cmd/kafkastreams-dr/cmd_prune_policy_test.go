package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// craftBackup writes a complete backup taken at at (one partition, one
// segment) into store and returns its id.
func craftBackup(t *testing.T, store storage.Backend, at time.Time, n byte) string {
	t.Helper()
	id := format.NewBackupID(at, [4]byte{0, 0, 0, n})
	key := format.SegmentKey(id, "orders", 0, 0)
	if err := store.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	p := format.Partition{EndOffset: 1, Records: 1, Segments: []format.Segment{{Key: key, BackupID: id, Size: 1, Records: 1}}}
	m := &format.Manifest{Format: format.FormatName, FormatVersion: 1, State: format.StateComplete, BackupID: id,
		StartedAt: at, CutAt: at, FinishedAt: at.Add(time.Minute),
		Topics: []format.Topic{{Name: "orders", Class: "external", Partitions: 1, PartitionCuts: []format.Partition{p}}}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ManifestKey(id), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPruneRetentionUnits: prune reads durations in restic's units (m is
// months, as restic users read it) and has restic's --keep-hourly,
// --keep-daily, --keep-weekly, --keep-monthly and --keep-yearly; a unit
// restic does not have is a usage error naming the flag and the units.
// Issue 9: "--keep-within 6m meant six minutes".
func TestPruneRetentionUnits(t *testing.T) {
	// Retention counts back from the newest backup (restic's rule), so
	// fixed times make the day, week and month buckets deterministic.
	newest := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		args    []string
		code    int
		kept    []int  // indexes into times of the backups kept
		errWant string // exitOK: in the reason of the oldest kept backup; else: on stderr
	}{
		{"6m is six months", []string{"--keep-within", "6m"}, exitOK, []int{0, 1, 2}, "keep-within 6m"},
		{"1y2m3d4h", []string{"--keep-within", "1y2m3d4h"}, exitOK, []int{0, 1, 2, 3}, "keep-within 1y2m3d4h"},
		{"keep-daily keeps the newest backup of each day", []string{"--keep-daily", "2"}, exitOK, []int{0, 2}, "keep-daily"},
		{"keep-monthly", []string{"--keep-monthly", "3"}, exitOK, []int{0, 3, 4}, "keep-monthly"},
		{"keep-daily unlimited: the newest of every day", []string{"--keep-daily", "unlimited"}, exitOK, []int{0, 2, 3, 4}, "keep-daily"},
		{"keep-weekly and keep-last: the union", []string{"--keep-weekly", "1", "--keep-last", "2"}, exitOK, []int{0, 1}, "keep-last"},
		{"minutes are not a unit", []string{"--keep-within", "90s"}, exitUsage, nil, "--keep-within"},
		{"restic's units are named", []string{"--keep-within", "6mo"}, exitUsage, nil, "y (years), m (months), w (weeks), d (days), h (hours)"},
	}
	// The backups, newest first: two on the newest day, one the day
	// before, one 7 months and one 15 months before (each in a month of
	// its own, for keep-monthly).
	times := []time.Time{
		newest,
		newest.Add(-6 * time.Hour),
		newest.AddDate(0, 0, -1).Add(-time.Hour),
		newest.AddDate(0, -7, 0),
		newest.AddDate(-1, -3, 0),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, storageYAML := catalogRepos[0].open(t)
			var ids []string
			for i, at := range times {
				ids = append(ids, craftBackup(t, store, at, byte(i)))
			}
			cfg := writeFile(t, "app.yaml", "application_id: order-processor\nsource:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\n"+storageYAML)
			code, stdout, stderr := runCLI(t, append([]string{"prune", "-c", cfg, "--dry-run", "--json"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("prune %v: exit %d, want %d\n%s\n%s", tt.args, code, tt.code, stdout, stderr)
			}
			if tt.code != exitOK {
				if !strings.Contains(stderr, tt.errWant) {
					t.Fatalf("prune %v: stderr does not say %q:\n%s", tt.args, tt.errWant, stderr)
				}
				return
			}
			var res struct {
				Backups []struct {
					BackupID string `json:"backup_id"`
					Keep     bool   `json:"keep"`
					Reason   string `json:"reason"`
				} `json:"backups"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			want := map[string]bool{}
			for _, i := range tt.kept {
				want[ids[i]] = true
			}
			var got []string
			oldestKept := ""
			for _, b := range res.Backups {
				if b.Keep {
					oldestKept = b.Reason
				}
				got = append(got, fmt.Sprintf("%s keep=%v (%s)", b.BackupID, b.Keep, b.Reason))
				if b.Keep != want[b.BackupID] {
					t.Errorf("backup %s: keep %v, want %v (reason %q)", b.BackupID, b.Keep, want[b.BackupID], b.Reason)
				}
			}
			if !strings.Contains(oldestKept, tt.errWant) {
				t.Errorf("the oldest kept backup's reason %q does not name %q", oldestKept, tt.errWant)
			}
			if t.Failed() {
				t.Logf("decisions:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}
