package backup_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// sampleTopology is the sample application's topology as a topology file
// would give it; digest tells two versions apart.
func sampleTopology(digest string) *topicfilter.AppTopology {
	return &topicfilter.AppTopology{From: "topology file sample.txt", OutputsKnown: true, Digest: digest,
		SourceChangelogs: []string{sample.Customers},
		TopologyTopics: topicfilter.TopologyTopics{
			Inputs:      []string{sample.Audit, sample.Customers, sample.Orders, sample.Payments},
			Outputs:     []string{sample.Totals},
			Changelogs:  []string{sample.Changelog},
			Repartition: []string{sample.FKTopic, sample.Repartition},
		}}
}

// TestBackupWithATopology: without an include the topology selects the
// sample's topics (not the other application's changelog, which the
// topology does not name); the manifest records where the topology came
// from, its digest and each topic's role; and a run with a changed
// topology does not resume an interrupted backup made with the old one
// (issue 12).
func TestBackupWithATopology(t *testing.T) {
	kf := seededKfake(t)
	fs, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	o := sampleOptions(kf.Addrs(), fs)
	o.Include, o.SourceChangelogTopics, o.Topology = nil, nil, sampleTopology("aa")
	r, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, fs, r.BackupID)
	roles := map[string]string{}
	var names []string
	for _, tp := range m.Topics {
		roles[tp.Name] = tp.Role
		names = append(names, tp.Name)
	}
	slices.Sort(names)
	want := slices.Clone(sample.BackedUp)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("backed up %q, want %q", names, want)
	}
	wantRoles := map[string]string{sample.Totals: "output", sample.Customers: "source-changelog", sample.Changelog: "changelog",
		sample.Orders: "input", sample.Payments: "input", sample.Audit: "input"}
	for n, r := range wantRoles {
		if roles[n] != r {
			t.Errorf("topic %q role %q, want %q", n, roles[n], r)
		}
	}
	if m.Selection.TopologyFrom != "topology file sample.txt" || m.Selection.TopologySHA256 != "aa" {
		t.Errorf("selection %+v", m.Selection)
	}
	for _, tp := range m.InFlight {
		if tp.Role != "repartition" {
			t.Errorf("in-flight %q role %q", tp.Name, tp.Role)
		}
	}

	// Interrupted, then run with another topology: a new backup.
	o.Store = &failingStore{Backend: fs, n: 2}
	var pe *backup.PhaseError
	if _, err := backup.Run(ctx, o); !errors.As(err, &pe) || !pe.Resumable() {
		t.Fatalf("injected failure: %v", err)
	}
	changed := o
	changed.Store, changed.Topology = fs, sampleTopology("bb")
	r, err = backup.Run(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if w := "with another topology (topology file sample.txt, sha256 aa) than now (topology file sample.txt, sha256 bb)"; r.Resumed || !strings.Contains(strings.Join(r.Warnings, "\n"), w) {
		t.Fatalf("changed topology: resumed %v, warnings %q; want a new backup and %q", r.Resumed, r.Warnings, w)
	}
	// The same topology resumes.
	changed.Store = &failingStore{Backend: fs, n: 1}
	if _, err := backup.Run(ctx, changed); err == nil {
		t.Fatal("want the injected failure")
	}
	changed.Store = fs
	if r, err = backup.Run(ctx, changed); err != nil || !r.Resumed {
		t.Fatalf("same topology: resumed %v, %v", r != nil && r.Resumed, err)
	}
}

// TestBackupKeepsParentOutputsWhenTopologyNamesNone: a streams group's
// topology without its KIP-1331 description names no outputs (a broker
// restarted without group.streams.topology.description.plugin.class, or
// before the members resend it). An incremental backup with no include
// then keeps the outputs of its parent backup that still exist, with role
// output and a warning in the manifest and the result; before, the new
// latest backup silently lost them (new-user pass, issue 12).
func TestBackupKeepsParentOutputsWhenTopologyNamesNone(t *testing.T) {
	kf := seededKfake(t)
	fs, _ := storage.NewFilesystem(t.TempDir())
	ctx := context.Background()
	o := sampleOptions(kf.Addrs(), fs)
	o.Include, o.SourceChangelogTopics, o.Topology = nil, nil, sampleTopology("")
	first, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	noOutputs := sampleTopology("")
	noOutputs.From, noOutputs.OutputsKnown, noOutputs.Outputs = `streams group "app" on the source cluster (StreamsGroupDescribe)`, false, nil
	o.Topology = noOutputs
	r, err := backup.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, fs, r.BackupID)
	var role string
	for _, tp := range m.Topics {
		if tp.Name == sample.Totals {
			role = tp.Role
		}
	}
	if role != topicfilter.RoleOutput {
		t.Fatalf("output %q of parent %s: role %q in the new backup (topics %d), want it kept with role output", sample.Totals, first.BackupID, role, len(m.Topics))
	}
	for _, d := range r.Decisions {
		if d.Topic == sample.Totals && (!d.Selected || !strings.Contains(d.Reason, "an output in backup "+first.BackupID)) {
			t.Errorf("decision %+v", d)
		}
	}
	want := fmt.Sprintf("%q", sample.Totals)
	for what, ws := range map[string][]string{"manifest": m.Warnings, "result": r.Warnings} {
		var found bool
		for _, w := range ws {
			found = found || strings.Contains(w, want) && strings.Contains(w, first.BackupID)
		}
		if !found {
			t.Errorf("%s warnings %q: none names %s and parent %s", what, ws, want, first.BackupID)
		}
	}

	// An output of the parent that is gone from the cluster is not kept.
	if _, err := kadm.NewClient(testkit.Client(t, kf.Addrs())).DeleteTopic(ctx, sample.Totals); err != nil {
		t.Fatal(err)
	}
	if r, err = backup.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, tp := range backupcheck.Latest(t, fs, r.BackupID).Topics {
		if tp.Name == sample.Totals {
			t.Errorf("deleted output %q backed up", tp.Name)
		}
	}
}
