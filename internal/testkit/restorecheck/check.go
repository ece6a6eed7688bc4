// Package restorecheck holds the test assertions that compare a restored
// cluster with the cluster a backup was taken from, through clients
// independent of the restorer: franz-go consumers and admin requests, and
// the parsers of Kafka's own tools' output (kafka-consumer-groups,
// kafka-streams-application-reset). Expected values are computed here from
// what the source cluster holds, never from the restorer's report.
package restorecheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
)

// Offsets is an offset per topic and partition.
type Offsets map[string]map[int32]int64

// Set stores one offset.
func (o Offsets) Set(topic string, p int32, off int64) {
	if o[topic] == nil {
		o[topic] = map[int32]int64{}
	}
	o[topic][p] = off
}

// String lists the offsets sorted, "topic/p=off".
func (o Offsets) String() string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(o)) {
		for _, p := range slices.Sorted(maps.Keys(o[t])) {
			parts = append(parts, fmt.Sprintf("%s/%d=%d", t, p, o[t][p]))
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Records are the committed records of some topics, per topic and
// partition, in offset order.
type Records map[string]map[int32][]format.Record

func ctxTimeout(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// EndOffsets lists the end offsets (high watermarks) of topics.
func EndOffsets(t testing.TB, adm *kadm.Client, topics ...string) Offsets {
	t.Helper()
	lo, err := adm.ListEndOffsets(ctxTimeout(t), topics...)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %v: %v", topics, err)
	}
	out := Offsets{}
	lo.Each(func(o kadm.ListedOffset) { out.Set(o.Topic, o.Partition, o.Offset) })
	return out
}

// StartOffsets lists the log start offsets of topics.
func StartOffsets(t testing.TB, adm *kadm.Client, topics ...string) Offsets {
	t.Helper()
	lo, err := adm.ListStartOffsets(ctxTimeout(t), topics...)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets of %v: %v", topics, err)
	}
	out := Offsets{}
	lo.Each(func(o kadm.ListedOffset) { out.Set(o.Topic, o.Partition, o.Offset) })
	return out
}

// GroupOffsets fetches a group's committed offsets (OffsetFetch through the
// group coordinator). A group without offsets, or that does not exist
// (GROUP_ID_NOT_FOUND, as kfake answers), gives an empty map.
func GroupOffsets(t testing.TB, adm *kadm.Client, group string) Offsets {
	t.Helper()
	resp, err := adm.FetchOffsets(ctxTimeout(t), group)
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return Offsets{}
	}
	if err != nil {
		t.Fatalf("fetch offsets of group %q: %v", group, err)
	}
	out := Offsets{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			out.Set(o.Topic, o.Partition, o.At)
		}
	})
	return out
}

// Topics lists the cluster's topics (broker-internal "__" topics left out)
// with their partition counts.
func Topics(t testing.TB, adm *kadm.Client) map[string]int {
	t.Helper()
	td, err := adm.ListTopics(ctxTimeout(t))
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	out := map[string]int{}
	for name, d := range td {
		if strings.HasPrefix(name, "__") || d.IsInternal {
			continue
		}
		if d.Err != nil {
			t.Fatalf("topic %q: %v", name, d.Err)
		}
		out[name] = len(d.Partitions)
	}
	return out
}

// ReplicationFactors returns each topic's number of replicas of partition 0.
func ReplicationFactors(t testing.TB, adm *kadm.Client, topics ...string) map[string]int {
	t.Helper()
	td, err := adm.ListTopics(ctxTimeout(t), topics...)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	out := map[string]int{}
	for name, d := range td {
		if p, ok := d.Partitions[0]; ok {
			out[name] = len(p.Replicas)
		}
	}
	return out
}

// Config is one topic config entry as DescribeConfigs reports it.
type Config struct {
	Value  *string
	Source string // e.g. DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG
}

