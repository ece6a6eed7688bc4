package format

import "testing"

// TestDrillReportKey: drills/<id>/report.json, and only that parses.
func TestDrillReportKey(t *testing.T) {
	const id = "20261129T074512.345Z-9f3a01bc"
	if got := DrillReportKey(id); got != "drills/"+id+"/report.json" {
		t.Errorf("DrillReportKey = %q", got)
	}
	for _, tc := range []struct {
		key, id string
		ok      bool
	}{
		{DrillReportKey(id), id, true},
		{"drills/" + id + "/report.json.tmp", "", false},
		{"drills/not-an-id/report.json", "", false},
		{RestoreReportKey(id), "", false},
		{"drills/", "", false},
	} {
		got, ok := ParseDrillReportKey(tc.key)
		if got != tc.id || ok != tc.ok {
			t.Errorf("ParseDrillReportKey(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.id, tc.ok)
		}
	}
}
