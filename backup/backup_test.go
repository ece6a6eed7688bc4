package backup_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
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
	checkSampleManifest(t, m)
	backupcheck.MatchesCluster(t, store, m, kf.Addrs())
	checkSampleRecords(t, store, m)
}

// checkSampleManifest asserts what the manifest must say about the sample
// application (cases 01, 03, 04, 07, 08, 14).
func checkSampleManifest(t *testing.T, m *format.Manifest) {
	t.Helper()
	var names []string
	for _, tp := range m.Topics {
		names = append(names, tp.Name)
	}
	want := slices.Clone(sample.BackedUp)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Fatalf("backed-up topics %v, want %v (no repartition, FK-join, other-app or __ topics)", names, want)
	}
	if m.State != format.StateComplete || m.ApplicationID != sample.AppID || m.SourceClusterID != "test" {
		t.Fatalf("manifest header: %+v", m)
	}
	cust := backupcheck.Topic(m, sample.Customers)
	if cust.Class != "changelog" || !cust.SourceChangelog {
		t.Errorf("customers: class %q source_changelog %v; want a source-topic changelog (case 04)", cust.Class, cust.SourceChangelog)
	}
	if v := cust.Configs["cleanup.policy"].Value; v == nil || *v != "compact" {
		t.Errorf("customers cleanup.policy not recorded: %+v", cust.Configs)
	}
	for _, k := range []string{"cleanup.policy", "retention.ms", "min.insync.replicas", "max.message.bytes", "message.timestamp.type"} {
		for _, tp := range m.Topics {
			if _, ok := tp.Configs[k]; !ok {
				t.Errorf("topic %q: config %s not recorded", tp.Name, k)
			}
		}
	}
	if tp := backupcheck.Topic(m, sample.Totals); tp.Partitions != 2 || tp.PartitionCuts[1].Records != 0 || len(tp.PartitionCuts[1].Segments) != 0 {
		t.Errorf("empty partition 1 of %s: %+v (case 07)", sample.Totals, tp.PartitionCuts)
	}
	if tp := backupcheck.Topic(m, sample.Totals); *tp.Configs["max.message.bytes"].Value != "2097152" {
		t.Errorf("max.message.bytes override lost: %+v", tp.Configs["max.message.bytes"])
	}
	pay := backupcheck.Topic(m, sample.Payments).PartitionCuts[0]
	if pay.StartOffset != 8 || pay.LogStartOffset != 8 || pay.EndOffset != 20 || pay.Records != 12 {
		t.Errorf("payments cut %+v: want start 8, end 20, 12 records", pay)
	}
	for _, p := range backupcheck.Topic(m, sample.Changelog).PartitionCuts {
		// 4 transactions of 3 records per partition, one aborted, plus 4
		// markers: 16 offsets and 9 committed records, of which compaction
		// keeps at least the last value of each of the 3 keys (case 14).
		if p.EndOffset != 16 || p.Records < 3 || p.Records > 9 {
			t.Errorf("changelog partition %d: end %d records %d; want end 16 with 3 to 9 committed records", p.Partition, p.EndOffset, p.Records)
		}
	}
	if m.Group == nil || m.Group.GroupID != sample.AppID {
		t.Fatalf("group offsets missing: %+v", m.Group)
	}
	classes := map[string]string{}
	for _, o := range m.Group.Offsets {
		classes[o.Topic] = o.Class
	}
	if len(m.Group.Offsets) != 6 || classes[sample.Repartition] != "repartition" || classes[sample.Orders] != "external" {
		t.Errorf("group offsets %+v", m.Group.Offsets)
	}
	if !m.CutAt.After(m.Group.ReadAt) && !m.CutAt.Equal(m.Group.ReadAt) {
		t.Errorf("end offsets captured (%v) before group offsets (%v): DOMAIN.md §5", m.CutAt, m.Group.ReadAt)
	}
}

// checkSampleRecords spot-checks the field rules with known values, in
// addition to the oracle comparison (cases 12, 13, 14).
func checkSampleRecords(t *testing.T, store storage.Backend, m *format.Manifest) {
	t.Helper()
	orders := backupcheck.Records(t, store, m, sample.Orders, 0)
	var nullKey, emptyKey, emptyVal, nullVal, withHeaders int
	for _, r := range orders {
		switch {
		case r.Key == nil:
			nullKey++
		case len(r.Key) == 0:
			emptyKey++
		}
		switch {
		case r.Value == nil:
			nullVal++
		case len(r.Value) == 0:
			emptyVal++
		}
		if len(r.Headers) > 0 {
			withHeaders++
			h := r.Headers
			if len(h) != 6 || h[0].Key != "x-tag" || h[1].Key != "x-tag" || string(h[1].Value) != "tag2" ||
				h[2].Value != nil || h[3].Value == nil || len(h[3].Value) != 0 || string(h[4].Value) != "\x00\x00\x00\x03" {
				t.Errorf("headers of orders offset %d: %+v", r.Offset, h)
			}
		}
	}
	if nullKey == 0 || emptyKey == 0 || emptyVal == 0 || nullVal == 0 || withHeaders == 0 {
		t.Errorf("orders partition 0: null keys %d, empty keys %d, empty values %d, null values %d, with headers %d: every kind must appear",
			nullKey, emptyKey, emptyVal, nullVal, withHeaders)
	}
	for _, r := range backupcheck.Records(t, store, m, sample.Changelog, 0) {
		if string(r.Value) == "total-txn1" {
			t.Errorf("aborted record at offset %d was backed up (case 14)", r.Offset)
		}
	}
}