// TopicConfigs describes the configs of topics.
func TopicConfigs(t testing.TB, adm *kadm.Client, topics ...string) map[string]map[string]Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxTimeout(t), topics...)
	if err != nil {
		t.Fatalf("describe configs of %v: %v", topics, err)
	}
	out := map[string]map[string]Config{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of %q: %v", rc.Name, rc.Err)
		}
		cs := map[string]Config{}
		for _, c := range rc.Configs {
			cs[c.Key] = Config{Value: c.Value, Source: c.Source.String()}
		}
		out[rc.Name] = cs
	}
	return out
}

// SameConfigValue compares two config values; cleanup.policy compares as a
// set ("compact,delete" equals "delete,compact").
func SameConfigValue(key string, a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	if key != "cleanup.policy" {
		return *a == *b
	}
	split := func(s string) []string {
		var out []string
		for _, x := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(x))
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(split(*a), split(*b))
}

// ReadAll reads the committed records of every topic below ends with
// sample.ReadCommitted (franz-go, read_committed), one reader per topic at
// once, and returns them per topic and partition.
func ReadAll(t testing.TB, seeds []string, ends Offsets) Records {
	t.Helper()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	out := Records{}
	for topic, e := range ends {
		out[topic] = map[int32][]format.Record{}
		for p := range e {
			out[topic][p] = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs, err := sample.ReadCommitted(context.Background(), seeds, topic, e)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("read %q: %w", topic, err))
				return
			}
			for _, r := range recs {
				out[topic][r.Partition] = append(out[topic][r.Partition], r)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	for _, parts := range out {
		for _, recs := range parts {
			sort.SliceStable(recs, func(i, j int) bool { return recs[i].Offset < recs[j].Offset })
		}
	}
	return out
}

// Translate is the offset translation rule of
// docs/DOMAIN.md#offset-translation, computed from
// the records themselves: src are the source partition's committed records
// and dst the restored partition's, the k-th of dst being the k-th of src
// restored. The committed offset maps to the new offset of the first
// restored record whose original offset is >= committed, else to dstEnd.
func Translate(src []format.Record, committed int64, dst []format.Record, dstEnd int64) int64 {
	i := sort.Search(len(src), func(i int) bool { return src[i].Offset >= committed })
	if i >= len(src) || i >= len(dst) {
		return dstEnd
	}
	return dst[i].Offset
}

// FirstAtOrAfter returns the first record of src whose offset is >=
// committed, and false when there is none.
func FirstAtOrAfter(src []format.Record, committed int64) (format.Record, bool) {
	i := sort.Search(len(src), func(i int) bool { return src[i].Offset >= committed })
	if i >= len(src) {
		return format.Record{}, false
	}
	return src[i], true
}

// Prefix returns the records of src before the first one whose timestamp is
// after limit (milliseconds), and that record's offset, or -1 when every
// record is at or before limit: the point-in-time cut of docs/DOMAIN.md#pitr.
func Prefix(src []format.Record, limit int64) ([]format.Record, int64) {
	for i, r := range src {
		if r.Timestamp > limit {
			return src[:i], r.Offset
		}
	}
	return src, -1
}

// SameRecords reports, as test errors, every difference between restored
// records got and source records want, field for field, except the offset
// (a restore renumbers): key and value (nil is not empty), headers (order,
// duplicates, nil values), timestamp and timestamp type. With logAppend the
// source topic has message.timestamp.type=LogAppendTime: the restore
// produces the original append times as CreateTime timestamps before it
// switches the topic to LogAppendTime, so the restored records must carry
// the same timestamps with type CreateTime.
func SameRecords(t testing.TB, what string, got, want []format.Record, logAppend bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d records restored, the source has %d\n got: %s\nwant: %s", what, len(got), len(want), Summary(got), Summary(want))
		return
	}
	for i := range want {
		g, w := normalize(got[i]), normalize(want[i])
		if logAppend {
			w.TimestampType = format.CreateTime
		}
		g.Offset, w.Offset = 0, 0
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: record %d (source offset %d, restored at %d) differs:\n got: %s\nwant: %s", what, i, want[i].Offset, got[i].Offset, Describe(got[i]), Describe(want[i]))
			return
		}
		if i > 0 && got[i].Offset <= got[i-1].Offset {
			t.Errorf("%s: restored offsets not increasing at record %d: %d after %d", what, i, got[i].Offset, got[i-1].Offset)
			return
		}
	}
}

