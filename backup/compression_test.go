package backup_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestBackupAtEachCompressionLevel: a backup at every compression level
// (backup.compression_level) holds the same records, read back by the
// repository's reader that knows no level; an unknown level is refused
// before anything is written.
func TestBackupAtEachCompressionLevel(t *testing.T) {
	kf := seededKfake(t)
	var want map[string][]format.Record
	for _, level := range format.CompressionLevels {
		store, err := storage.NewFilesystem(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o := sampleOptions(kf.Addrs(), store)
		o.CompressionLevel = level
		res, err := backup.Run(t.Context(), o)
		if err != nil {
			t.Fatalf("level %s: %v", level, err)
		}
		m := backupcheck.Latest(t, store, res.BackupID)
		got := map[string][]format.Record{}
		for _, tp := range m.Topics {
			for _, p := range tp.PartitionCuts {
				got[tp.Name] = append(got[tp.Name], backupcheck.Records(t, store, m, tp.Name, p.Partition)...)
			}
		}
		if len(got) == 0 || res.Records == 0 {
			t.Fatalf("level %s: nothing backed up", level)
		}
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Fatalf("level %s holds other records than level %s", level, format.CompressionLevels[0])
		}
	}

	dir := t.TempDir()
	store, _ := storage.NewFilesystem(dir)
	o := sampleOptions(kf.Addrs(), store)
	o.CompressionLevel = "turbo"
	_, err := backup.Run(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), `compression level "turbo" is not one of fastest, default, better or best`) {
		t.Fatalf("backup at level turbo: %v, want a refusal naming the level and the valid ones", err)
	}
	var objects []string
	store.List(t.Context(), "", func(oi storage.ObjectInfo) error { objects = append(objects, oi.Key); return nil })
	if len(objects) != 0 {
		t.Fatalf("a refused backup wrote %q", objects)
	}
}
