package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestDamagedInFlightTailHintsSkipInFlight is a new-user fault of issue
// 11: a damaged segment of an in-flight tail (a byte flipped on disk) made
// verify --deep and the restore hint only at older backups and --full, not
// at restore --skip-in-flight, which restores everything else (the tail's
// records lost, exit 3). The hints now say so, with the cost, and the
// restore with --skip-in-flight indeed gets past the damage.
func TestDamagedInFlightTailHintsSkipInFlight(t *testing.T) {
	cfg, dir := sampleBackupConfig(t, 3)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
		t.Fatalf("backup: exit %d\n%s\n%s", code, stdout, stderr)
	}
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, tp := range m.InFlight {
		for _, p := range tp.PartitionCuts {
			if tp.Name == sample.Repartition && len(p.Segments) > 0 && key == "" {
				key = p.Segments[0].Key
			}
		}
	}
	if key == "" {
		t.Fatalf("backup %s has no segment in the in-flight tail of %s", m.BackupID, sample.Repartition)
	}
	path := filepath.Join(dir, filepath.FromSlash(key))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	const want = "the damage is only in the in-flight tails of " + sample.Repartition + ": restore --skip-in-flight restores everything else (the records in flight in those tails are lost, exit 3)"
	code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg, "--deep")
	if code != exitUsage || !strings.Contains(stdout, key) || !strings.Contains(stderr, want) {
		t.Errorf("verify --deep of a damaged in-flight segment: exit %d, want %d naming %s and hinting %q\n%s\n%s", code, exitUsage, key, want, stdout, stderr)
	}
	// Tails are never chained (docs/FORMAT.md): the damage is in this
	// backup only, not "in every later incremental backup".
	if strings.Contains(stderr, "stays in every later incremental backup") || !strings.Contains(stderr, "tails are never chained") {
		t.Errorf("verify --deep of a damaged in-flight segment hints as for a chained segment:\n%s", stderr)
	}
	rcfg := restoreConfig(t, testkit.StartKfake(t, 3).Addrs(), dir)
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", rcfg, "--yes")
	if code != exitUsage || !strings.Contains(stderr, key) || !strings.Contains(stderr, want) {
		t.Errorf("restore of a damaged in-flight segment: exit %d, want %d naming %s and hinting %q\n%s\n%s", code, exitUsage, key, want, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", rcfg, "--yes", "--skip-in-flight")
	if code != exitPartial || !strings.Contains(stderr, "is partial: 8 records in flight") {
		t.Errorf("restore --skip-in-flight past a damaged in-flight segment: exit %d, want %d (partial, the 8 records in flight lost)\n%s\n%s", code, exitPartial, stdout, stderr)
	}
	// Restoring without --skip-in-flight cannot bring back a damaged tail.
	if !strings.Contains(stderr, "when the tails are what is damaged (verify --deep names the segments), restoring without --skip-in-flight cannot bring them back") {
		t.Errorf("restore --skip-in-flight hint does not say a damaged tail cannot be brought back:\n%s", stderr)
	}
}