func normalize(r format.Record) format.Record {
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	return r
}

// Describe prints one record with nil and empty told apart.
func Describe(r format.Record) string {
	b := func(v []byte) string {
		if v == nil {
			return "<null>"
		}
		return strconv.Quote(string(v))
	}
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, h.Key+"="+b(h.Value))
	}
	return fmt.Sprintf("p%d@%d k=%s v=%s ts=%d/%s h=[%s]", r.Partition, r.Offset, b(r.Key), b(r.Value), r.Timestamp, r.TimestampType, strings.Join(hs, " "))
}

// Summary prints the first records of rs.
func Summary(rs []format.Record) string {
	var b bytes.Buffer
	for i, r := range rs {
		if i == 8 {
			fmt.Fprintf(&b, "... (%d more)", len(rs)-i)
			break
		}
		b.WriteString(Describe(r))
		b.WriteString("; ")
	}
	return b.String()
}

// State is what a restore may change on a target cluster: its topics with
// partition counts and end offsets, and the committed offsets of a group.
type State struct {
	Topics  map[string]int
	Ends    Offsets
	Offsets Offsets
}

// Snapshot reads the State of the cluster adm talks to, for group.
func Snapshot(t testing.TB, adm *kadm.Client, group string) State {
	t.Helper()
	s := State{Topics: Topics(t, adm), Ends: Offsets{}, Offsets: GroupOffsets(t, adm, group)}
	if len(s.Topics) > 0 {
		s.Ends = EndOffsets(t, adm, slices.Sorted(maps.Keys(s.Topics))...)
	}
	return s
}

// Unchanged fails the test when the cluster's State differs from before.
func Unchanged(t testing.TB, adm *kadm.Client, group string, before State) {
	t.Helper()
	after := Snapshot(t, adm, group)
	if !reflect.DeepEqual(after.Topics, before.Topics) {
		t.Errorf("topics on the target changed: before %v, after %v", before.Topics, after.Topics)
	}
	if !reflect.DeepEqual(after.Ends, before.Ends) {
		t.Errorf("end offsets on the target changed: before %v, after %v", before.Ends, after.Ends)
	}
	if !reflect.DeepEqual(after.Offsets, before.Offsets) {
		t.Errorf("committed offsets of group %q changed: before %v, after %v", group, before.Offsets, after.Offsets)
	}
}

// ParseConsumerGroupDescribe parses the table `kafka-consumer-groups
// --describe --group G` prints (ConsumerGroupCommand):
//
//	GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID
//
// and returns the CURRENT-OFFSET column per topic and partition ("-", no
// committed offset, is left out).
func ParseConsumerGroupDescribe(out string) (Offsets, error) {
	res := Offsets{}
	cols := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] == "GROUP" {
			for i, name := range f {
				cols[name] = i
			}
			continue
		}
		if len(cols) == 0 {
			continue
		}
		ti, pi, ci := cols["TOPIC"], cols["PARTITION"], cols["CURRENT-OFFSET"]
		if len(f) <= max(ti, pi, ci) {
			return nil, fmt.Errorf("short line %q", sc.Text())
		}
		if f[ci] == "-" {
			continue
		}
		p, err := strconv.ParseInt(f[pi], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("partition in %q: %w", sc.Text(), err)
		}
		o, err := strconv.ParseInt(f[ci], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("CURRENT-OFFSET in %q: %w", sc.Text(), err)
		}
		res.Set(f[ti], int32(p), o)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no GROUP ... CURRENT-OFFSET header in:\n%s", out)
	}
	return res, nil
}

// ParseStreamsResetterInternal returns the topics `kafka-streams-application-reset
// --dry-run` (org.apache.kafka.tools.StreamsResetter) would delete as the
// application's internal topics, from its line
// "Deleting inferred internal topics [a, b, ...]", sorted.
func ParseStreamsResetterInternal(out string) ([]string, error) {
	const prefix = "Deleting inferred internal topics ["
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, "]") {
			continue
		}
		list := strings.TrimSuffix(strings.TrimPrefix(line, prefix), "]")
		var topics []string
		for _, s := range strings.Split(list, ",") {
			if s = strings.TrimSpace(s); s != "" {
				topics = append(topics, s)
			}
		}
		sort.Strings(topics)
		return topics, nil
	}
	return nil, fmt.Errorf("no %q line in:\n%s", prefix+"...]", out)
}

