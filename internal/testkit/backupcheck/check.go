// Package backupcheck holds the test assertions that compare a backup
// repository with the cluster it was taken from: every segment's size and
// SHA-256 against the manifest, and every record, field for field, against
// an independent read_committed consumer.
package backupcheck

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Latest loads the manifest of backupID.
func Latest(t testing.TB, store storage.Backend, backupID string) *format.Manifest {
	t.Helper()
	m, err := repository.LoadManifest(context.Background(), store, format.ManifestKey(backupID))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Records decodes every segment the manifest names for topic and partition
// with the repository's verified reader (repository.ReadPartition: each
// segment's header, size, SHA-256, record count and offsets against the
// manifest) and fails the test on any damage or read error.
func Records(t testing.TB, store storage.Backend, m *format.Manifest, topic string, partition int32) []format.Record {
	t.Helper()
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		if tp.Name != topic {
			continue
		}
		for i := range tp.PartitionCuts {
			p := &tp.PartitionCuts[i]
			if p.Partition != partition {
				continue
			}
			var out []format.Record
			if err := repository.ReadPartition(context.Background(), store, topic, p, -1, func(r *format.Record) error {
				out = append(out, *r)
				return nil
			}); err != nil {
				t.Fatalf("backup %s: %v", m.BackupID, err)
			}
			return out
		}
	}
	t.Fatalf("manifest %s has no topic %q partition %d", m.BackupID, topic, partition)
	return nil
}

// Topic returns the manifest's entry for name, or nil.
func Topic(m *format.Manifest, name string) *format.Topic {
	for i := range m.Topics {
		if m.Topics[i].Name == name {
			return &m.Topics[i]
		}
	}
	return nil
}

// InFlight returns the manifest's in-flight tail of name, or nil.
func InFlight(m *format.Manifest, name string) *format.Topic {
	for i := range m.InFlight {
		if m.InFlight[i].Name == name {
			return &m.InFlight[i]
		}
	}
	return nil
}

