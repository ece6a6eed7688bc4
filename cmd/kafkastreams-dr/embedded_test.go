package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
)

// TestBackupEmbedded is the README's quickstart: no cluster, no cloud
// account, a backup of the sample application in a local directory and a
// table of what was backed up and what was not.
func TestBackupEmbedded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kdr-quickstart")
	code, stdout, stderr := runCLI(t, "backup", "--embedded", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, topic := range sample.BackedUp {
		if !strings.Contains(stdout, "\n"+topic+" ") {
			t.Errorf("backed-up topic %q missing from the table:\n%s", topic, stdout)
		}
	}
	notBackedUp := stdout[strings.Index(stdout, "not backed up:"):]
	for _, topic := range []string{sample.Repartition, sample.FKTopic, sample.OtherTopic} {
		if !strings.Contains(notBackedUp, topic) {
			t.Errorf("%q not listed as not backed up:\n%s", topic, stdout)
		}
	}
	if !strings.Contains(stdout, "changelog (source topic)") || !strings.Contains(stdout, "group        order-processor: 6 committed offsets") {
		t.Errorf("summary:\n%s", stdout)
	}

	// The same directory again: refused, nothing touched.
	code, _, stderr = runCLI(t, "backup", "--embedded", "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "is not empty") {
		t.Fatalf("second run into the same --out: exit %d, stderr %q", code, stderr)
	}

	code, stdout, _ = runCLI(t, "backup", "--embedded", "--out", filepath.Join(t.TempDir(), "json"), "--json")
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, stdout)
	}
	if len(res.BackedUp) != len(sample.BackedUp) || res.Records == 0 || res.GroupOffsets != 6 || len(res.NotBackedUp) != 3 {
		t.Fatalf("--json result: %+v", res)
	}
}

func TestBackupEmbeddedFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"backup", "--embedded", "-c", "x.yaml"},
		{"backup", "--out", "dir"},
		{"backup"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, "Error: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}