// InFlight asserts that the target (dst) holds every in-flight tail of m
// (Manifest.InFlight, docs/DOMAIN.md#in-flight) as the application needs
// it to go on: each repartition topic exists with the source's partition
// count, a cleanup.policy without compact and retention.ms -1 (what Kafka
// Streams' InternalTopicManager accepts of an existing repartition
// topic); and on every partition the group's committed offset on the
// target is where the restored records begin, from which the target holds
// exactly the committed records the source (src) holds from the group's
// committed offset there (srcCommitted; the log start when none, or when
// below it) up to the tail's end at the backup's cut. Expected records come
// from the source cluster, not from the backup or the restorer; read now,
// they are what was committed at the cut only if no transaction open at
// the cut has committed since (a killed producer's are aborted or fenced).
func InFlight(t testing.TB, src, dst []string, srcAdm, dstAdm *kadm.Client, group string, srcCommitted Offsets, m *format.Manifest) {
	t.Helper()
	if len(m.InFlight) == 0 {
		t.Fatalf("backup %s holds no in-flight tail", m.BackupID)
	}
	var names []string
	for _, tp := range m.InFlight {
		names = append(names, tp.Name)
	}
	parts := Topics(t, dstAdm)
	cfgs := TopicConfigs(t, dstAdm, names...)
	srcStarts := StartOffsets(t, srcAdm, names...)
	dstEnds := EndOffsets(t, dstAdm, names...)
	committed := GroupOffsets(t, dstAdm, group)
	for _, tp := range m.InFlight {
		if parts[tp.Name] != tp.Partitions {
			t.Errorf("in-flight topic %q: %d partitions on the target, the source has %d", tp.Name, parts[tp.Name], tp.Partitions)
			continue
		}
		if v := cfgs[tp.Name]["cleanup.policy"].Value; v == nil || strings.Contains(*v, "compact") {
			t.Errorf("in-flight topic %q: cleanup.policy %v on the target; Kafka Streams requires no compact for a repartition topic", tp.Name, v)
		}
		if v := cfgs[tp.Name]["retention.ms"].Value; v == nil || *v != "-1" {
			t.Errorf("in-flight topic %q: retention.ms %v on the target; Kafka Streams requires -1 for a repartition topic", tp.Name, v)
		}
		ends := map[int32]int64{}
		for _, p := range tp.PartitionCuts {
			ends[p.Partition] = p.EndOffset
		}
		srcRecs, err := sample.ReadCommitted(context.Background(), src, tp.Name, ends)
		if err != nil {
			t.Fatal(err)
		}
		dstRecs, err := sample.ReadCommitted(context.Background(), dst, tp.Name, dstEnds[tp.Name])
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tp.PartitionCuts {
			from := srcStarts[tp.Name][p.Partition]
			if c, ok := srcCommitted[tp.Name][p.Partition]; ok {
				from = max(from, c)
			}
			var want, got []format.Record
			for _, r := range srcRecs {
				if r.Partition == p.Partition && r.Offset >= from {
					want = append(want, r)
				}
			}
			for _, r := range dstRecs {
				if r.Partition == p.Partition {
					got = append(got, r)
				}
			}
			first := dstEnds[tp.Name][p.Partition]
			if len(got) > 0 {
				first = got[0].Offset
			}
			at, ok := committed[tp.Name][p.Partition]
			if !ok || at != first {
				t.Errorf("in-flight topic %q partition %d: group %q has %v (committed %v) on the target; want %d, the first restored record", tp.Name, p.Partition, group, at, ok, first)
			}
			SameRecords(t, fmt.Sprintf("in-flight topic %q partition %d", tp.Name, p.Partition), got, want, false)
		}
	}
}
