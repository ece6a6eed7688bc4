package backup_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func sampleOptions(seeds []string, store storage.Backend) backup.Options {
	return backup.Options{
		Source: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs,
		Include: sample.Include, Exclude: sample.Exclude, SourceClusterID: "test",
		SegmentMaxBytes: 4 << 10, // several segments per partition
	}
}

func seededKfake(t *testing.T) *testkit.Kfake {
	t.Helper()
	kf := testkit.StartKfake(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sample.Seed(ctx, testkit.Client(t, kf.Addrs())); err != nil {
		t.Fatal(err)
	}
	kf.Compact() // holes in the compacted customers topic
	return kf
}

func TestBackupSampleOnKfakeToFilesystem(t *testing.T) {
	kf := seededKfake(t)
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(context.Background(), sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	backupcheck.SampleManifest(t, m)
	backupcheck.MatchesCluster(t, store, m, kf.Addrs())
	backupcheck.SampleRecords(t, store, m)
}

// TestToolVersionIsAnOption: the manifest's tool_version is the run's
// Options.ToolVersion, and DefaultToolVersion ("dev") when it is empty; two
// runs with different versions in one process each record their own (it
// was a package variable every command set before running).
func TestToolVersionIsAnOption(t *testing.T) {
	kf := testkit.StartKfake(t, 1, kfake.SeedTopics(1, "orders"))
	cl := testkit.Client(t, kf.Addrs())
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, version, want string
	}{
		{"the command's version", "v1.2.3", "v1.2.3"},
		{"another version in the same process", "v2.0.0-rc.1", "v2.0.0-rc.1"},
		{"empty is the documented default", "", backup.DefaultToolVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := storage.NewFilesystem(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
				Include: []string{"orders"}, ToolVersion: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			m, err := repository.LoadManifest(t.Context(), store, res.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			if m.ToolVersion != tt.want {
				t.Errorf("manifest tool_version = %q, want %q", m.ToolVersion, tt.want)
			}
		})
	}
	if backup.DefaultToolVersion != "dev" {
		t.Errorf("DefaultToolVersion = %q, want \"dev\" (what manifests recorded before it was an option)", backup.DefaultToolVersion)
	}
}
