package restorer

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
)

// manyOffsets builds a group plan of n partitions (topics of 100
// partitions each, created on kf), each with an offset map of a few runs
// (compaction holes) and a committed offset inside it.
func manyOffsets(tb testing.TB, kf *testkit.Kfake, adm *kadm.Client, n int) (*GroupPlan, []PartitionReport) {
	tb.Helper()
	g := &GroupPlan{GroupID: "app"}
	var reports []PartitionReport
	for t := range (n + 99) / 100 {
		topic := fmt.Sprintf("app-store-%02d-changelog", t)
		if _, err := adm.CreateTopic(tb.Context(), 100, 1, nil, topic); err != nil {
			tb.Fatal(err)
		}
		for p := range int32(min(100, n-100*t)) {
			m := &offsets.Map{}
			for k := range int64(50) {
				if err := m.Add(3*k, k); err != nil { // every third original offset survived
					tb.Fatal(err)
				}
			}
			reports = append(reports, PartitionReport{Topic: topic, Partition: p, Map: m})
			g.Offsets = append(g.Offsets, OffsetPlan{Topic: topic, Partition: p, Committed: 61, Translated: 21, Current: -1, Action: format.OffsetCommit})
		}
	}
	return g, reports
}

// TestCommitOffsetsOfManyPartitionsInOneRequest: the offsets of 1,000
// partitions of a group are committed with one OffsetCommit and read back
// with one OffsetFetch, not a round trip per partition or topic, and
// every one is committed as translated.
func TestCommitOffsetsOfManyPartitionsInOneRequest(t *testing.T) {
	kf := testkit.StartKfake(t, 3)
	adm := kadm.NewClient(testkit.Client(t, kf.Addrs()))
	g, reports := manyOffsets(t, kf, adm, 1000)
	var commits, fetches atomic.Int32
	kf.ControlKey(kmsg.OffsetCommit.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		commits.Add(1)
		return nil, nil, false
	})
	kf.ControlKey(kmsg.OffsetFetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		fetches.Add(1)
		return nil, nil, false
	})
	r := &restore{o: Options{Strategy: StrategyChangelog}, adm: adm}
	committed, warnings, err := r.commitOffsets(t.Context(), g, reports)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 || len(committed) != 1000 {
		t.Fatalf("%d offsets committed, warnings %q: want 1000, none", len(committed), warnings)
	}
	if c, f := commits.Load(), fetches.Load(); c != 1 || f != 1 {
		t.Errorf("%d OffsetCommit and %d OffsetFetch requests for 1,000 partitions: want 1 and 1", c, f)
	}
	got, err := adm.FetchOffsets(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	got.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At == 21 {
			n++
		}
	})
	if n != 1000 {
		t.Errorf("%d partitions of group app at offset 21 on the target, want 1000", n)
	}
}

// BenchmarkCommitOffsets1000: translate, commit and read back the offsets
// of 1,000 partitions (issue 13: under 2 s) on a 3-broker kfake.
func BenchmarkCommitOffsets1000(b *testing.B) {
	kf := testkit.StartKfake(b, 3)
	adm := kadm.NewClient(testkit.Client(b, kf.Addrs()))
	g, reports := manyOffsets(b, kf, adm, 1000)
	r := &restore{o: Options{Strategy: StrategyChangelog}, adm: adm}
	for b.Loop() {
		if _, _, err := r.commitOffsets(b.Context(), g, reports); err != nil {
			b.Fatal(err)
		}
	}
}
