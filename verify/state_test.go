package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

func TestStoreName(t *testing.T) {
	for _, tc := range []struct {
		app, topic string
		source     bool
		want       string
	}{
		{"order-processor", "order-processor-order-totals-store-changelog", false, "order-totals-store"},
		{"app", "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog", false, "KSTREAM-AGGREGATE-STATE-STORE-0000000003"},
		{"app", "customers", true, "customers"},
		{"app", "app-counts-changelog", true, "app-counts-changelog"}, // a source-topic changelog is named by its topic
		{"other", "app-counts-changelog", false, "app-counts-changelog"},
		{"", "app-counts-changelog", false, "app-counts-changelog"},
		{"app", "app--changelog", false, "app--changelog"},
	} {
		if got := verify.StoreName(tc.app, tc.topic, tc.source); got != tc.want {
			t.Errorf("StoreName(%q, %q, %v) = %q, want %q", tc.app, tc.topic, tc.source, got, tc.want)
		}
	}
}

func statesBy(res *verify.Result) map[string]string {
	out := map[string]string{}
	for _, s := range verify.Stores(res.States) {
		out[s.Store] = s.Result
	}
	return out
}

// TestAgainstClusterReportsEachStoresState: against a restored cluster,
// every changelog partition's state digest is compared and summed up per
// store; one altered changelog record (same key, another value) makes
// that store "different" (a problem), while a record that rewrites a
// key's latest value leaves the state equal (only the records differ).
func TestAgainstClusterReportsEachStoresState(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	if _, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store}); err != nil {
		t.Fatal(err)
	}
	res, err := verify.AgainstCluster(ctx, store, m, target, nil, nil)
	if err != nil || !res.OK() {
		t.Fatalf("restored cluster: %v %v", err, res.Problems)
	}
	want := map[string]string{"order-totals-store": "equal", sample.Customers: "equal"}
	if got := statesBy(res); len(res.States) != 4 || len(got) != 2 || got["order-totals-store"] != "equal" || got[sample.Customers] != "equal" {
		t.Fatalf("states %+v (per store %v), want 4 partitions, %v", res.States, got, want)
	}

	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// The latest value of cust-0 on customers' partition again: records
	// differ, the state does not.
	recs := backupcheck.Records(t, store, m, sample.Customers, 0)
	last := recs[len(recs)-1]
	// One altered record of the changelog: cust-1's total changes.
	for _, r := range []*kgo.Record{
		{Topic: sample.Customers, Partition: 0, Key: last.Key, Value: last.Value},
		{Topic: sample.Changelog, Partition: 0, Key: []byte("cust-1"), Value: []byte("total-altered")},
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res, err = verify.AgainstCluster(ctx, store, m, target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := statesBy(res); got["order-totals-store"] != format.StateDigestDifferent || got[sample.Customers] != format.StateDigestEqual {
		t.Fatalf("per store %v, want order-totals-store different and customers equal", got)
	}
	var stateProblem bool
	for _, p := range res.Problems {
		stateProblem = stateProblem || (p.Topic == sample.Changelog && p.Partition == 0 && strings.Contains(p.Message, `state differs: store "order-totals-store"`))
	}
	if !stateProblem || res.OK() {
		t.Fatalf("problems %v: want the changelog's partition 0 state named", res.Problems)
	}
	for _, s := range verify.Stores(res.States) {
		if s.Store == "order-totals-store" && (len(s.Different) != 1 || s.Different[0] != 0) {
			t.Fatalf("order-totals-store differs in partitions %v, want [0]", s.Different)
		}
	}
}

// TestAgainstClusterWithoutDigestsSaysNotRecorded: a manifest with no
// state digests (written before they existed) is "not recorded", never
// "equal".
func TestAgainstClusterWithoutDigestsSaysNotRecorded(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	if _, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store}); err != nil {
		t.Fatal(err)
	}
	for ti := range m.Topics {
		for pi := range m.Topics[ti].PartitionCuts {
			m.Topics[ti].PartitionCuts[pi].StateDigest = nil
		}
	}
	res, err := verify.AgainstCluster(ctx, store, m, target, nil, nil)
	if err != nil || !res.OK() {
		t.Fatalf("restored cluster: %v %v", err, res.Problems)
	}
	for _, st := range res.States {
		if st.Result != format.StateDigestNotRecorded || st.Backup != nil || st.Target == nil {
			t.Errorf("%s/%d: %+v, want not recorded with the target's digest", st.Topic, st.Partition, st)
		}
	}
	if len(res.States) != 4 {
		t.Fatalf("%d states, want 4", len(res.States))
	}
}

// TestStateIsEqualAfterTheTargetCompacts: the broker's log cleaner on the
// target removes superseded records of the restored changelogs (records
// then differ from the backup's), but not their state: every store stays
// equal.
func TestStateIsEqualAfterTheTargetCompacts(t *testing.T) {
	_, store, m := sampleBackup(t)
	ctx := context.Background()
	dst := testkit.StartKfake(t, 3)
	target := []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}
	if _, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store}); err != nil {
		t.Fatal(err)
	}
	// kfake never cleans a partition's last batch: the latest record of
	// each partition written again, in a batch of its own (the state does
	// not change), makes the restored batch cleanable.
	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, topic := range []string{sample.Changelog, sample.Customers} {
		for p := range int32(2) {
			recs := backupcheck.Records(t, store, m, topic, p)
			last := recs[len(recs)-1]
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: last.Key, Value: last.Value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	dst.Compact()
	res, err := verify.AgainstCluster(ctx, store, m, target, []string{sample.Changelog, sample.Customers}, nil)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, topic := range []string{sample.Changelog, sample.Customers} {
		for p := range int32(2) {
			got, err := sample.ReadCommitted(ctx, dst.Addrs(), topic, map[int32]int64{p: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			removed += len(backupcheck.Records(t, store, m, topic, p)) + 1 - len(got)
		}
	}
	if removed <= 0 || res.OK() {
		t.Fatalf("compaction on the target removed %d records (problems %v): the test shows nothing", removed, res.Problems)
	}
	t.Logf("compaction removed %d records of the restored changelogs", removed)
	for _, st := range res.States {
		if st.Result != format.StateDigestEqual {
			t.Errorf("%s/%d after compaction: %q (target %+v, backup %+v), want equal", st.Topic, st.Partition, st.Result, st.Target, st.Backup)
		}
	}
	if len(res.States) != 4 {
		t.Fatalf("%d states, want 4", len(res.States))
	}
}
