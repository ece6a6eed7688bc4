package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// schemaAppInput is the input topic of the application whose records carry
// schema ids in TestSchemaRegistryRestore.
const schemaAppInput = "sr-orders"

// schemaFrame is a value as a Confluent serializer writes it: the magic
// byte 0, the schema id as 4 bytes big endian, then the payload.
func schemaFrame(id int, payload string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

// schemaIDOf is the schema id of a framed value; false for a value that
// is not framed.
func schemaIDOf(v []byte) (int, bool) {
	if len(v) < 5 || v[0] != 0 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(v[1:5])), true
}

// TestSchemaRegistryRestore: a real Schema Registry (Apicurio Registry,
// kafkasql storage in "_schemas", its Confluent-compatible API) holds an
// Avro schema in two versions, a JSON Schema and a Protobuf schema under
// three subjects; the app's input carries their ids. The binary backs up
// the app with `schema_registry: {}` and restores it into a new Kafka; the
// registry's topic is restored record for record, and a second registry
// started on the target resolves every id found in the restored records to
// the very schema the first one served, and gives a new schema an id that
// none of them has.
func TestSchemaRegistryRestore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts two Kafka brokers and two schema registries")
	}
	work := t.TempDir()
	bin := filepath.Join(work, "kafkastreams-dr")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kafkastreams-dr").CombinedOutput(); err != nil {
		t.Fatalf("build kafkastreams-dr: %v\n%s", err, out)
	}
	src := testkit.StartKafka(t)
	ctx := t.Context()

	reg := testkit.StartSchemaRegistry(t, src.Bootstrap(), config.DefaultSchemaRegistryTopic)
	schemas := []struct {
		subject string
		schema  testkit.Schema
	}{
		{"sr-orders-value", testkit.Schema{SchemaType: "AVRO", Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`}},
		{"sr-orders-value", testkit.Schema{SchemaType: "AVRO", Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null}]}`}},
		{"sr-users-value", testkit.Schema{SchemaType: "JSON", Schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`}},
		{"sr-events-value", testkit.Schema{SchemaType: "PROTOBUF", Schema: "syntax = \"proto3\";\nmessage Event {\n  string name = 1;\n  int64 at = 2;\n}\n"}},
	}
	served := map[int]testkit.Schema{} // what the source's registry serves for each id
	for _, s := range schemas {
		id := reg.Register(t, s.subject, s.schema)
		got, err := reg.SchemaByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := served[id]; dup {
			t.Fatalf("id %d given twice", id)
		}
		served[id] = got
	}
	if len(served) != len(schemas) {
		t.Fatalf("%d ids for %d schemas", len(served), len(schemas))
	}
	t.Logf("source registry ids: %v", slices.Sorted(maps.Keys(served)))

	// The app's input: every record framed with one of the ids, over 3
	// partitions.
	adm := testkit.Admin(t, src.Addrs())
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, schemaAppInput); err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(maps.Keys(served))
	var recs []*kgo.Record
	for i := range 24 {
		recs = append(recs, &kgo.Record{Topic: schemaAppInput, Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i),
			Value: schemaFrame(ids[i%len(ids)], fmt.Sprintf("payload-%d", i))})
	}
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The registry stops before the backup, so that its topic is what the
	// backup holds, to compare with the restored one.
	reg.Stop()
	srcEnds := restorecheck.EndOffsets(t, adm, config.DefaultSchemaRegistryTopic)
	srcRegistry := restorecheck.ReadAll(t, src.Addrs(), srcEnds)[config.DefaultSchemaRegistryTopic][0]
	var kinds []string
	for _, r := range srcRegistry {
		for _, h := range r.Headers {
			if h.Key == "mt" {
				kinds = append(kinds, string(h.Value))
			}
		}
	}
	t.Logf("the registry's topic holds %d records: %v", len(srcRegistry), kinds)
	if len(srcRegistry) < len(schemas) {
		t.Fatalf("the registry's topic holds %d records for %d schemas", len(srcRegistry), len(schemas))
	}

	dst := testkit.StartKafka(t)
	cfg := filepath.Join(work, "app.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `application_id: sr-app
source:
  bootstrap_servers: [%s]
  topics:
    include: ["sr-*"]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
schema_registry: {}
`, src.Bootstrap(), dst.Bootstrap(), filepath.Join(work, "repo")), 0o644); err != nil {
		t.Fatal(err)
	}
	runbookBinary(t, work, work, "backup", "-c", cfg)
	m := latestManifest(t, filepath.Join(work, "repo"))
	var marked []string
	for _, tp := range m.Topics {
		if tp.SchemaRegistry {
			marked = append(marked, tp.Name)
		}
	}
	if !slices.Equal(marked, []string{config.DefaultSchemaRegistryTopic}) {
		t.Fatalf("topics marked schema_registry in the manifest: %v, want [_schemas]", marked)
	}
	runbookBinary(t, work, work, "restore", "-c", cfg, "--backup-id", "latest", "--yes")

	// The registry's topic, record for record, before a registry touches it.
	dadm := testkit.Admin(t, dst.Addrs())
	dstRegistry := restorecheck.ReadAll(t, dst.Addrs(), restorecheck.EndOffsets(t, dadm, config.DefaultSchemaRegistryTopic))[config.DefaultSchemaRegistryTopic][0]
	restorecheck.SameRecords(t, "restored _schemas", dstRegistry, srcRegistry, false)

	// Every id of the restored records resolves, on a registry started on
	// the target, to the schema the source's registry served for it.
	restored := restorecheck.ReadAll(t, dst.Addrs(), restorecheck.EndOffsets(t, dadm, schemaAppInput))[schemaAppInput]
	found := map[int]int{}
	n := 0
	for _, rs := range restored {
		for _, r := range rs {
			id, ok := schemaIDOf(r.Value)
			if !ok {
				t.Fatalf("restored record %s/%d@%d is not framed with a schema id: %q", schemaAppInput, r.Partition, r.Offset, r.Value)
			}
			found[id]++
			n++
		}
	}
	if n != len(recs) || len(found) != len(served) {
		t.Fatalf("restored %d records with ids %v; produced %d with ids %v", n, found, len(recs), ids)
	}
	reg2 := testkit.StartSchemaRegistry(t, dst.Bootstrap(), config.DefaultSchemaRegistryTopic)
	for id := range found {
		got, err := reg2.SchemaByID(ctx, id)
		if err != nil {
			t.Errorf("schema id %d of the restored records does not resolve on the target's registry: %v", id, err)
			continue
		}
		if got != served[id] {
			t.Errorf("schema id %d on the target's registry:\n got %+v\nwant %+v (the source's)", id, got, served[id])
		}
	}
	// A schema registered on the target gets an id of its own.
	newID := reg2.Register(t, "sr-payments-value", testkit.Schema{SchemaType: "AVRO", Schema: `{"type":"record","name":"Payment","fields":[{"name":"amount","type":"double"}]}`})
	if _, taken := served[newID]; taken {
		t.Errorf("a new schema on the target got id %d, which the restored records use for %+v", newID, served[newID])
	}
	if got, err := reg2.SchemaByID(ctx, newID); err != nil || got.Schema == "" {
		t.Errorf("the new schema's id %d: %+v, %v", newID, got, err)
	}
	t.Logf("target registry: %d ids resolved as on the source; a new schema got id %d", len(found), newID)
}

// latestManifest reads the latest complete manifest of the filesystem
// repository at dir.
func latestManifest(t *testing.T, dir string) *format.Manifest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
