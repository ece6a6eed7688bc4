package format

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func goldenManifest() *Manifest {
	v := func(s string) *string { return &s }
	t0 := time.Date(2026, 11, 29, 7, 45, 12, 0, time.UTC)
	id := "20261129T074512.345Z-9f3a01bc"
	return &Manifest{
		Format: FormatName, FormatVersion: 1, State: StateComplete, BackupID: id,
		ParentBackupID: "20261128T074512.000Z-00c0ffee", SourceClusterID: "production", KafkaClusterID: "kfake",
		ApplicationID: "order-processor", ToolVersion: "v1.0.0",
		StartedAt: t0, CutAt: t0.Add(time.Second), FinishedAt: t0.Add(time.Minute),
		Group: &Group{GroupID: "order-processor", State: "Empty", Type: "classic", Protocol: "consumer", ReadAt: t0,
			Offsets: []GroupOffset{{Topic: "orders", Partition: 0, Offset: 6, LeaderEpoch: -1, Class: "external"}}},
		Topics: []Topic{{
			Name: "order-processor-store-changelog", TopicID: "rZ7n1Fq7QZ2-ZyfE6m1H3A", Class: "changelog",
			Partitions: 1, ReplicationFactor: 3,
			Configs: map[string]TopicConfig{"cleanup.policy": {Value: v("compact"), Source: "DYNAMIC_TOPIC_CONFIG"}},
			PartitionCuts: []Partition{{Partition: 0, LogStartOffset: 0, HighWatermark: 6, StartOffset: 0, EndOffset: 6, Records: 2,
				Segments: []Segment{{Key: SegmentKey(id, "order-processor-store-changelog", 0, 0), BackupID: id, Size: 120,
					SHA256: strings.Repeat("ab", 32), RawSize: 150, Records: 2, FirstOffset: 0, LastOffset: 4,
					MinTimestamp: 1, MaxTimestamp: 2, MaxRecordBytes: 12}}}},
		}},
	}
}

