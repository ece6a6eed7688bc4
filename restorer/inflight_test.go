package restorer_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestInFlightTailsByStrategy: what a restore does with the sample's 8
// records in flight (docs/DOMAIN.md#in-flight: 1 in repartition partition
// 0 after the group's offset, 3 in each of partitions 1 and 2, never
// committed, 1 in the FK subscription topic). The changelog strategy
// restores them (TestRestoreRoundTripOnKfake checks the records and
// offsets); --skip-in-flight leaves the topics out and counts the loss
// exactly, per topic, in the plan and the warnings; a backup written
// before in_flight existed keeps the old drop with the high-watermark
// estimate, said to be one, and without cut warns that its cut is not
// proven; --topics that leaves the tails out names --topics as the cause;
// rebuild never restores them and loses none (the application reprocesses
// them from its reset input).
func TestInFlightTailsByStrategy(t *testing.T) {
	tests := []struct {
		name      string
		strategy  restorer.Strategy
		skip      bool
		topics    []string // --topics
		old       []string // manifest fields removed, as written before they existed
		created   bool     // the internal topics are on the target
		lost      int64    // InFlight.Lost()
		estimated bool
		warning   string // in the report's warnings
		note      string // in the note of the group's offset on repartition partition 0
		noNote    string // not in that note
	}{
		{name: "changelog restores the tails", strategy: restorer.StrategyChangelog, created: true,
			note: "in-flight tail restored: 1 record from offset 2"},
		{name: "skip-in-flight counts the exact loss", strategy: restorer.StrategyChangelog, skip: true, lost: 8,
			warning: "8 records in flight in repartition topics at the backup are not restored (" + sample.Repartition + ": 7, " + sample.FKTopic + ": 1)",
			note:    "its in-flight tail is not restored (--skip-in-flight): 1 record lost"},
		{name: "topics without the tails names --topics", strategy: restorer.StrategyChangelog, lost: 8,
			topics:  sample.BackedUp,
			warning: "8 records in flight in repartition topics at the backup are not restored (" + sample.Repartition + ": 7, " + sample.FKTopic + ": 1): left out by --topics",
			note:    "its in-flight tail is not restored (not matched by --topics): 1 record lost", noNote: "--skip-in-flight"},
		{name: "a backup without in_flight keeps the estimate", strategy: restorer.StrategyChangelog, old: []string{"in_flight"}, lost: 1, estimated: true,
			warning: "about 1 record in flight in repartition topics at the backup are lost",
			note:    "1 record was in flight in it at backup time and is lost (an estimate from the high watermark"},
		{name: "a backup without cut warns its cut is not proven", strategy: restorer.StrategyChangelog, old: []string{"in_flight", "cut"}, lost: 1, estimated: true,
			warning: "cut is not proven consistent with the application's transactions (the backup predates the proven cut: its manifest has no cut)",
			note:    "1 record was in flight in it at backup time and is lost"},
		{name: "rebuild never restores them and loses none", strategy: restorer.StrategyRebuild,
			note: "repartition topic: not restored (it regenerates): nothing in flight is lost, the application reprocesses it from its reset input", noNote: "and is lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, store, m := backedUpSample(t)
			if tt.old != nil {
				oldManifest(t, store, m, tt.old...)
			}
			dst := testkit.StartKfake(t, 3)
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
				ApplicationID: sample.AppID, Strategy: tt.strategy, SkipInFlight: tt.skip, Topics: tt.topics})
			if err != nil {
				t.Fatal(err)
			}
			topics := restorecheck.Topics(t, testkit.Admin(t, dst.Addrs()))
			for _, name := range []string{sample.Repartition, sample.FKTopic} {
				if _, ok := topics[name]; ok != tt.created {
					t.Errorf("internal topic %q on the target: %v, want %v", name, ok, tt.created)
				}
			}
			if got := rep.InFlight.Lost(); got != tt.lost {
				t.Errorf("records in flight lost %d, want %d (plan %+v)", got, tt.lost, rep.InFlight)
			}
			if tt.strategy == restorer.StrategyRebuild && rep.InFlight != nil {
				t.Errorf("rebuild plan has in flight %+v, want none", rep.InFlight)
			}
			if rep.InFlight != nil && rep.InFlight.Estimated != tt.estimated {
				t.Errorf("in flight estimated %v, want %v", rep.InFlight.Estimated, tt.estimated)
			}
			warnings := strings.Join(rep.Warnings, "\n")
			if tt.warning != "" && !strings.Contains(warnings, tt.warning) {
				t.Errorf("warnings %q do not say %q", warnings, tt.warning)
			}
			if tt.warning == "" && strings.Contains(warnings, "in flight") {
				t.Errorf("warnings %q speak of a loss in flight; there is none", warnings)
			}
			var note string
			for _, op := range rep.Group.Offsets {
				if op.Topic == sample.Repartition && op.Partition == 0 {
					note = op.Note
					if want := tt.created; (op.Action == format.OffsetCommit) != want {
						t.Errorf("repartition offset %+v: committed %v, want %v", op, !want, want)
					}
				}
			}
			if !strings.Contains(note, tt.note) {
				t.Errorf("repartition partition 0 offset note %q, want it to say %q", note, tt.note)
			}
			if tt.noNote != "" && strings.Contains(note, tt.noNote) {
				t.Errorf("repartition partition 0 offset note %q says %q", note, tt.noNote)
			}
		})
	}
}

// oldManifest rewrites m's manifest in store as a manifest written before
// fields existed: its JSON without them.
func oldManifest(t *testing.T, store storage.Backend, m *format.Manifest, fields ...string) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if _, ok := raw[f]; !ok {
			t.Fatalf("manifest of backup %s has no %q to remove", m.BackupID, f)
		}
		delete(raw, f)
	}
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ManifestKey(m.BackupID), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}
