package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestDrillExitsAndHints is the second new-user pass over drill's exit
// codes and hints: a drill with a backup that does not exist exits 2 like
// every other reader (it exited 1, "check the drill target"); a damaged
// latest manifest names the damaged backup's id (it printed --backup-id
// unknown); and a failed drill leaves RTO, RPO and the backup id out of
// the JUnit XML and null in --json (they were 0.000 and "", which a CI
// dashboard reads as a perfect RTO).
func TestDrillExitsAndHints(t *testing.T) {
	src := testkit.StartKfake(t, 1)
	target := testkit.StartKfake(t, 1)
	repo := t.TempDir()
	cfg := ordersDrillConfig(t, src.Bootstrap(), target.Bootstrap(), repo)

	checkNotReached := func(t *testing.T, junit, stdout string) {
		t.Helper()
		for _, p := range readJUnit(t, junit).Properties {
			switch p.Name {
			case "rto_seconds", "rpo_seconds", "backup_id":
				t.Errorf("JUnit property %s=%q for a drill that did not reach it: want it absent", p.Name, p.Value)
			}
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("--json: %v\n%s", err, stdout)
		}
		for _, k := range []string{"rto_seconds", "rpo_seconds"} {
			if v, ok := rep[k]; !ok || v != nil {
				t.Errorf("--json %s = %v (present %v): want null", k, v, ok)
			}
		}
		if v, ok := rep["backup_id"]; ok {
			t.Errorf("--json backup_id = %v: want it absent", v)
		}
	}

	t.Run("unknown backup id exits 2 with the list hint", func(t *testing.T) {
		junit := filepath.Join(t.TempDir(), "drill.xml")
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg,
			"--backup-id", "20991201T000000.000Z-deadbeef", "--junit", junit, "--json")
		t.Logf("stderr:\n%s", stderr)
		if code != exitUsage || !strings.Contains(stderr, "20991201T000000.000Z-deadbeef") ||
			!strings.Contains(stderr, "kafkastreams-dr list -c "+cfg) || strings.Contains(stderr, "check the drill target") {
			t.Errorf("exit %d, want 2 naming the id and list -c %s", code, cfg)
		}
		checkNotReached(t, junit, stdout)
	})

	t.Run("damaged latest manifest names its backup", func(t *testing.T) {
		const id = "20261129T074512.345Z-9f3a01bc"
		key := filepath.Join(repo, filepath.FromSlash(format.ManifestKey(id)))
		if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, []byte(`{"format_version": 1, "backup_id": "`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(key)) })
		junit := filepath.Join(t.TempDir(), "drill.xml")
		code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest", "--junit", junit, "--json")
		t.Logf("stderr:\n%s", stderr)
		if code != exitUsage || !strings.Contains(stderr, "--backup-id "+id) || strings.Contains(stderr, "unknown") {
			t.Errorf("exit %d, want 2 with a hint naming backup %s", code, id)
		}
		for _, p := range readJUnit(t, junit).Properties {
			if p.Name == "rto_seconds" || p.Name == "rpo_seconds" {
				t.Errorf("JUnit property %s=%q for a drill that did not reach it: want it absent", p.Name, p.Value)
			}
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("--json: %v\n%s", err, stdout)
		}
		if rep["rto_seconds"] != nil || rep["rpo_seconds"] != nil {
			t.Errorf("--json rto_seconds %v, rpo_seconds %v: want null", rep["rto_seconds"], rep["rpo_seconds"])
		}
	})
}
