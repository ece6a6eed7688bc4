package restorer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestLatestPastANewerUnfinishedBackupIsWarned: a restore of "latest"
// while a newer backup has not completed (a sharded run with a shard
// pending) restores the newest complete backup and says so, naming the
// newer run and its pending shards; it planned the older backup silently
// (new-user pass). Named by id, or with nothing newer, it says nothing.
func TestLatestPastANewerUnfinishedBackupIsWarned(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	plan := func(id string) []string {
		t.Helper()
		rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
			ApplicationID: sample.AppID, BackupID: id, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.BackupID != m.BackupID {
			t.Fatalf("restore of %q planned backup %s, want %s", id, rep.BackupID, m.BackupID)
		}
		return rep.Warnings
	}
	newer := func(w string) bool { return strings.Contains(w, "a newer ") }
	if w := plan(""); slices.ContainsFunc(w, newer) {
		t.Fatalf("latest with nothing newer warns %q", w)
	}

	// A sharded run taken after m, shard 0 of 2 written, shard 1 pending.
	raw := getObject(t, store, format.ManifestKey(m.BackupID))
	pm, err := format.ReadManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	pm.BackupID = format.NewBackupID(time.Now().Add(time.Hour), [4]byte{1, 2, 3, 4})
	pm.ParentBackupID = m.BackupID
	pm.State = format.StateRunning
	pm.ShardRun = &format.ShardRun{Run: "r9", Shards: 2, Assignment: make([]format.ShardAssignment, 2)}
	b, err := pm.MarshalCompact()
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, store, format.ProgressKey(pm.BackupID), b)

	for _, id := range []string{"", "latest"} {
		w := plan(id)
		i := slices.IndexFunc(w, newer)
		if i < 0 {
			t.Fatalf("restore of %q past unfinished sharded run %s: warnings %q, want one naming it", id, pm.BackupID, w)
		}
		for _, want := range []string{"latest is backup " + m.BackupID, pm.BackupID, `sharded run "r9" of 2 shards`, "pending: 0, 1"} {
			if !strings.Contains(w[i], want) {
				t.Errorf("restore of %q: warning %q; want it to say %q", id, w[i], want)
			}
		}
	}
	if w := plan(m.BackupID); slices.ContainsFunc(w, newer) {
		t.Errorf("restore of backup %s by id warns %q about a newer one", m.BackupID, w)
	}
}
