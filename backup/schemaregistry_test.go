package backup_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestBackupSchemaRegistryTopic: with SchemaRegistryTopic the registry's
// storage topic is copied although no include names it, marked
// schema_registry in the manifest (and the selection), in this run and in
// the incremental run after it; the app's topics are not marked.
func TestBackupSchemaRegistryTopic(t *testing.T) {
	kf := testkit.StartKfake(t, 1, kfake.SeedTopics(1, "orders", "_schemas"))
	cl := testkit.Client(t, kf.Addrs())
	produce := func(topic, value string) {
		t.Helper()
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("_schemas", `{"schema":"\"string\""}`)
	produce("orders", "\x00\x00\x00\x00\x01o1")
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
		Include: []string{"*"}, Exclude: []string{"_*"}, SchemaRegistryTopic: "_schemas"}
	for run := 1; run <= 2; run++ {
		produce("_schemas", `{"schema":"\"long\""}`)
		res, err := backup.Run(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "_schemas") {
				t.Errorf("run %d: warning about the registry topic: %s", run, w)
			}
		}
		m, err := repository.LoadManifest(t.Context(), store, res.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		if m.Selection == nil || m.Selection.SchemaRegistryTopic != "_schemas" {
			t.Errorf("run %d: selection %+v: want schema_registry_topic _schemas", run, m.Selection)
		}
		found := false
		for _, tp := range m.Topics {
			switch tp.Name {
			case "_schemas":
				found = true
				if !tp.SchemaRegistry || tp.Class != "external" {
					t.Errorf("run %d: _schemas in the manifest: schema_registry %v class %q", run, tp.SchemaRegistry, tp.Class)
				}
				if n := tp.PartitionCuts[0].Records; n != int64(run+1) {
					t.Errorf("run %d: _schemas holds %d records in the chain, want %d", run, n, run+1)
				}
			default:
				if tp.SchemaRegistry {
					t.Errorf("run %d: topic %q marked schema_registry", run, tp.Name)
				}
			}
		}
		if !found {
			t.Errorf("run %d: _schemas not backed up: %+v", run, m.Topics)
		}
		if run == 2 && m.ParentBackupID == "" {
			t.Error("the second run is not incremental")
		}
	}
}
