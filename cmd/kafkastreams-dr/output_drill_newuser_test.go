package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestPartitionsText: partition numbers are written as words, not as a Go
// slice ("partitions [1] differ").
func TestPartitionsText(t *testing.T) {
	tests := []struct {
		in   []int32
		want string
	}{
		{[]int32{1}, "partition 1"},
		{[]int32{1, 3}, "partitions 1, 3"},
		{[]int32{0, 1, 2}, "partitions 0, 1, 2"},
	}
	for _, tt := range tests {
		if got := partitionsText(tt.in); got != tt.want {
			t.Errorf("partitionsText(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStoreStatesText: verify's and the drill's state lines name the
// partitions that differ in words ("different (partitions [1] differ ...)"
// and "in partitions [1]" were Go slices).
func TestStoreStatesText(t *testing.T) {
	var b bytes.Buffer
	printStoreStates(&b, []verify.StoreState{
		{Store: "counts", Topic: "app-counts-changelog", Partition: 0, Result: format.StateDigestEqual},
		{Store: "counts", Topic: "app-counts-changelog", Partition: 1, Result: format.StateDigestDifferent},
		{Store: "totals", Topic: "app-totals-changelog", Partition: 1, Result: format.StateDigestDifferent},
		{Store: "totals", Topic: "app-totals-changelog", Partition: 3, Result: format.StateDigestDifferent},
	})
	got := b.String()
	for _, want := range []string{"different (partition 1 differs from the backup's state digest)", "different (partitions 1, 3 differ from the backup's state digest)"} {
		if !strings.Contains(got, want) {
			t.Errorf("verify's state lines lack %q:\n%s", want, got)
		}
	}
	b.Reset()
	rep := &drill.Report{Phases: []drill.Phase{{Name: drill.PhaseVerifyCluster, Status: drill.StatusPassed}},
		States: []verify.StoreSummary{{Store: "counts", Topic: "app-counts-changelog", Result: format.StateDigestDifferent, Partitions: 3, Different: []int32{1}}}}
	printDrillReport(&b, rep, nil, "")
	if got := b.String(); !strings.Contains(got, "3 partitions): different in partition 1\n") || strings.Contains(got, "[1]") {
		t.Errorf("the drill's state line, want \"different in partition 1\":\n%s", got)
	}
}

// TestDrillTableAligned: a phase whose error quotes the application's
// output lines keeps the phase table aligned; the lines are printed below
// the table (they broke its columns).
func TestDrillTableAligned(t *testing.T) {
	rep := &drill.Report{Phases: []drill.Phase{
		{Name: drill.PhaseVerifyOffsets, Status: drill.StatusPassed, Detail: "9 offsets of group app equal to the plan"},
		{Name: drill.PhaseAppRunning, Status: drill.StatusFailed, Error: "the application command exited (exit status 1) before running; its last lines:\nException in thread main\n\tat App.main(App.java:1)"},
		{Name: drill.PhaseAppCaughtUp, Status: drill.StatusSkipped},
	}}
	var b bytes.Buffer
	printDrillReport(&b, rep, nil, "")
	out := b.String()
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "PHASE") {
			head = i
			break
		}
	}
	if head < 0 {
		t.Fatalf("no phase table:\n%s", out)
	}
	col := strings.Index(lines[head], "RESULT")
	rows := lines[head+1 : head+1+len(rep.Phases)]
	for i, l := range rows {
		if !strings.HasPrefix(l, rep.Phases[i].Name) || len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %d %q: want phase %s with its result at column %d\n%s", i, l, rep.Phases[i].Name, col, out)
		}
	}
	below := strings.Join(lines[head+1+len(rep.Phases):], "\n")
	if !strings.Contains(below, "Exception in thread main") || !strings.Contains(below, "at App.main(App.java:1)") {
		t.Errorf("the application's lines are not below the table:\n%s", out)
	}
}
