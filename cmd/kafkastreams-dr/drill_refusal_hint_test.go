package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
)

// TestDrillRefusalHintByKind is a second new-user fault of issue 12: every
// refused restore of a drill got the hint "a drill restores into a new
// cluster: delete the application's topics and group on the drill target",
// also after a KAFKA-20254 or a --to-time refusal on a target that is new.
// That hint belongs to the refusal that the target is not new (it holds the
// application's topics or group); any other refusal's reasons carry their
// own fix.
func TestDrillRefusalHintByKind(t *testing.T) {
	const notNewHint = "delete the application's topics and group on the drill target"
	tests := []struct {
		name     string
		phase    drill.Phase
		wantHint string
		noHint   string
	}{
		{"KAFKA-20254 refusal", drill.Phase{Name: drill.PhasePlan, Status: drill.StatusFailed, Refused: true,
			Error:    "restore refused: nothing was written to the drill target",
			Problems: []string{`the target's metadata.version is Kafka 4.2's (feature level 26) and group "shop" is a streams group (KIP-1071): ... upgrade the target's brokers to Kafka 4.2.1 or later; if they already run 4.2.1 or later (the protocol cannot tell), pass --allow-kafka-4-2`}},
			"the refusal above says what to change", notNewHint},
		{"--to-time refusal", drill.Phase{Name: drill.PhasePlan, Status: drill.StatusFailed, Refused: true,
			Error:    "restore refused: nothing was written to the drill target",
			Problems: []string{"--to-time is after the backup's cut"}, RefusalHint: "restore with --strategy rebuild --to-time T"},
			"restore with --strategy rebuild --to-time T", notNewHint},
		{"target not new", drill.Phase{Name: drill.PhasePlan, Status: drill.StatusFailed, Refused: true, TargetNotNew: true,
			Error:    "restore refused: nothing was written to the drill target",
			Problems: []string{`topic "shop-orders" already exists on the drill target (the restore would append to it): a drill restores into a new cluster`}},
			notNewHint, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := drillOutcome(&drill.Report{Phases: []drill.Phase{tt.phase}}, "app.yaml")
			var ee *exitErr
			if !errors.As(err, &ee) || exitCode(t.Context(), err) != exitUsage {
				t.Fatalf("drillOutcome: %v (exit %d), want a refusal, exit 2", err, exitCode(t.Context(), err))
			}
			if !strings.Contains(ee.hint, tt.wantHint) {
				t.Errorf("hint %q, want it to contain %q", ee.hint, tt.wantHint)
			}
			if tt.noHint != "" && strings.Contains(ee.hint, tt.noHint) {
				t.Errorf("hint %q says %q, though the target is new", ee.hint, tt.noHint)
			}
		})
	}
}

// TestDrillNotReadyMissingSourceHint: a drill whose application stayed
// NotReady because a source topic is missing on the target gets no
// "check the application command ... or give it longer" hint: the
// NotReady reason names the cause and the fix.
func TestDrillNotReadyMissingSourceHint(t *testing.T) {
	rep := &drill.Report{Phases: []drill.Phase{{Name: drill.PhaseAppRunning, Status: drill.StatusFailed,
		Error: `the application was not running within 40s of its start: streams group "app" stayed NotReady for 40s: source topic "drill-events" (of sub-topology 0) does not exist on the target`}},
		App: &drill.AppReport{NotReady: "...", MissingSourceTopics: []string{"drill-events"}}}
	err := drillOutcome(rep, "app.yaml")
	var ee *exitErr
	if !errors.As(err, &ee) || exitCode(t.Context(), err) != exitError {
		t.Fatalf("drillOutcome: %v, want exit 1", err)
	}
	if strings.Contains(ee.hint, "give it longer") || strings.Contains(ee.hint, "check the application command") || !strings.Contains(ee.hint, "drill-events") {
		t.Errorf("hint %q: want the missing source topic, not the generic application hint", ee.hint)
	}
}
