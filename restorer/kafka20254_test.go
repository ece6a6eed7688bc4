package restorer_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestKafka20254TargetRefused: a real Kafka 4.4 broker formatted with
// metadata.version 4.2-IV1 reports a 4.2 cluster's finalized
// metadata.version (feature level 29), as a Kafka 4.2.0 cluster does. The
// offsets of a backed-up streams group are refused there before the first
// write (KAFKA-20254: the commit would make a classic group that a 4.2.0
// broker can fail to load as a streams group after compaction and a
// restart), naming the fix; AllowKafka42 lets the plan through with a
// warning; a classic group's backup gets a warning only. A 4.4 target
// (metadata.version 4.4) passes with no word of it.
func TestKafka20254TargetRefused(t *testing.T) {
	t.Parallel()
	_, store, m := backedUpSample(t)
	k42 := testkit.StartKafka(t, testkit.KafkaReleaseVersion("4.2-IV1"))
	k44 := testkit.StartKafka(t)
	for _, tt := range []struct {
		name      string
		target    *testkit.Kafka
		groupType string
		allow     bool
		topics    []string
		refusal   []string
		warning   string
	}{
		{name: "streams group on 4.2 refused", target: k42, groupType: format.GroupTypeStreams,
			refusal: []string{"KAFKA-20254", "feature level 29", sample.AppID, "upgrade the target's brokers to Kafka 4.2.1 or later", "--allow-kafka-4-2"}},
		{name: "streams group on 4.2 allowed", target: k42, groupType: format.GroupTypeStreams, allow: true, warning: "as allowed (--allow-kafka-4-2)"},
		{name: "classic group on 4.2 warned", target: k42, groupType: format.GroupTypeClassic, warning: "group.protocol=streams"},
		{name: "streams group on 4.4 passes", target: k44, groupType: format.GroupTypeStreams},
		// Second new-user pass: a restore that commits no offset (only an
		// output topic, which the group never committed) was refused with
		// "0 offsets to commit": it makes no classic group.
		{name: "streams group on 4.2, no offset to commit, passes", target: k42, groupType: format.GroupTypeStreams, topics: []string{sample.Totals}, warning: "group.protocol=streams"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rewriteManifest(t, store, m, func(m *format.Manifest) { m.Group.Type = tt.groupType })
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(tt.target.Addrs()...)}, Store: store,
				ApplicationID: sample.AppID, ReplicationFactor: 1, DryRun: true, AllowKafka42: tt.allow, Topics: tt.topics})
			if tt.refusal != nil {
				re, ok := errors.AsType[*restorer.RefusedError](err)
				if !ok {
					t.Fatalf("restore into a 4.2 target: %v; want a *RefusedError", err)
				}
				for _, s := range tt.refusal {
					if !strings.Contains(re.Error(), s) {
						t.Errorf("refusal %q does not say %q", re.Error(), s)
					}
				}
				if topics := restorecheck.Topics(t, testkit.Admin(t, tt.target.Addrs())); len(topics) != 0 {
					t.Errorf("a refused restore created topics %v", topics)
				}
				return
			}
			if err != nil {
				t.Fatalf("restore --dry-run: %v", err)
			}
			said := slices.ContainsFunc(rep.Plan.Warnings, func(w string) bool { return strings.Contains(w, "KAFKA-20254") })
			if tt.warning == "" && said {
				t.Errorf("plan warnings %q speak of KAFKA-20254 on a 4.4 target", rep.Plan.Warnings)
			}
			if tt.warning != "" && !slices.ContainsFunc(rep.Plan.Warnings, func(w string) bool { return strings.Contains(w, "KAFKA-20254") && strings.Contains(w, tt.warning) }) {
				t.Errorf("plan warnings %q: want one on KAFKA-20254 saying %q", rep.Plan.Warnings, tt.warning)
			}
		})
	}
}