func TestManifestGolden(t *testing.T) {
	b, err := goldenManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "manifest-v1.golden.json")
	if *update {
		os.WriteFile(path, b, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("manifest encoding changed (docs/FORMAT.md is the contract):\n%s", b)
	}
	m, err := ReadManifest(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if m.Topics[0].PartitionCuts[0].Segments[0].Key != "segments/20261129T074512.345Z-9f3a01bc/order-processor-store-changelog/0/00000000000000000000.kseg" {
		t.Fatalf("segment key layout: %s", m.Topics[0].PartitionCuts[0].Segments[0].Key)
	}
}

func TestManifestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Manifest)
	}{
		{"newer format version", func(m *Manifest) { m.FormatVersion = VersionBatch + 1 }},
		{"segment of an unknown kind", func(m *Manifest) { m.Topics[0].PartitionCuts[0].Segments[0].Kind = "columnar" }},
		{"batch segment in a version 1 manifest", func(m *Manifest) { m.Topics[0].PartitionCuts[0].Segments[0].Kind = KindBatch }},
		{"other format", func(m *Manifest) { m.Format = "x" }},
		{"bad backup id", func(m *Manifest) { m.BackupID = "../x" }},
		{"records do not add up", func(m *Manifest) { m.Topics[0].PartitionCuts[0].Records = 3 }},
		{"segment past end", func(m *Manifest) { m.Topics[0].PartitionCuts[0].EndOffset = 4 }},
		{"overlapping segments", func(m *Manifest) {
			p := &m.Topics[0].PartitionCuts[0]
			p.Segments = append(p.Segments, p.Segments[0])
			p.Records = 4
		}},
		// A second new user's edits (issue 11): each passed verify --deep,
		// and a duplicated in-flight topic made a restore write its tail
		// twice into the target.
		{"in-flight topic listed twice", func(m *Manifest) { m.InFlight = append(m.InFlight, inFlightTopic(), inFlightTopic()) }},
		{"in-flight topic named as a backed-up topic", func(m *Manifest) {
			t := inFlightTopic()
			t.Name = m.Topics[0].Name
			m.InFlight = append(m.InFlight, t)
		}},
		{"topic listed twice", func(m *Manifest) { m.Topics = append(m.Topics, m.Topics[0]) }},
		{"in-flight topic of class changelog", func(m *Manifest) {
			t := inFlightTopic()
			t.Class = "changelog"
			m.InFlight = append(m.InFlight, t)
		}},
		{"backed-up topic of class repartition", func(m *Manifest) { m.Topics[0].Class = "repartition" }},
		{"negative start offset", func(m *Manifest) {
			t := inFlightTopic()
			t.PartitionCuts[0].StartOffset = -7
			m.InFlight = append(m.InFlight, t)
		}},
		{"start offset past end offset", func(m *Manifest) {
			t := inFlightTopic()
			t.PartitionCuts[0].StartOffset = 9
			m.InFlight = append(m.InFlight, t)
		}},
		{"partition listed twice", func(m *Manifest) {
			t := inFlightTopic()
			t.PartitionCuts = append(t.PartitionCuts, t.PartitionCuts[0])
			m.InFlight = append(m.InFlight, t)
		}},
		{"schema_registry topic of class changelog", func(m *Manifest) { m.Topics[0].SchemaRegistry = true }},
		{"two schema_registry topics", func(m *Manifest) { m.Topics = append(m.Topics, registryTopic("_schemas"), registryTopic("_schemas2")) }},
		{"in-flight topic marked schema_registry", func(m *Manifest) {
			t := inFlightTopic()
			t.SchemaRegistry = true
			m.InFlight = append(m.InFlight, t)
		}},
		// Second new-user pass: group.type "bogus" was accepted, and a
		// restore judged the group by a type the broker never reports.
		{"group type not classic, consumer, streams or share", func(m *Manifest) { m.Group.Type = "bogus" }},
		{"partition beyond the partition count", func(m *Manifest) {
			t := inFlightTopic()
			t.PartitionCuts[0].Partition = 1
			m.InFlight = append(m.InFlight, t)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := goldenManifest()
			tc.mutate(m)
			if err := m.Validate(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if err := goldenManifest().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"", GroupTypeClassic, GroupTypeConsumer, GroupTypeStreams, GroupTypeShare} {
		m := goldenManifest()
		m.Group.Type = typ
		if err := m.Validate(); err != nil {
			t.Errorf("group type %q: %v", typ, err)
		}
	}
	bogus := goldenManifest()
	bogus.Group.Type = "bogus"
	if err := bogus.Validate(); err == nil || !strings.Contains(err.Error(), "group.type") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("group type bogus: %v, want an error naming group.type and the value", err)
	}
	m := goldenManifest()
	m.InFlight = []Topic{inFlightTopic()}
	if err := m.Validate(); err != nil {
		t.Fatalf("a manifest with one in-flight tail: %v", err)
	}
	m.Topics = append(m.Topics, registryTopic("_schemas"))
	if err := m.Validate(); err != nil {
		t.Fatalf("a manifest with a schema registry topic: %v", err)
	}
}

// registryTopic is a Schema Registry storage topic with no records.
func registryTopic(name string) Topic {
	return Topic{Name: name, Class: "external", SchemaRegistry: true, Partitions: 1, ReplicationFactor: 1,
		PartitionCuts: []Partition{{Partition: 0}}}
}

// inFlightTopic is an in-flight tail of one empty partition, from the
// group's committed offset 2 to the cut's end 5.
func inFlightTopic() Topic {
	return Topic{Name: "order-processor-by-key-repartition", Class: "repartition", Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]TopicConfig{}, PartitionCuts: []Partition{{Partition: 0, HighWatermark: 5, StartOffset: 2, EndOffset: 5, Segments: []Segment{}}}}
}

func TestNextBackupIDSortsAfterLatest(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 4, 57, 123456789, time.UTC)
	var rnd [4]byte
	tests := []struct {
		name, latest, want string
	}{
		{"empty repository", "", "20261129T080457.123Z-00000000"},
		{"older latest", "20261129T080457.122Z-ffffffff", "20261129T080457.123Z-00000000"},
		{"same millisecond", "20261129T080457.123Z-ffffffff", "20261129T080457.124Z-00000000"},
		{"latest in the future (clock went back)", "20261129T090000.000Z-aaaaaaaa", "20261129T090000.001Z-00000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextBackupID(now, tc.latest, rnd)
			if got != tc.want || !ValidBackupID(got) {
				t.Fatalf("NextBackupID(%q) = %q, want %q", tc.latest, got, tc.want)
			}
			if tc.latest != "" && got <= tc.latest {
				t.Fatalf("%q does not sort after %q", got, tc.latest)
			}
		})
	}
}

