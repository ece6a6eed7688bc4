package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestBogusGroupTypeIsDamage is a regression test (second new-user pass):
// a manifest whose group.type is "bogus" (not classic, consumer, streams
// or share) was accepted by describe, verify and restore. It is damage
// now: each exits 2 naming group.type.
func TestBogusGroupTypeIsDamage(t *testing.T) {
	backupCfg, dir := sampleBackupConfig(t, 1)
	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", backupCfg, "--json")
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil {
		t.Fatalf("backup: exit %d (%v)\n%s\n%s", code, err, stdout, stderr)
	}
	editManifestFile(t, dir, res.BackupID, func(raw map[string]json.RawMessage) {
		var g map[string]json.RawMessage
		if err := json.Unmarshal(raw["group"], &g); err != nil {
			t.Fatalf("manifest group %s: %v", raw["group"], err)
		}
		g["type"] = json.RawMessage(`"bogus"`)
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		raw["group"] = b
	})
	dst := testkit.StartKfake(t, 1)
	for _, args := range [][]string{
		{"describe", "-c", backupCfg, "--backup-id", res.BackupID},
		{"verify", "-c", backupCfg},
		{"restore", "-c", restoreConfig(t, dst.Addrs(), dir), "--dry-run"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stdout+stderr, `group.type "bogus"`) {
			t.Errorf("%s with group.type bogus: exit %d, want 2 naming group.type\n%s\n%s", args[0], code, stdout, stderr)
		}
	}
}
