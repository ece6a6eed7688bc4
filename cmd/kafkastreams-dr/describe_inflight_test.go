package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
)

// TestDescribeShowsCutAndInFlight: describe (text and --json) says how the
// backup's cut was taken and whether it was proven (method, attempts,
// reason), and the records in flight its tails hold, per topic and in
// total: the sample's 8 (docs/DOMAIN.md#in-flight). A manifest written
// before the cut was recorded (its JSON without cut and in_flight) says
// the cut is not recorded and treated as not proven, and that the backup
// holds no tails.
func TestDescribeShowsCutAndInFlight(t *testing.T) {
	cfg, dir := sampleBackupConfig(t, 3)
	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil {
		t.Fatalf("backup --json: exit %d (%v)\n%s\n%s", code, err, stdout, stderr)
	}

	// list counts the tails as the backup does (it left them out without
	// saying so: 97 records where the backup said 105).
	code, stdout, stderr = runCLI(t, "--log-level", "error", "list", "-c", cfg, "--json")
	var l struct {
		Backups []struct {
			Topics          int   `json:"topics"`
			Partitions      int   `json:"partitions"`
			Records         int64 `json:"records"`
			InFlightRecords int64 `json:"in_flight_records"`
		} `json:"backups"`
	}
	if err := json.Unmarshal([]byte(stdout), &l); code != exitOK || err != nil || len(l.Backups) != 1 {
		t.Fatalf("list --json: exit %d (%v)\n%s\n%s", code, err, stdout, stderr)
	}
	// (backup --json's topics and partitions leave the tails out, its
	// records and its stdout summary count them.)
	tailParts := 0
	for _, f := range res.InFlight {
		tailParts += f.Partitions
	}
	if b := l.Backups[0]; b.Topics != res.Topics+len(res.InFlight) || b.Partitions != res.Partitions+tailParts || b.Records != res.Records || b.InFlightRecords != res.InFlightRecords || b.InFlightRecords == 0 {
		t.Errorf("list --json: %d topics, %d partitions, %d records (%d in flight); the backup: %d+%d topics, %d+%d partitions, %d records (%d in flight)",
			b.Topics, b.Partitions, b.Records, b.InFlightRecords, res.Topics, len(res.InFlight), res.Partitions, tailParts, res.Records, res.InFlightRecords)
	}

	code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg)
	if code != exitOK {
		t.Fatalf("describe: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`(?m)^  chain\s+.*; in-flight tails included: 8 records of 2 repartition topics$`,
		`(?m)^  cut proven\s+yes \(method offsets-ends-offsets, 1 attempt, \d+ transactions? waited for, \d+ms\)$`,
		`(?m)^  in flight\s+8 records in 2 repartition topics \(tails at the cut, restored by a changelog restore\)$`,
		`(?m)^  ` + regexp.QuoteMeta(sample.Repartition) + `\s+3 partitions\s+7 records$`,
		`(?m)^  ` + regexp.QuoteMeta(sample.FKTopic) + `\s+1 partition\s+1 record$`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("describe does not match %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg, "--json")
	var d struct {
		Cut *struct {
			Method   string `json:"method"`
			Proven   bool   `json:"proven"`
			Attempts int    `json:"attempts"`
			Reason   string `json:"reason"`
		} `json:"cut"`
		InFlight *struct {
			Records int64 `json:"records"`
			Topics  []struct {
				Name       string `json:"name"`
				Partitions int    `json:"partitions"`
				Records    int64  `json:"records"`
			} `json:"topics"`
		} `json:"in_flight"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); code != exitOK || err != nil {
		t.Fatalf("describe --json: exit %d (%v)\n%s\n%s", code, err, stdout, stderr)
	}
	if d.Cut == nil || d.Cut.Method != "offsets-ends-offsets" || !d.Cut.Proven || d.Cut.Attempts != 1 || d.Cut.Reason != "" {
		t.Errorf("describe --json cut %+v, want offsets-ends-offsets proven in 1 attempt\n%s", d.Cut, stdout)
	}
	if d.InFlight == nil || d.InFlight.Records != 8 || len(d.InFlight.Topics) != 2 ||
		d.InFlight.Topics[0].Name != sample.Repartition || d.InFlight.Topics[0].Partitions != 3 || d.InFlight.Topics[0].Records != 7 ||
		d.InFlight.Topics[1].Name != sample.FKTopic || d.InFlight.Topics[1].Records != 1 {
		t.Errorf("describe --json in_flight %+v, want 8 records: 7 in %s (3 partitions), 1 in %s\n%s", d.InFlight, sample.Repartition, sample.FKTopic, stdout)
	}

	// A cut not proven (the manifest's cut as a backup that gave up
	// writes it) says NO and why.
	editManifestFile(t, dir, res.BackupID, func(raw map[string]json.RawMessage) {
		raw["cut"] = json.RawMessage(`{"method":"offsets-ends-offsets","proven":false,"attempts":3,"transactions_waited":2,"duration_ms":30000,"reason":"the group's offsets moved between the two readings"}`)
	})
	code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg)
	if want := "  cut proven      NO (method offsets-ends-offsets, 3 attempts, 2 transactions waited for, 30000ms): the group's offsets moved between the two readings\n"; code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("describe of a cut not proven: exit %d, want 0 saying %q\n%s\n%s", code, want, stdout, stderr)
	}

	oldManifestFile(t, dir, res.BackupID, "in_flight", "cut")
	code, stdout, stderr = runCLI(t, "--log-level", "error", "describe", "-c", cfg)
	if code != exitOK {
		t.Fatalf("describe of an old manifest: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`(?m)^  cut proven\s+not recorded \(the backup predates the proven cut: treated as not proven\)$`,
		`(?m)^  in flight\s+none captured \(the backup predates in-flight capture\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("describe of an old manifest does not match %q:\n%s", want, stdout)
		}
	}
}
