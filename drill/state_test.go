package drill_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
)

func storeResults(rep *drill.Report) map[string]string {
	out := map[string]string{}
	for _, s := range rep.States {
		out[s.Store] = s.Result
	}
	return out
}

// TestDrillReportsEachStoresState: a drill's report (JSON and JUnit) gives
// each restored store's state check.
func TestDrillReportsEachStoresState(t *testing.T) {
	source := sampleSource(t)
	o, _ := drillOptions(t, source, newStore(t))
	rep, err := drill.Run(t.Context(), o)
	if err != nil || !rep.OK {
		t.Fatalf("drill: %v %+v", err, rep)
	}
	got := storeResults(rep)
	if len(got) != 2 || got["order-totals-store"] != format.StateDigestEqual || got[sample.Customers] != format.StateDigestEqual {
		t.Fatalf("states %+v, want order-totals-store and customers equal", rep.States)
	}
	b, _ := json.Marshal(rep)
	if !strings.Contains(string(b), `"states":[{"store":"`) {
		t.Errorf("JSON has no states: %s", b)
	}
	props := parseJUnit(t, rep).props()
	if props["state.order-totals-store"] != "equal" || props["state.customers"] != "equal" {
		t.Errorf("JUnit properties %v, want state.order-totals-store and state.customers equal", props)
	}
}

// TestDrillOfAnAlteredStateDigestFailsNamingTheStore: a backup whose
// manifest records another state than its records fails the drill's
// verify-repository phase (the deep check recomputes each changelog
// partition's digest), naming the partition; with the shallow check it
// fails the restore phase, and the report names the store whose state
// differs.
func TestDrillOfAnAlteredStateDigestFailsNamingTheStore(t *testing.T) {
	source := sampleSource(t)
	store := newStore(t)
	o, _ := drillOptions(t, source, store)
	bo := o.Backup
	bo.Store = store
	res, err := backup.Run(t.Context(), bo)
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	for ti := range m.Topics {
		if m.Topics[ti].Name == sample.Changelog {
			m.Topics[ti].PartitionCuts[1].StateDigest.Digest = strings.Repeat("f", 64)
		}
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ManifestKey(m.BackupID), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	o.BackupID = res.BackupID
	rep, err := drill.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failed(); rep.OK || f == nil || f.Name != drill.PhaseVerifyRepository || len(f.Problems) != 1 ||
		!strings.Contains(f.Problems[0], `topic "`+sample.Changelog+`" partition 1: state digest`) {
		t.Fatalf("deep drill of an altered digest: ok %v, failed %+v; want verify-repository failed naming %s partition 1", rep.OK, f, sample.Changelog)
	}

	o.Shallow = true
	if rep, err = drill.Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Failed() == nil || rep.Failed().Name != drill.PhaseRestore || !strings.Contains(rep.Failed().Error, "differs from the backup's") {
		t.Fatalf("drill of an altered digest: ok %v, failed %+v; want the restore phase failed on the state", rep.OK, rep.Failed())
	}
	got := storeResults(rep)
	if got["order-totals-store"] != format.StateDigestDifferent || got[sample.Customers] != format.StateDigestEqual {
		t.Fatalf("states %+v, want order-totals-store different, customers equal", rep.States)
	}
	if props := parseJUnit(t, rep).props(); props["state.order-totals-store"] != "different" {
		t.Errorf("JUnit properties %v, want state.order-totals-store different", props)
	}
}
