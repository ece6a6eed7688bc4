package backup_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestShardedRuns runs the shards of sharded backups one after the other
// in this process, on the sample application (changelogs, in-flight
// tails): shard 1 alone waits for shard 0's cut and fails naming it with
// nothing written; shard 0 alone leaves the backup incomplete; shard 1
// with another include is refused (ErrShardMismatch); shard 1 completes
// it, equal to an unsharded backup (cut, records, state digests, group
// offsets); an incremental sharded run (a new run id) equals an
// incremental unsharded one; an unsharded backup after an unfinished
// sharded run (its lock gone stale) starts a new backup and warns naming
// the run.
func TestShardedRuns(t *testing.T) {
	kf := seededKfake(t)
	ctx := context.Background()
	storeU, _ := storage.NewFilesystem(t.TempDir())
	storeS, _ := storage.NewFilesystem(t.TempDir())
	shard := func(i int, run string, wait time.Duration) backup.Options {
		o := sampleOptions(kf.Addrs(), storeS)
		o.Shard = &backup.Shard{Index: i, Count: 2, Run: run, Wait: wait}
		return o
	}

	_, err := backup.Run(ctx, shard(1, "r1", 300*time.Millisecond))
	if !errors.Is(err, backup.ErrShardCutMissing) || !strings.Contains(err.Error(), `shard 0 of run "r1"`) {
		t.Fatalf("shard 1 without shard 0: %v, want ErrShardCutMissing naming shard 0 and the run", err)
	}
	if x, _ := repository.ReadIndex(ctx, storeS); len(x.Backups) != 0 {
		t.Fatalf("shard 1 without a cut wrote backups %+v", x.Backups)
	}
	if _, err := storeS.Stat(ctx, format.LockKey); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("shard 1 without a cut took the lock: %v", err)
	}

	r0, err := backup.Run(ctx, shard(0, "r1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if r0.Manifest != "" || !slices.Equal(r0.ShardsPending, []int{1}) {
		t.Fatalf("shard 0 alone: manifest %q pending %v, want none and [1]", r0.Manifest, r0.ShardsPending)
	}
	if x, _ := repository.ReadIndex(ctx, storeS); len(x.CompleteIDs()) != 0 {
		t.Fatalf("half a sharded backup is complete: %v", x.CompleteIDs())
	}
	// list sums the shards' progress of a running sharded run: it showed
	// RECORDS and STORED 0 (the cut names no segment; new-user pass).
	sums, err := catalog.List(ctx, storeS)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].State != catalog.StateRunning || sums[0].Shards != 2 || sums[0].ShardsDone != 1 || sums[0].Records == 0 || sums[0].StoredBytes == 0 {
		t.Fatalf("list of half a sharded backup: %+v; want it running, 1 of 2 shards done, with shard 0's records and bytes", sums)
	}
	running := sums[0]
	// Restoring it names the run and the pending shard and how to finish
	// it (it said "only progress.json; the next backup resumes it", which
	// an unsharded backup does not).
	_, err = repository.Manifest(ctx, storeS, r0.BackupID)
	if !errors.Is(err, repository.ErrNoBackup) {
		t.Fatalf("restore of half a sharded backup: %v, want ErrNoBackup", err)
	}
	for _, want := range []string{`sharded run "r1" of 2 shards`, "shards done: 0", "pending: 1", "--shard 1/2 --shard-run r1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("restore of half a sharded backup: %v; want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "the next backup resumes it") {
		t.Errorf("restore of half a sharded backup: %v; an unsharded backup does not resume it", err)
	}
	other := shard(1, "r1", 0)
	other.Include = append(slices.Clone(other.Include), "more-*")
	if _, err := backup.Run(ctx, other); !errors.Is(err, backup.ErrShardMismatch) ||
		!strings.Contains(err.Error(), `source.topics.include [`) || !strings.Contains(err.Error(), `"more-*"]`) || strings.Contains(err.Error(), "(none) vs (none)") {
		// It said "other topic filters or another topology (none) than
		// this shard's config (none)", naming neither difference.
		t.Fatalf("shard 1 with another include: %v, want ErrShardMismatch naming the include of each", err)
	}
	r1, err := backup.Run(ctx, shard(1, "r1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Manifest != format.ManifestKey(r0.BackupID) || len(r1.ShardsPending) != 0 {
		t.Fatalf("shard 1: manifest %q pending %v, want backup %s complete", r1.Manifest, r1.ShardsPending, r0.BackupID)
	}
	u1, err := backup.Run(ctx, sampleOptions(kf.Addrs(), storeU))
	if err != nil {
		t.Fatal(err)
	}
	m1 := backupcheck.Latest(t, storeS, r0.BackupID)
	sameBackups(t, storeU, backupcheck.Latest(t, storeU, u1.BackupID), storeS, m1)
	var shard0Records, shard0Segments int64
	for _, tp := range slices.Concat(m1.Topics, m1.InFlight) { // list's figures count the in-flight tails too
		for _, p := range tp.PartitionCuts {
			if m1.ShardRun.Owns(0, tp.Name, p.Partition) {
				shard0Records += p.Records
				shard0Segments += int64(len(p.Segments))
			}
		}
	}
	if running.Records != shard0Records || int64(running.Segments) != shard0Segments {
		t.Errorf("list of the running run: %d records in %d segments; want shard 0's %d in %d", running.Records, running.Segments, shard0Records, shard0Segments)
	}
	if sums, err := catalog.List(ctx, storeS); err != nil || sums[0].Shards != 0 || sums[0].State != catalog.StateComplete {
		t.Errorf("list of the complete sharded backup: %+v, %v; want it complete, with no shards figure", sums, err)
	}

	// Incremental: a new run continues the chain of the sharded backup.
	cl := manualClient(t, kf.Addrs())
	produce(t, cl, sample.Orders, 1, 1000, 7)
	produce(t, cl, sample.Totals, 1, 0, 3)
	i0, err := backup.Run(ctx, shard(0, "r2", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(ctx, shard(1, "r2", 0)); err != nil {
		t.Fatal(err)
	}
	u2, err := backup.Run(ctx, sampleOptions(kf.Addrs(), storeU))
	if err != nil {
		t.Fatal(err)
	}
	ms := backupcheck.Latest(t, storeS, i0.BackupID)
	if ms.ParentBackupID != r0.BackupID {
		t.Fatalf("incremental sharded backup's parent %q, want %s", ms.ParentBackupID, r0.BackupID)
	}
	sameBackups(t, storeU, backupcheck.Latest(t, storeU, u2.BackupID), storeS, ms)

	// An unfinished sharded run is not resumed by an unsharded backup.
	h0, err := backup.Run(ctx, shard(0, "r3", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(ctx, sampleOptions(kf.Addrs(), storeS)); !errors.Is(err, backup.ErrLocked) {
		t.Fatalf("unsharded backup while sharded run r3 holds the lock: %v, want ErrLocked", err)
	}
	if err := storeS.Delete(ctx, format.LockKey); err != nil { // as if stale
		t.Fatal(err)
	}
	n, err := backup.Run(ctx, sampleOptions(kf.Addrs(), storeS))
	if err != nil {
		t.Fatal(err)
	}
	if n.BackupID == h0.BackupID || n.Resumed || !slices.ContainsFunc(n.Warnings, func(w string) bool {
		return strings.Contains(w, `is sharded run "r3" of 2 shards; starting a new backup`)
	}) {
		t.Fatalf("unsharded backup after unfinished run r3: id %s (r3's %s), resumed %v, warnings %q", n.BackupID, h0.BackupID, n.Resumed, n.Warnings)
	}
}

// sameBackups asserts two backups of one cluster state hold the same cut,
// the same records and the same state digests.
func sameBackups(t *testing.T, sa storage.Backend, a *format.Manifest, sb storage.Backend, b *format.Manifest) {
	t.Helper()
	if a.Group == nil || b.Group == nil || len(a.Group.Offsets) == 0 || !slices.EqualFunc(a.Group.Offsets, b.Group.Offsets, func(x, y format.GroupOffset) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset
	}) {
		t.Fatalf("group offsets differ: %+v vs %+v", a.Group, b.Group)
	}
	all := func(m *format.Manifest) []format.Topic { return slices.Concat(m.Topics, m.InFlight) }
	ta, tb := all(a), all(b)
	if len(ta) != len(tb) || len(b.InFlight) != len(a.InFlight) {
		t.Fatalf("%d topics vs %d", len(ta), len(tb))
	}
	digests := 0
	defer func() {
		if digests == 0 || len(b.InFlight) == 0 {
			t.Errorf("the backups hold %d state digests and %d in-flight tails: the comparison missed them", digests, len(b.InFlight))
		}
	}()
	for i := range ta {
		if ta[i].Name != tb[i].Name || len(ta[i].PartitionCuts) != len(tb[i].PartitionCuts) {
			t.Fatalf("topic %q vs %q", ta[i].Name, tb[i].Name)
		}
		for k, pa := range ta[i].PartitionCuts {
			pb := tb[i].PartitionCuts[k]
			if pa.StartOffset != pb.StartOffset || pa.EndOffset != pb.EndOffset || pa.Records != pb.Records {
				t.Fatalf("%s/%d: cut %d..%d (%d records) vs %d..%d (%d)", ta[i].Name, pa.Partition, pa.StartOffset, pa.EndOffset, pa.Records, pb.StartOffset, pb.EndOffset, pb.Records)
			}
			if (pa.StateDigest == nil) != (pb.StateDigest == nil) || (pa.StateDigest != nil && *pa.StateDigest != *pb.StateDigest) {
				t.Fatalf("%s/%d: state digest %v vs %v", ta[i].Name, pa.Partition, pa.StateDigest, pb.StateDigest)
			}
			if pb.StateDigest != nil {
				digests++
			}
			ra, rb := backupcheck.Records(t, sa, a, ta[i].Name, pa.Partition), backupcheck.Records(t, sb, b, tb[i].Name, pb.Partition)
			if len(ra) != len(rb) {
				t.Fatalf("%s/%d: %d records vs %d", ta[i].Name, pa.Partition, len(ra), len(rb))
			}
			for j := range ra {
				if ra[j].Offset != rb[j].Offset || !bytes.Equal(ra[j].Key, rb[j].Key) || !bytes.Equal(ra[j].Value, rb[j].Value) || ra[j].Timestamp != rb[j].Timestamp {
					t.Fatalf("%s/%d record %d differs", ta[i].Name, pa.Partition, j)
				}
			}
		}
	}
}

// A shard of a run that completed is answered with that backup even after
// later backups: it copies nothing, takes no new cut and does not wait
// for shard 0 (a new user's shard 1 waited 10 minutes and failed naming
// shard 0, and shard 0 cut a second backup of the same run).
func TestShardOfACompletedRunAfterLaterBackups(t *testing.T) {
	kf := seededKfake(t)
	ctx := context.Background()
	store, _ := storage.NewFilesystem(t.TempDir())
	shard := func(i int) backup.Options {
		o := sampleOptions(kf.Addrs(), store)
		o.Shard = &backup.Shard{Index: i, Count: 2, Run: "done-run", Wait: 300 * time.Millisecond}
		return o
	}
	r0, err := backup.Run(ctx, shard(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(ctx, shard(1)); err != nil {
		t.Fatal(err)
	}
	produce(t, manualClient(t, kf.Addrs()), sample.Orders, 1, 1000, 5)
	later, err := backup.Run(ctx, sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	x, _ := repository.ReadIndex(ctx, store)
	before := len(x.Backups)
	for _, i := range []int{1, 0} {
		r, err := backup.Run(ctx, shard(i))
		if err != nil {
			t.Fatalf("shard %d of the completed run after backup %s: %v", i, later.BackupID, err)
		}
		if !r.ShardAlreadyComplete || !strings.Contains(strings.Join(r.Warnings, "\n"), "a new backup needs a new --shard-run") {
			t.Errorf("shard %d of the completed run: already complete %v, warnings %q; want it said", i, r.ShardAlreadyComplete, r.Warnings)
		}
		if r.BackupID != r0.BackupID || r.Manifest != format.ManifestKey(r0.BackupID) {
			t.Errorf("shard %d of the completed run: backup %s (manifest %q), want the run's %s", i, r.BackupID, r.Manifest, r0.BackupID)
		}
	}
	if x, _ := repository.ReadIndex(ctx, store); len(x.Backups) != before {
		t.Errorf("the repository went from %d to %d backups: a shard of a completed run started another", before, len(x.Backups))
	}
}

// seededKfakeOf is seededKfake with the cluster id id: another cluster
// holding the same topics and records.
func seededKfakeOf(t *testing.T, id string) *testkit.Kfake {
	t.Helper()
	kf := testkit.StartKfake(t, 3, kfake.ClusterID(id))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sample.Seed(ctx, testkit.Client(t, kf.Addrs())); err != nil {
		t.Fatal(err)
	}
	kf.Compact()
	return kf
}

// A shard whose config points at another Kafka cluster than the one shard
// 0 cut is refused before it copies anything (its partitions would hold
// another cluster's records under the cut's offsets), naming both cluster
// ids; a new user's shard with another bootstrap.servers was accepted.
func TestShardOfAnotherClusterIsRefused(t *testing.T) {
	a, b := seededKfakeOf(t, "cluster-a"), seededKfakeOf(t, "cluster-b")
	ctx := context.Background()
	store, _ := storage.NewFilesystem(t.TempDir())
	shard := func(addrs []string, i int) backup.Options {
		o := sampleOptions(addrs, store)
		o.Shard = &backup.Shard{Index: i, Count: 2, Run: "r1"}
		return o
	}
	r0, err := backup.Run(ctx, shard(a.Addrs(), 0))
	if err != nil {
		t.Fatal(err)
	}
	before := objectKeys(t, store)
	_, err = backup.Run(ctx, shard(b.Addrs(), 1))
	if !errors.Is(err, backup.ErrShardMismatch) || !strings.Contains(err.Error(), `"cluster-a"`) || !strings.Contains(err.Error(), `"cluster-b"`) {
		t.Fatalf("shard 1 on another cluster: %v, want ErrShardMismatch naming cluster-a and cluster-b", err)
	}
	if after := objectKeys(t, store); !slices.Equal(before, after) {
		t.Fatalf("the refused shard changed the repository: %v -> %v", before, after)
	}
	if _, err := backup.Run(ctx, shard(a.Addrs(), 1)); err != nil {
		t.Fatalf("shard 1 on the cut's cluster after the refusal: %v", err)
	}
	if x, _ := repository.ReadIndex(ctx, store); !slices.Equal(x.CompleteIDs(), []string{r0.BackupID}) {
		t.Fatalf("complete backups %v, want [%s]", x.CompleteIDs(), r0.BackupID)
	}
}

// An interrupted backup of another Kafka cluster is not resumed: the run
// is refused naming both cluster ids and the fix, with the repository as
// it was (it said "topic was recreated", naming a topic id).
func TestInterruptedBackupOfAnotherClusterIsNotResumed(t *testing.T) {
	a, b := seededKfakeOf(t, "cluster-a"), seededKfakeOf(t, "cluster-b")
	ctx := context.Background()
	store, _ := storage.NewFilesystem(t.TempDir())
	o := sampleOptions(a.Addrs(), store)
	o.Store = &failingStore{Backend: store, n: 2}
	var pe *backup.PhaseError
	if _, err := backup.Run(ctx, o); !errors.As(err, &pe) || !pe.Resumable() {
		t.Fatalf("injected failure: %v", err)
	}
	x, err := repository.ReadIndex(ctx, store)
	if err != nil || len(x.Backups) != 1 {
		t.Fatalf("after the interrupted run: %+v, %v", x, err)
	}
	interrupted := x.Backups[0].ID
	before := objectKeys(t, store)
	_, err = backup.Run(ctx, sampleOptions(b.Addrs(), store))
	if err == nil || !strings.Contains(err.Error(), `"cluster-a"`) || !strings.Contains(err.Error(), `"cluster-b"`) ||
		!strings.Contains(err.Error(), format.ProgressKey(interrupted)) || strings.Contains(err.Error(), "recreated") {
		t.Fatalf("backup of cluster-b after an interrupted one of cluster-a: %v; want a refusal naming both clusters and %s", err, format.ProgressKey(interrupted))
	}
	if after := objectKeys(t, store); !slices.Equal(before, after) {
		t.Fatalf("the refused backup changed the repository: %v -> %v", before, after)
	}
	r, err := backup.Run(ctx, sampleOptions(a.Addrs(), store))
	if err != nil || !r.Resumed || r.BackupID != interrupted {
		t.Fatalf("the backup of cluster-a after the refusal: %+v, %v; want it to resume %s", r, err, interrupted)
	}
}

// objectKeys lists every object key of store, sorted.
func objectKeys(t *testing.T, store storage.Backend) []string {
	t.Helper()
	var keys []string
	err := store.List(context.Background(), "", func(oi storage.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}