// MatchesCluster asserts that every topic and partition of the manifest
// holds exactly the committed records an independent consumer reads below
// the partition's end offset, field for field, and that the manifest's
// record counts agree; and that every in-flight tail (Manifest.InFlight)
// holds exactly the committed records in [start_offset, end_offset).
func MatchesCluster(t testing.TB, store storage.Backend, m *format.Manifest, seeds []string) {
	t.Helper()
	for _, tp := range m.InFlight {
		if tp.Class != "repartition" {
			t.Errorf("in-flight topic %q has class %q, want repartition", tp.Name, tp.Class)
		}
		if len(tp.PartitionCuts) != tp.Partitions {
			t.Errorf("in-flight topic %q: %d partition cuts for %d partitions", tp.Name, len(tp.PartitionCuts), tp.Partitions)
		}
		ends := map[int32]int64{}
		for _, p := range tp.PartitionCuts {
			ends[p.Partition] = p.EndOffset
		}
		want, err := sample.ReadCommitted(context.Background(), seeds, tp.Name, ends)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tp.PartitionCuts {
			var exp []format.Record
			for _, r := range want {
				if r.Partition == p.Partition && r.Offset >= p.StartOffset {
					exp = append(exp, r)
				}
			}
			got := Records(t, store, m, tp.Name, p.Partition)
			if !reflect.DeepEqual(normalize(got), normalize(exp)) {
				t.Errorf("in-flight topic %q partition %d: the backup holds %d records, the cluster %d committed records in [%d, %d)\n got: %s\nwant: %s",
					tp.Name, p.Partition, len(got), len(exp), p.StartOffset, p.EndOffset, summary(got), summary(exp))
			}
			if p.Records != int64(len(got)) {
				t.Errorf("in-flight topic %q partition %d: manifest records %d, segments hold %d", tp.Name, p.Partition, p.Records, len(got))
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var names []string
	for _, tp := range m.Topics {
		names = append(names, tp.Name)
	}
	listed, err := kadm.NewClient(cl).ListStartOffsets(context.Background(), names...)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if starts[o.Topic] == nil {
			starts[o.Topic] = map[int32]int64{}
		}
		starts[o.Topic][o.Partition] = o.Offset
	})
	for _, tp := range m.Topics {
		ends := map[int32]int64{}
		for _, p := range tp.PartitionCuts {
			ends[p.Partition] = p.EndOffset
		}
		want, err := sample.ReadCommitted(context.Background(), seeds, tp.Name, ends)
		if err != nil {
			t.Fatal(err)
		}
		byPart := map[int32][]format.Record{}
		for _, r := range want {
			byPart[r.Partition] = append(byPart[r.Partition], r)
		}
		for _, p := range tp.PartitionCuts {
			all := Records(t, store, m, tp.Name, p.Partition)
			exp := byPart[p.Partition]
			// The oracle reads from today's log start: records the broker
			// has deleted since an earlier backup took them are compared
			// only through the counts.
			var got []format.Record
			for _, r := range all {
				if r.Offset >= starts[tp.Name][p.Partition] {
					got = append(got, r)
				}
			}
			if !reflect.DeepEqual(normalize(got), normalize(exp)) {
				t.Errorf("topic %q partition %d: backup holds %d records, the cluster %d committed records below %d\n got: %s\nwant: %s",
					tp.Name, p.Partition, len(got), len(exp), p.EndOffset, summary(got), summary(exp))
			}
			if p.Records != int64(len(all)) {
				t.Errorf("topic %q partition %d: manifest records %d, segments hold %d", tp.Name, p.Partition, p.Records, len(all))
			}
			checkStateDigest(t, m, &tp, &p, all)
		}
	}
}

// checkStateDigest asserts that a complete manifest records, for every
// partition of a changelog (class changelog, or a source-topic
// changelog), the state digest of the records its chain holds (all, gaps
// and an unread range left out, as docs/FORMAT.md says), and none for
// other topics.
func checkStateDigest(t testing.TB, m *format.Manifest, tp *format.Topic, p *format.Partition, all []format.Record) {
	t.Helper()
	if tp.Class != "changelog" && !tp.SourceChangelog {
		if p.StateDigest != nil {
			t.Errorf("topic %q partition %d (class %s): state digest %+v, want none", tp.Name, p.Partition, tp.Class, p.StateDigest)
		}
		return
	}
	if m.State != format.StateComplete {
		return
	}
	d := statedigest.New()
	for _, r := range all {
		d.Add(r.Key, r.Value)
	}
	if want := d.Sum(); p.StateDigest == nil || *p.StateDigest != want {
		t.Errorf("topic %q partition %d: manifest's state digest %+v, the chain's records have %+v", tp.Name, p.Partition, p.StateDigest, want)
	}
}

// normalize makes nil and empty header lists compare equal (a record has no
// headers either way); keys, values and header values keep nil vs empty.
func normalize(rs []format.Record) []format.Record {
	out := make([]format.Record, len(rs))
	for i, r := range rs {
		if len(r.Headers) == 0 {
			r.Headers = nil
		}
		out[i] = r
	}
	return out
}

func summary(rs []format.Record) string {
	var b bytes.Buffer
	for i, r := range rs {
		if i == 12 {
			fmt.Fprintf(&b, "... (%d more)", len(rs)-i)
			break
		}
		fmt.Fprintf(&b, "[%d k=%q v=%q h=%d] ", r.Offset, r.Key, r.Value, len(r.Headers))
	}
	return b.String()
}

// SampleManifest asserts what the manifest must say about the sample
// application (docs/DOMAIN.md field cases 01 broker-internal topics, 03
// internal topics, 04 source-topic changelogs, 07 empty partitions, 08
// topic configs, 14 transactions).
func SampleManifest(t testing.TB, m *format.Manifest) {
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
	cust := Topic(m, sample.Customers)
	if cust.Class != "changelog" || !cust.SourceChangelog {
		t.Errorf("customers: class %q source_changelog %v; want a source-topic changelog (field case 04)", cust.Class, cust.SourceChangelog)
	}
	for _, p := range cust.PartitionCuts {
		if p.Records >= p.EndOffset-p.StartOffset {
			t.Errorf("customers partition %d: %d records in [%d, %d): the compacted topic should have holes", p.Partition, p.Records, p.StartOffset, p.EndOffset)
		}
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
	if tp := Topic(m, sample.Totals); tp.Partitions != 2 || tp.PartitionCuts[1].Records != 0 || len(tp.PartitionCuts[1].Segments) != 0 {
		t.Errorf("empty partition 1 of %s: %+v (field case 07, empty partitions)", sample.Totals, tp.PartitionCuts)
	}
	if tp := Topic(m, sample.Totals); *tp.Configs["max.message.bytes"].Value != "2097152" {
		t.Errorf("max.message.bytes override lost: %+v", tp.Configs["max.message.bytes"])
	}
	pay := Topic(m, sample.Payments).PartitionCuts[0]
	if pay.StartOffset != 8 || pay.LogStartOffset != 8 || pay.EndOffset != 20 || pay.Records != 12 {
		t.Errorf("payments cut %+v: want start 8, end 20, 12 records", pay)
	}
	for _, p := range Topic(m, sample.Changelog).PartitionCuts {
		// 4 transactions of 3 records per partition, one aborted, plus 4
		// markers: 16 offsets and 9 committed records, of which compaction
		// keeps at least the last value of each of the 3 keys (field case 14).
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
	// In flight (docs/DOMAIN.md#in-flight): 3 records in each repartition
	// partition, the group committed 2 on partition 0 only; 1 record in
	// the FK subscription topic, never committed.
	type tail struct{ start, end, records int64 }
	wantTails := map[string][]tail{
		sample.Repartition: {{2, 3, 1}, {0, 3, 3}, {0, 3, 3}},
		sample.FKTopic:     {{0, 1, 1}},
	}
	var inflight []string
	for _, tp := range m.InFlight {
		inflight = append(inflight, tp.Name)
		want := wantTails[tp.Name]
		if tp.Class != "repartition" || tp.Partitions != len(want) || len(tp.PartitionCuts) != len(want) {
			t.Errorf("in-flight topic %q: class %q, %d partitions, %d cuts; want repartition with %d", tp.Name, tp.Class, tp.Partitions, len(tp.PartitionCuts), len(want))
			continue
		}
		for i, p := range tp.PartitionCuts {
			if w := want[i]; p.StartOffset != w.start || p.EndOffset != w.end || p.Records != w.records {
				t.Errorf("in-flight topic %q partition %d: [%d, %d) with %d records; want [%d, %d) with %d", tp.Name, p.Partition, p.StartOffset, p.EndOffset, p.Records, w.start, w.end, w.records)
			}
		}
		for _, k := range []string{"cleanup.policy", "retention.ms"} {
			if _, ok := tp.Configs[k]; !ok {
				t.Errorf("in-flight topic %q: config %s not recorded", tp.Name, k)
			}
		}
	}
	if wantNames := []string{sample.Repartition, sample.FKTopic}; !slices.Equal(inflight, wantNames) {
		t.Errorf("in-flight topics %v, want %v", inflight, wantNames)
	}
	if n := m.InFlightRecords(); n != 8 {
		t.Errorf("records in flight %d, want 8", n)
	}
	for _, o := range m.Group.Offsets {
		// 3 records in repartition partition 0, committed 2: the tail ends at 3.
		if o.Topic == sample.Repartition && o.EndOffset != 3 {
			t.Errorf("repartition offset %+v: want end_offset 3 (the end of its in-flight tail)", o)
		}
		if o.Topic != sample.Repartition && o.EndOffset != 0 {
			t.Errorf("end_offset recorded for non-repartition topic: %+v", o)
		}
	}
	if !m.CutAt.After(m.Group.ReadAt) && !m.CutAt.Equal(m.Group.ReadAt) {
		t.Errorf("end offsets captured (%v) before group offsets (%v): see docs/DOMAIN.md#consistent-cut", m.CutAt, m.Group.ReadAt)
	}
}

// SampleRecords spot-checks the field rules with known values, in
// addition to the oracle comparison (docs/DOMAIN.md field cases 12
// tombstones, 13 headers, 14 aborted records).
func SampleRecords(t testing.TB, store storage.Backend, m *format.Manifest) {
	t.Helper()
	orders := Records(t, store, m, sample.Orders, 0)
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
	for _, r := range Records(t, store, m, sample.Changelog, 0) {
		if string(r.Value) == "total-txn1" {
			t.Errorf("aborted record at offset %d was backed up (field case 14: read_committed)", r.Offset)
		}
	}
}