// TestReadManifestTypeErrorInWords: a manifest whose cut.proven is the
// string "yes" was reported as `json: cannot unmarshal string into Go
// struct field Cut.cut.proven of type bool` (second new-user pass).
func TestReadManifestTypeErrorInWords(t *testing.T) {
	b, err := goldenManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"format_version": 1`), []byte(`"format_version": 1, "cut": {"method": "offsets-ends-offsets", "proven": "yes"}`), 1)
	_, err = ReadManifest(bytes.NewReader(b))
	if err == nil || strings.Contains(err.Error(), "Go struct") || !strings.Contains(err.Error(), `field "cut.proven" holds a string, where the format wants a bool`) {
		t.Fatalf("ReadManifest: %v; want the field and the types in words", err)
	}
}

// TestManifestWithBatchSegmentsIsVersion2: a manifest naming a batch
// segment is written as format_version 2, so that an older reader refuses
// it as newer; one of record segments only stays at 1.
func TestManifestWithBatchSegmentsIsVersion2(t *testing.T) {
	m := goldenManifest()
	if _, err := m.Marshal(); err != nil || m.FormatVersion != Version {
		t.Fatalf("record segments only: format_version %d, %v", m.FormatVersion, err)
	}
	m.Topics[0].PartitionCuts[0].Segments[0].Kind = KindBatch
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if m.FormatVersion != VersionBatch || !bytes.Contains(b, []byte(`"format_version": 2`)) || !bytes.Contains(b, []byte(`"kind": "batch"`)) {
		t.Fatalf("format_version %d:\n%s", m.FormatVersion, b)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactManifestWithBatchSegmentsIsVersion2 is a regression test:
// MarshalCompact (the progress manifest's encoding) left format_version at
// 1 with batch segments named, so ReadManifest refused the progress of a
// batch backup ("has kind batch in a manifest of format_version 1") and a
// killed batch backup could not resume.
func TestCompactManifestWithBatchSegmentsIsVersion2(t *testing.T) {
	m := goldenManifest()
	m.Topics[0].PartitionCuts[0].Segments[0].Kind = KindBatch
	b, err := m.MarshalCompact()
	if err != nil {
		t.Fatal(err)
	}
	if m.FormatVersion != VersionBatch || !bytes.Contains(b, []byte(`"format_version":2`)) {
		t.Fatalf("format_version %d:\n%s", m.FormatVersion, b)
	}
	got, err := ReadManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("ReadManifest of the compact encoding: %v", err)
	}
	if got.FormatVersion != VersionBatch || got.Topics[0].PartitionCuts[0].Segments[0].Kind != KindBatch {
		t.Fatalf("read back format_version %d, kind %q", got.FormatVersion, got.Topics[0].PartitionCuts[0].Segments[0].Kind)
	}
}

// Differences names each differing setting by its config key, both
// values, and nothing for equal selections (a shard's mismatch said
// "(none) vs (none)" when only the include differed).
func TestSelectionDifferences(t *testing.T) {
	a := &Selection{Include: []string{"orders"}, Exclude: []string{"x"}, TopologyFrom: "topology file t.txt", TopologySHA256: "aabbccddeeff0011"}
	if d := a.Differences(a); len(d) != 0 {
		t.Fatalf("equal selections differ in %q", d)
	}
	b := &Selection{Include: []string{"orders", "more-*"}, Exclude: []string{"x"}, AllowMissing: true, SchemaRegistryTopic: "_schemas"}
	want := []string{
		`source.topics.include ["orders"] vs ["orders" "more-*"]`,
		`source.topics.allow_missing false vs true`,
		`topology topology file t.txt (sha256 aabbccddeeff) vs (none)`,
		`schema_registry.topic (none) vs _schemas`,
	}
	if d := a.Differences(b); !slices.Equal(d, want) {
		t.Fatalf("differences\n%q\nwant\n%q", d, want)
	}
	if d := (*Selection)(nil).Differences(&Selection{}); len(d) != 0 {
		t.Fatalf("nil vs empty: %q", d)
	}
}
