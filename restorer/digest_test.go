package restorer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// rewriteManifest applies edit to the manifest of backup m in store.
func rewriteManifest(t *testing.T, store storage.Backend, m *format.Manifest, edit func(*format.Manifest)) []byte {
	t.Helper()
	edit(m)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), format.ManifestKey(m.BackupID), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreFailsWhenTheStateDigestDiffers: a backup whose manifest
// records another state digest for one changelog partition than its
// records encode makes the restore fail with a *StateDigestError naming
// that partition, after the report (saved) says "different" for it and
// "equal" for the others.
func TestRestoreFailsWhenTheStateDigestDiffers(t *testing.T) {
	_, store, m := backedUpSample(t)
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		for ti := range m.Topics {
			if m.Topics[ti].Name == sample.Changelog {
				d := m.Topics[ti].PartitionCuts[1].StateDigest
				d.Digest = strings.Repeat("0", 63) + "1"
			}
		}
	})
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	// Concurrency 1: the changelog partitions are read back one at a time.
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID, Concurrency: 1})
	sde, ok := errors.AsType[*restorer.StateDigestError](err)
	if !ok || rep == nil {
		t.Fatalf("restore with an altered digest: report %v, err %v; want a report and a *StateDigestError", rep != nil, err)
	}
	if len(sde.Different) != 1 || !strings.Contains(sde.Different[0], `topic "`+sample.Changelog+`" partition 1`) {
		t.Fatalf("differences %q, want the changelog's partition 1 alone", sde.Different)
	}
	results := map[string]int{}
	for _, pr := range rep.Partitions {
		if pr.StateDigestResult == "" {
			continue
		}
		results[pr.StateDigestResult]++
		if pr.Topic == sample.Changelog && pr.Partition == 1 && pr.StateDigestResult != format.StateDigestDifferent {
			t.Errorf("%s/1: %q, want different", pr.Topic, pr.StateDigestResult)
		}
	}
	if results[format.StateDigestDifferent] != 1 || results[format.StateDigestEqual] != 3 || len(results) != 2 {
		t.Fatalf("results %v, want 1 different and 3 equal", results)
	}
	saved, err := repository.LatestReport(ctx, store, sample.AppID, "")
	if err != nil || saved == nil || saved.RestoreID != rep.RestoreID {
		t.Fatalf("saved report %v, %v; want restore %s's", saved, err, rep.RestoreID)
	}
	// No offset is committed for a state that differs: the application
	// must not start on it as if it were restored (second new-user pass:
	// the restore said "do not start the application" and committed the
	// group's offsets all the same).
	if rep.Committed {
		t.Errorf("report says the group's offsets were committed; want none for a state that differs")
	}
	offs, err := kadm.NewClient(testkit.Client(t, dst.Addrs())).FetchOffsets(ctx, sample.AppID)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatal(err)
	}
	n := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			n++
		}
	})
	if n != 0 {
		t.Errorf("group %s has %d committed offsets on the target; want none", sample.AppID, n)
	}
	// Running the same restore again checks again and fails again: it
	// never says "already complete" (exit 0) for a state that differs.
	again, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if _, ok := errors.AsType[*restorer.StateDigestError](err); !ok || again == nil || again.Complete || again.Records != 0 {
		t.Fatalf("the same restore again: report %+v, err %v; want the state check to fail again, nothing produced", again, err)
	}
}

// TestRestoreOfABackupWithoutDigestsSaysNotRecorded: a manifest written
// before state digests existed restores, and its report says "not
// recorded" for every changelog partition, never "equal".
func TestRestoreOfABackupWithoutDigestsSaysNotRecorded(t *testing.T) {
	_, store, m := backedUpSample(t)
	b := rewriteManifest(t, store, m, func(m *format.Manifest) {
		for ti := range m.Topics {
			for pi := range m.Topics[ti].PartitionCuts {
				m.Topics[ti].PartitionCuts[pi].StateDigest = nil
			}
		}
	})
	if strings.Contains(string(b), "state_digest") {
		t.Fatal("the rewritten manifest still has state digests")
	}
	dst := testkit.StartKfake(t, 3)
	rep, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pr := range rep.Partitions {
		isChangelog := pr.Topic == sample.Changelog || pr.Topic == sample.Customers
		switch {
		case isChangelog && pr.StateDigestResult != format.StateDigestNotRecorded:
			t.Errorf("%s/%d: %q, want %q", pr.Topic, pr.Partition, pr.StateDigestResult, format.StateDigestNotRecorded)
		case isChangelog:
			n++
		case pr.StateDigestResult != "" || pr.StateDigest != nil:
			t.Errorf("%s/%d (no changelog): %q %+v, want no state digest", pr.Topic, pr.Partition, pr.StateDigestResult, pr.StateDigest)
		}
	}
	if n != 4 {
		t.Fatalf("%d changelog partitions not recorded, want 4", n)
	}
}

