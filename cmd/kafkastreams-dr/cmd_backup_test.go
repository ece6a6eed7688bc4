package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

func TestBackupOptionsFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(goodConfig+"source_changelog_topics: [customers]\nbackup:\n  source_cluster_id: prod\n  segment_max_bytes: 1MiB\n  segment_kind: batch\n  cut_attempts: 7\n  cut_timeout: 9s\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := backupOptionsFromConfig(c)
	if o.ApplicationID != "order-processor" || o.SourceClusterID != "prod" || o.SegmentMaxBytes != 1<<20 ||
		o.Concurrency != config.DefaultConcurrency || len(o.Include) != 2 || len(o.Exclude) != 1 ||
		len(o.SourceChangelogTopics) != 1 || o.AllowMissingTopics || o.CutAttempts != 7 || o.CutTimeout != 9*time.Second || o.SegmentKind != "batch" {
		t.Errorf("options = %+v", o)
	}
	// Without the key: record segments.
	c, err = config.Parse([]byte(goodConfig), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o := backupOptionsFromConfig(c); o.SegmentKind != "record" {
		t.Errorf("default segment kind %q, want record", o.SegmentKind)
	}
}

// TestBackupToDirectory backs up with each backup.segment_kind; the
// batch kind's backup verifies deep (every batch's CRC-32C and records).
func TestBackupToDirectory(t *testing.T) {
	for _, kind := range []string{"", "batch"} {
		t.Run("segment_kind="+kind, func(t *testing.T) { backupToDirectory(t, kind) })
	}
}

func backupToDirectory(t *testing.T, kind string) {
	brokers := startCluster(t, map[string]string{
		"orders":                           "",
		"order-processor-totals-changelog": "compact",
	}, "order-processor")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, "order-processor-*-changelog"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), repo))
	if kind != "" {
		cfg = writeFile(t, "app.yaml", readFile(t, cfg)+"backup:\n  segment_kind: "+kind+"\n")
	}

	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if res.BackupID == "" || res.Topics != 2 || res.Partitions != 4 || res.Records != 10 || res.Repository != repo {
		t.Errorf("result = %+v, want 2 topics, 4 partitions, 10 records in %s", res, repo)
	}
	manifest := readFile(t, filepath.Join(repo, filepath.FromSlash(format.ManifestKey(res.BackupID))))
	if strings.Contains(manifest, `"kind": "batch"`) != (kind == "batch") {
		t.Errorf("segment_kind %q: manifest %s", kind, manifest)
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg, "--deep"); code != 0 {
		t.Fatalf("verify --deep: exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// TestBackupErrorHints: each kind of failure gets its own exit code and
// next step (a new-user test found one "run it again to resume" hint on
// every error, wrong for most).
func TestBackupErrorHints(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      int
		hintHas   string
		hintHasnt string
	}{
		{"nothing selected", fmt.Errorf("%w: x", backup.ErrNothingSelected), exitUsage, "topics -c app.yaml", "resume"},
		{"missing literal include", &topicfilter.MissingTopicsError{Topics: []string{"t"}}, exitUsage, "topics -c app.yaml", "resume"},
		{"locked: exit 11, not a refusal", fmt.Errorf("%w by x", backup.ErrLocked), 11, "", "resume"},
		{"cluster unreachable", &backup.PhaseError{Phase: backup.PhaseCluster, Err: errors.New("dial tcp: refused")}, exitError, "bootstrap_servers", "resume"},
		{"repository unreadable", &backup.PhaseError{Phase: backup.PhaseRepository, Err: errors.New("decode lock")}, exitError, "storage", "resume"},
		{"copy failed", &backup.PhaseError{Phase: backup.PhaseCopy, Err: errors.New("no space left on device")}, exitError, "resumes", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := backupError(tc.err, "app.yaml")
			var ee *exitErr
			if !errors.As(err, &ee) || ee.code != tc.code {
				t.Fatalf("exit code of %v: %+v, want %d", tc.err, ee, tc.code)
			}
			if !strings.Contains(ee.hint, tc.hintHas) || (tc.hintHasnt != "" && strings.Contains(ee.hint, tc.hintHasnt)) {
				t.Fatalf("hint %q: want it to contain %q and not %q", ee.hint, tc.hintHas, tc.hintHasnt)
			}
		})
	}
	if gapsError(&backup.Result{}) != nil {
		t.Fatal("no gaps: want success")
	}
	var ee *exitErr
	if err := gapsError(&backup.Result{BackupID: "b", NewGaps: 2}); !errors.As(err, &ee) || ee.code != exitPartial || !strings.Contains(err.Error(), "2 offset ranges were deleted") {
		t.Fatalf("gaps: %v", err)
	}
}

// TestBackupOptionsCarryTheBuildVersion: the command passes its build-time
// version (main.version) to the backup as Options.ToolVersion; there is no
// package variable to set before a run.
func TestBackupOptionsCarryTheBuildVersion(t *testing.T) {
	c, err := config.Parse([]byte(goodConfig), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o := backupOptionsFromConfig(c); o.ToolVersion != version || o.ToolVersion == "" {
		t.Errorf("backupOptionsFromConfig: ToolVersion = %q, want the build's version %q", o.ToolVersion, version)
	}
}

// TestBackupOptionsCompressionLevel: backup.compression_level reaches the
// backup's options; absent, "" (backup.Run's default level).
func TestBackupOptionsCompressionLevel(t *testing.T) {
	for yaml, want := range map[string]format.CompressionLevel{"": "", "backup:\n  compression_level: fastest\n": format.CompressionFastest,
		"backup:\n  compression_level: best\n": format.CompressionBest} {
		c, err := config.Parse([]byte(goodConfig+yaml), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := backupOptionsFromConfig(c).CompressionLevel; got != want {
			t.Errorf("config %q: compression level %q, want %q", yaml, got, want)
		}
	}
}
