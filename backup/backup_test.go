package backup_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
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