// TestRestoreWithAcceptedLossDoesNotFailOnState: a changelog partition
// with records past retention.ms restored under --retention accept-loss
// (the broker may delete them before they are read back) whose state
// differs is "loss accepted", not a failed restore.
func TestRestoreWithAcceptedLossDoesNotFailOnState(t *testing.T) {
	now := time.Now().UnixMilli()
	const day = int64(86_400_000)
	store := writeBackup(t, testTopic{name: "app-store-changelog", configs: map[string]string{"retention.ms": fmt.Sprint(day), "cleanup.policy": "compact,delete"},
		records: []format.Record{rec(now-3*day, "a", "old"), rec(now, "c", "new")}})
	m, err := repository.Manifest(context.Background(), store, "latest")
	if err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		m.Topics[0].Class = "changelog"
		m.Topics[0].PartitionCuts[0].StateDigest = &format.StateDigest{Algorithm: statedigest.Algorithm, Keys: 1, Digest: strings.Repeat("0", 63) + "1"}
	})
	dst := testkit.StartKfake(t, 1)
	rep, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Retention: restorer.RetentionAcceptLoss})
	if err != nil {
		t.Fatalf("restore under accept-loss: %v", err)
	}
	if pr := rep.Partitions[0]; pr.StateDigestResult != format.StateDigestLossAccepted || pr.StateDigest == nil || pr.StateDigest.Keys != 2 {
		t.Fatalf("partition report %+v, want loss accepted with the target's 2 keys", pr)
	}
}

// TestStateOfAnEmptyPartitionFilledIntoALogThatEndsAbove0: a changelog
// partition with no record restored into an existing empty topic whose
// log ends above 0 (its records were deleted) has the empty state, read
// without waiting for a record that never comes.
func TestStateOfAnEmptyPartitionFilledIntoALogThatEndsAbove0(t *testing.T) {
	ctx := context.Background()
	store := writeBackup(t, testTopic{name: "app-s-changelog", configs: map[string]string{"cleanup.policy": "compact"},
		records: []format.Record{rec(time.Now().UnixMilli(), "a", "1")}})
	m, err := repository.Manifest(ctx, store, "latest")
	if err != nil {
		t.Fatal(err)
	}
	empty := statedigest.New().Sum()
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		m.Topics[0].Class = "changelog"
		p := &m.Topics[0].PartitionCuts[0]
		p.Segments, p.Records, p.StartOffset, p.EndOffset, p.StateDigest = []format.Segment{}, 0, 0, 0, &empty
	})
	dst := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, dst.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "app-s-changelog"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"x", "y", "z"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "app-s-changelog", Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if dr, err := adm.DeleteRecords(ctx, kadm.Offsets{"app-s-changelog": {0: {Topic: "app-s-changelog", Partition: 0, At: 3, LeaderEpoch: -1}}}); err != nil || dr.Error() != nil {
		t.Fatal(err, dr.Error())
	}
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, RetryTimeout: 3 * time.Second})
	if err != nil {
		t.Fatalf("restore into the emptied topic: %v", err)
	}
	if pr := rep.Partitions[0]; pr.NewEnd != 3 || pr.StateDigestResult != format.StateDigestEqual || pr.StateDigest == nil || *pr.StateDigest != empty {
		t.Fatalf("partition report %+v, want new end 3 and the empty state, equal", pr)
	}
}

// TestRebuildProvesTheSourceChangelogsState: --strategy rebuild leaves
// the changelog out but restores the source-topic changelog whole (an
// input there): its state is proven, and no other partition gets a state.
// (A --to-time cut of it is "cut", not compared:
// TestPointInTimeOfASourceChangelog.)
func TestRebuildProvesTheSourceChangelogsState(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	rep, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, Strategy: restorer.StrategyRebuild})
	if err != nil {
		t.Fatal(err)
	}
	equal := 0
	for _, pr := range rep.Partitions {
		switch {
		case pr.Topic == sample.Changelog:
			t.Errorf("rebuild restored the changelog %s/%d", pr.Topic, pr.Partition)
		case pr.Topic == sample.Customers && pr.StateDigestResult == format.StateDigestEqual:
			equal++
		case pr.Topic == sample.Customers:
			t.Errorf("%s/%d: state %q, want equal", pr.Topic, pr.Partition, pr.StateDigestResult)
		case pr.StateDigestResult != "":
			t.Errorf("%s/%d (an input): state %q", pr.Topic, pr.Partition, pr.StateDigestResult)
		}
	}
	if equal != 2 {
		t.Fatalf("%d of customers' 2 partitions proven equal", equal)
	}
}
