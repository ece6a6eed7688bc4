package verify_test

import (
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestDeepRecomputesStateDigests is a new-user fault of issue 11: verify
// --deep decodes every record, yet passed a manifest whose state_digest
// was altered. Deep now recomputes each changelog partition's state
// digest from the chain's records and names a partition whose digest
// differs from the manifest's; one without a digest (a backup written
// before them) is not damage; the quick check, which decodes nothing,
// does not judge digests.
func TestDeepRecomputesStateDigests(t *testing.T) {
	_, store, m := sampleBackup(t)
	if res, err := verify.Repository(t.Context(), store, m, true); err != nil || !res.OK() {
		t.Fatalf("intact backup: %v %v", err, res.Problems)
	}
	tests := []struct {
		name   string
		edit   func(keys *int64, digest *string) bool // false: remove the digest
		deep   bool
		damage bool
	}{
		{name: "an altered digest is damage", deep: true, damage: true,
			edit: func(_ *int64, d *string) bool { *d = strings.Repeat("0", 32); return true }},
		{name: "an altered key count is damage", deep: true, damage: true,
			edit: func(k *int64, _ *string) bool { *k++; return true }},
		{name: "no digest is not damage", deep: true,
			edit: func(*int64, *string) bool { return false }},
		{name: "the quick check does not judge digests", deep: false,
			edit: func(_ *int64, d *string) bool { *d = strings.Repeat("0", 32); return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, store, m := sampleBackup(t)
			p := &backupcheck.Topic(m, sample.Changelog).PartitionCuts[1]
			if p.StateDigest == nil {
				t.Fatalf("%s/%d has no state digest", sample.Changelog, p.Partition)
			}
			sum := *p.StateDigest
			if tt.edit(&sum.Keys, &sum.Digest) {
				p.StateDigest = &sum
			} else {
				p.StateDigest = nil
			}
			res, err := verify.Repository(t.Context(), store, m, tt.deep)
			if err != nil {
				t.Fatal(err)
			}
			var named bool
			for _, pr := range res.Problems {
				named = named || (pr.Topic == sample.Changelog && pr.Partition == 1 && pr.StateDigest && strings.Contains(pr.Message, "state digest"))
			}
			if named != tt.damage || len(res.Problems) != map[bool]int{true: 1}[tt.damage] {
				t.Errorf("problems %v: want the state digest of %s partition 1 named: %v", res.Problems, sample.Changelog, tt.damage)
			}
		})
	}
}
