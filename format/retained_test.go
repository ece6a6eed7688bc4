package format_test

import (
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestRetained: the objects a complete backup consists of (its manifest
// and its segments) are the ones an Object Lock retention protects; the
// objects the tool deletes or rewrites itself are not.
func TestRetained(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	tests := []struct {
		key  string
		want bool
	}{
		{format.ManifestKey(id), true},
		{format.SegmentKey(id, "orders", 3, 1200), true},
		{format.SegmentKey(id, "a.topic.with.dots", 0, 0), true},
		{format.ProgressKey(id), false},
		{format.ShardProgressKey(id, 1), false},
		{format.LockKey, false},
		{format.RestoreLockKey("cluster-a"), false},
		{format.RestoreJournalKey(id, "cluster-a"), false},
		{format.RestoreReportKey(id), false},
		{format.RestoreShardRunKey("run-1"), false},
		{format.RestoreShardPartKey("run-1", 0), false},
		{format.DrillReportKey(id), false},
		{"backups/not-an-id/manifest.json", false},
		{"segments/not-an-id/orders/0/00000000000000000000.kseg", false},
		{"segments/" + id + "/orders/0/notes.txt", false},
		{"something/else", false},
	}
	for _, tt := range tests {
		if got := format.Retained(tt.key); got != tt.want {
			t.Errorf("Retained(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
