package restorer

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
)

// TestCommitOffsetsReturnsWhatItCommitted: commitOffsets commits each
// offset translated with the observed offset map, returns the offsets as
// committed with a warning for a translation the plan did not predict, and
// leaves the plan's group as preflight planned it (it changed the plan in
// place, and the report copied the plan twice to catch it).
func TestCommitOffsetsReturnsWhatItCommitted(t *testing.T) {
	ctx := context.Background()
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	r := &restore{o: Options{Strategy: StrategyChangelog}, adm: adm}
	m0, m1 := &offsets.Map{}, &offsets.Map{}
	for _, a := range [][2]int64{{10, 0}, {12, 1}, {14, 2}} {
		if err := m0.Add(a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
	m0.NewEnd = 3
	for _, a := range [][2]int64{{0, 0}, {1, 1}} {
		if err := m1.Add(a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
	m1.NewEnd = 2
	g := &GroupPlan{GroupID: "app", Offsets: []OffsetPlan{
		{Topic: "orders", Partition: 0, Committed: 13, Translated: 1, Current: -1, Action: format.OffsetCommit}, // the map says 2
		{Topic: "orders", Partition: 1, Committed: 2, Translated: 2, Current: -1, Action: format.OffsetCommit},
		{Topic: "payments", Partition: 0, Committed: 5, Translated: -1, Current: -1, Action: format.OffsetDrop},
	}}
	reports := []PartitionReport{{Topic: "orders", Partition: 0, Map: m0}, {Topic: "orders", Partition: 1, Map: m1}}
	committed, warnings, err := r.commitOffsets(ctx, g, reports)
	if err != nil {
		t.Fatal(err)
	}
	if len(committed) != 3 || committed[0].Translated != 2 || committed[1].Translated != 2 || committed[2].Translated != -1 || committed[2].Action != format.OffsetDrop {
		t.Errorf("committed %+v: want orders/0 at 2 (the map's), orders/1 at 2, payments/0 dropped", committed)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `topic "orders" partition 0: committed 13 translated to 2, the plan predicted 1`) {
		t.Errorf("warnings %q: want the one unpredicted translation", warnings)
	}
	if g.Offsets[0].Translated != 1 {
		t.Errorf("the plan's group was changed: %+v", g.Offsets[0])
	}
	got, err := adm.FetchOffsets(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		p  int32
		at int64
	}{{0, 2}, {1, 2}} {
		if o, ok := got.Lookup("orders", want.p); !ok || o.Err != nil || o.At != want.at {
			t.Errorf("group app orders/%d on the target: %+v, want %d", want.p, o, want.at)
		}
	}
	if _, ok := got.Lookup("payments", 0); ok {
		t.Error("the dropped offset was committed")
	}
}
