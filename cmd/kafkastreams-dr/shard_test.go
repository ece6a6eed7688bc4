package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// shardProc is one `backup --shard` process: the test binary as
// kafkastreams-dr (TestHelperMain).
type shardProc struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
}

func startShard(t *testing.T, args ...string) *shardProc {
	t.Helper()
	a, _ := json.Marshal(args)
	p := &shardProc{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "-test.count=1"), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "KDR_HELPER_MAIN_ARGS="+string(a))
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits (at most a minute) for the process and returns its exit code.
func (p *shardProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("shard did not end within a minute; stderr:\n%s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// loadIfExists reads a manifest-shaped object, nil when it is not there
// (or not yet whole).
func loadIfExists(store storage.Backend, key string) *format.Manifest {
	m, err := repository.LoadManifest(context.Background(), store, key)
	if err != nil {
		return nil
	}
	return m
}

// TestShardedBackup backs up two topics (three large partitions, six
// small ones, committed group offsets) on kfake with three `backup --shard
// I/3` processes into one repository, and with one unsharded backup into
// another. Shard 1 is killed (SIGKILL) once it has stored a segment of its
// large partition, while every fetch of a large partition past its first
// records is held: the backup is then not
// restorable (list: running; no complete backup), a shard of the same run
// with another N is refused (exit 2) with nothing written; shard 1 run again
// resumes its own progress, and the backup the last shard completes equals
// the unsharded one record for record, group offsets and cut included, its
// partitions split disjointly, each large partition on its own shard; and
// the two backups restored into new clusters give the same records at the
// same offsets and the same committed group offsets.
func TestShardedBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four subprocess backups")
	}
	const (
		bigParts, smallParts = 3, 6
		bigRecords           = 4000
		valueSize            = 1024
	)
	kf, adm := seedShardCluster(t, bigParts, smallParts, bigRecords, valueSize)

	config := func(repo string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: shard-app
source:
  bootstrap_servers: [%s]
  topics:
    include: [big, small]
storage:
  backend: filesystem
  path: %s
backup:
  segment_max_bytes: 256KiB
`, strings.Join(kf.Addrs(), ", "), repo))
	}
	repoU, repoS := t.TempDir(), filepath.Join(t.TempDir(), "repo")
	cfgU, cfgS := config(repoU), config(repoS)

	if code, _, stderr := runCLI(t, "backup", "-c", cfgU); code != 0 {
		t.Fatalf("unsharded backup: exit %d\n%s", code, stderr)
	}

	// A fetch of a large partition from offset holdFrom on sleeps until
	// release: every shard stores its first segments of its large
	// partition, then waits there, so that shard 1 is killed in the middle
	// of it whatever the timing (kfake.SleepControl lets the other
	// connections run meanwhile).
	const holdFrom = 1000
	details, err := adm.ListTopics(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	bigID := details["big"].ID
	release := make(chan struct{})
	var heldMu sync.Mutex
	held := map[int32]bool{} // partitions of big whose fetch is held
	kf.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		hold := false
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			if rt.Topic == "big" || rt.TopicID == bigID {
				for _, rp := range rt.Partitions {
					if rp.FetchOffset >= holdFrom {
						hold = true
						heldMu.Lock()
						held[rp.Partition] = true
						heldMu.Unlock()
					}
				}
			}
		}
		if hold {
			kf.SleepControl(func() {
				select {
				case <-release:
				case <-time.After(30 * time.Second):
				}
			})
		}
		return nil, nil, false
	})

	shardArgs := func(i, n int) []string {
		return []string{"--log-level", "info", "backup", "-c", cfgS, "--json", "--shard", fmt.Sprintf("%d/%d", i, n), "--shard-run", "job-uid-1"}
	}
	procs := make([]*shardProc, 3)
	for i := range procs {
		procs[i] = startShard(t, shardArgs(i, 3)...)
	}
	store, err := storage.NewFilesystem(repoS)
	if err != nil {
		t.Fatal(err)
	}

	// The cut, and shard 1's first segment of its large partition.
	var cut *format.Manifest
	deadline := time.Now().Add(40 * time.Second)
	for cut == nil || len(cut.Topics) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no cut of the sharded run in %s; shard 0 stderr:\n%s", repoS, procs[0].stderr.String())
		}
		if x, err := repository.ReadIndex(t.Context(), store); err == nil && len(x.Backups) > 0 {
			cut = loadIfExists(store, format.ProgressKey(x.Backups[0].ID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cut.ShardRun == nil || cut.ShardRun.Run != "job-uid-1" || cut.ShardRun.Shards != 3 || len(cut.ShardRun.Assignment) != 3 {
		t.Fatalf("the cut's shard_run is %+v, want run job-uid-1 of 3 shards with 3 assignments", cut.ShardRun)
	}
	// Disjoint, covering, the large partitions one per shard.
	owners := map[string]int{}
	for i, a := range cut.ShardRun.Assignment {
		for _, tp := range a.Partitions {
			for _, p := range tp.Partitions {
				k := fmt.Sprintf("%s/%d", tp.Topic, p)
				if prev, ok := owners[k]; ok {
					t.Fatalf("partition %s assigned to shards %d and %d", k, prev, i)
				}
				owners[k] = i
			}
		}
	}
	if len(owners) != bigParts+smallParts {
		t.Fatalf("assignment covers %d partitions, want %d: %+v", len(owners), bigParts+smallParts, cut.ShardRun.Assignment)
	}
	var bigOf1 int32 = -1
	seen := map[int]bool{}
	for p := range int32(bigParts) {
		o := owners[fmt.Sprintf("big/%d", p)]
		if seen[o] {
			t.Fatalf("shard %d got two large partitions: %+v", o, cut.ShardRun.Assignment)
		}
		seen[o] = true
		if o == 1 {
			bigOf1 = p
		}
	}
	id := cut.BackupID
	for {
		if time.Now().After(deadline) {
			heldMu.Lock()
			holding := held[bigOf1]
			heldMu.Unlock()
			t.Fatalf("shard 1 stored no segment of big/%d, or its fetch past offset %d was not held (held: %v); stderr:\n%s", bigOf1, holdFrom, holding, procs[1].stderr.String())
		}
		heldMu.Lock()
		holding := held[bigOf1]
		heldMu.Unlock()
		if m := loadIfExists(store, format.ShardProgressKey(id, 1)); m != nil && holding {
			if p := backupcheck.Topic(m, "big"); p != nil {
				if pc := p.PartitionCuts[bigOf1]; len(pc.Segments) > 0 {
					break
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := procs[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[1].done
	close(release)
	for _, i := range []int{0, 2} {
		if code := procs[i].wait(t); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, procs[i].stderr.String())
		}
		var out struct {
			Complete      bool  `json:"complete"`
			ShardsPending []int `json:"shards_pending"`
		}
		if err := json.Unmarshal([]byte(procs[i].stdout.String()), &out); err != nil || out.Complete || !slices.Contains(out.ShardsPending, 1) {
			t.Fatalf("shard %d's --json, with shard 1 killed: %v, want complete false and shard 1 pending:\n%s", i, err, procs[i].stdout.String())
		}
	}
	killed := loadIfExists(store, format.ShardProgressKey(id, 1))
	if killed == nil || killed.ShardRun.Done {
		t.Fatalf("shard 1's progress after the kill: %+v, want it there and not done", killed)
	}

	// Not restorable while shard 1 has not finished.
	x, err := repository.ReadIndex(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	if ids := x.CompleteIDs(); len(ids) != 0 {
		t.Fatalf("with shard 1 unfinished the repository lists complete backups %v", ids)
	}
	code, stdout, stderr := runCLI(t, "list", "-c", cfgS, "--json")
	var listed struct {
		Backups []struct {
			BackupID string `json:"backup_id"`
			State    string `json:"state"`
		} `json:"backups"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || len(listed.Backups) != 1 || listed.Backups[0].State != "running" || listed.Backups[0].BackupID != id {
		t.Fatalf("list of the unfinished sharded backup: exit %d, %v, want one backup %s, running:\n%s%s", code, err, id, stdout, stderr)
	}

	// A shard of this run with another N is refused, nothing written.
	before := treeOf(t, repoS)
	code, _, stderr = runCLI(t, shardArgs(2, 4)...)
	if code != exitUsage || !strings.Contains(stderr, "split into 3 shards") || !strings.Contains(stderr, "--shard 2/4") {
		t.Fatalf("shard 2/4 of a run of 3: exit %d, want %d naming both N:\n%s", code, exitUsage, stderr)
	}
	if after := treeOf(t, repoS); !slices.Equal(before, after) {
		t.Fatalf("the refused shard wrote to the repository:\nbefore %v\nafter  %v", before, after)
	}

	// Shard 1 run again resumes and completes the backup.
	again := startShard(t, shardArgs(1, 3)...)
	if code := again.wait(t); code != 0 {
		t.Fatalf("shard 1 run again: exit %d\n%s", code, again.stderr.String())
	}
	var res struct {
		BackupID string `json:"backup_id"`
		Resumed  bool   `json:"resumed"`
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(again.stdout.String()), &res); err != nil || !res.Resumed || res.BackupID != id || res.Manifest != format.ManifestKey(id) {
		t.Fatalf("shard 1 run again: %v, want backup %s resumed and complete:\n%s", err, id, again.stdout.String())
	}
	storeU, err := storage.NewFilesystem(repoU)
	if err != nil {
		t.Fatal(err)
	}
	xu, err := repository.ReadIndex(t.Context(), storeU)
	if err != nil {
		t.Fatal(err)
	}
	mu := backupcheck.Latest(t, storeU, xu.CompleteIDs()[0])
	ms := backupcheck.Latest(t, store, id)
	sameBackup(t, storeU, mu, store, ms)
	backupcheck.MatchesCluster(t, store, ms, kf.Addrs())
	if k := format.ShardProgressKey(id, 1); loadIfExists(store, k) != nil || loadIfExists(store, format.ProgressKey(id)) != nil {
		t.Fatalf("the complete sharded backup left its progress behind")
	}
	if _, err := store.Stat(t.Context(), format.LockKey); err == nil {
		t.Fatal("the complete sharded backup left the repository lock")
	}
	// Restored, each into a cluster of its own, the two backups give the
	// same records at the same offsets and the same group offsets.
	restoreInto := func(repo string) []string {
		target := testkit.StartKfake(t, 1)
		cfg := writeFile(t, "restore.yaml", fmt.Sprintf("application_id: shard-app\nsource:\n  bootstrap_servers: [lost:9092]\n  topics:\n    include: [big, small]\ntarget:\n  bootstrap_servers: [%s]\nstorage:\n  backend: filesystem\n  path: %s\n",
			strings.Join(target.Addrs(), ", "), repo))
		if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != 0 {
			t.Fatalf("restore of %s: exit %d\n%s\n%s", repo, code, stdout, stderr)
		}
		return target.Addrs()
	}
	tu, ts := restoreInto(repoU), restoreInto(repoS)
	admU, admS := testkit.Admin(t, tu), testkit.Admin(t, ts)
	endsU, endsS := restorecheck.EndOffsets(t, admU, "big", "small"), restorecheck.EndOffsets(t, admS, "big", "small")
	if endsU.String() != endsS.String() {
		t.Fatalf("restored end offsets differ: unsharded %s, sharded %s", endsU, endsS)
	}
	recU, recS := restorecheck.ReadAll(t, tu, endsU), restorecheck.ReadAll(t, ts, endsS)
	for _, topic := range []string{"big", "small"} {
		for p, want := range recU[topic] {
			got := recS[topic][p]
			restorecheck.SameRecords(t, fmt.Sprintf("restored %s/%d", topic, p), got, want, false)
			if len(got) != len(want) || len(want) == 0 || got[0].Offset != want[0].Offset || got[len(got)-1].Offset != want[len(want)-1].Offset {
				t.Fatalf("restored %s/%d: offsets differ or empty (%d vs %d records)", topic, p, len(got), len(want))
			}
		}
	}
	gu, gs := restorecheck.GroupOffsets(t, admU, "shard-app"), restorecheck.GroupOffsets(t, admS, "shard-app")
	if gu.String() != gs.String() || len(gu) != 2 {
		t.Fatalf("restored group offsets differ: unsharded %s, sharded %s (want 2 topics)", gu, gs)
	}

	// A shard of the run started once it is complete copies nothing.
	code, stdout, stderr = runCLI(t, shardArgs(0, 3)...)
	if code != 0 || !strings.Contains(stdout, id) {
		t.Fatalf("shard 0 after the run completed: exit %d\n%s%s", code, stdout, stderr)
	}
	if x, _ := repository.ReadIndex(t.Context(), store); len(x.Backups) != 1 {
		t.Fatalf("shard 0 after the run completed started another backup: %+v", x.Backups)
	}
}

// sameBackup asserts that two backups of one cluster state hold the same
// cut (group offsets, every partition's start, end, log start and high
// watermark) and the same records, field for field.
func sameBackup(t *testing.T, sa storage.Backend, a *format.Manifest, sb storage.Backend, b *format.Manifest) {
	t.Helper()
	ga, gb := a.Group, b.Group
	if ga == nil || gb == nil || !slices.EqualFunc(ga.Offsets, gb.Offsets, func(x, y format.GroupOffset) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset
	}) {
		t.Fatalf("group offsets differ: %+v vs %+v", ga, gb)
	}
	if len(ga.Offsets) != 2 {
		t.Fatalf("group offsets %+v, want the two committed", ga.Offsets)
	}
	if len(a.Topics) != len(b.Topics) {
		t.Fatalf("topics differ: %d vs %d", len(a.Topics), len(b.Topics))
	}
	for ti, ta := range a.Topics {
		tb := b.Topics[ti]
		if ta.Name != tb.Name || len(ta.PartitionCuts) != len(tb.PartitionCuts) {
			t.Fatalf("topic %q (%d partitions) vs %q (%d)", ta.Name, len(ta.PartitionCuts), tb.Name, len(tb.PartitionCuts))
		}
		for pi, pa := range ta.PartitionCuts {
			pb := tb.PartitionCuts[pi]
			if pa.Partition != pb.Partition || pa.StartOffset != pb.StartOffset || pa.EndOffset != pb.EndOffset ||
				pa.LogStartOffset != pb.LogStartOffset || pa.HighWatermark != pb.HighWatermark || pa.Records != pb.Records {
				t.Fatalf("topic %q partition %d: cut %+v vs %+v", ta.Name, pa.Partition, pa, pb)
			}
			ra, rb := backupcheck.Records(t, sa, a, ta.Name, pa.Partition), backupcheck.Records(t, sb, b, tb.Name, pb.Partition)
			if len(ra) == 0 || len(ra) != len(rb) {
				t.Fatalf("topic %q partition %d: %d records vs %d", ta.Name, pa.Partition, len(ra), len(rb))
			}
			for i := range ra {
				x, y := ra[i], rb[i]
				if x.Offset != y.Offset || !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value) || x.Timestamp != y.Timestamp ||
					!slices.EqualFunc(x.Headers, y.Headers, func(h, k format.Header) bool { return h.Key == k.Key && bytes.Equal(h.Value, k.Value) }) {
					t.Fatalf("topic %q partition %d record %d: %+v vs %+v", ta.Name, pa.Partition, i, x, y)
				}
			}
		}
	}
}

// treeOf lists every file under dir with its size, sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			out = append(out, fmt.Sprintf("%s %d", p, fi.Size()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestShardFlagsRefused: --shard values that are not 0 <= I < N, a shard
// without a run id, $KAFKASTREAMS_DR_SHARDS without $JOB_COMPLETION_INDEX,
// and --shard-run without --shard are usage errors (exit 2) naming the flag
// or variable, before anything is contacted or written: for backup and
// restore alike.
func TestShardFlagsRefused(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	cfg := writeFile(t, "app.yaml", fmt.Sprintf("application_id: a\nsource:\n  bootstrap_servers: [127.0.0.1:1]\n  topics:\n    include: [x]\nstorage:\n  backend: filesystem\n  path: %s\n", repo))
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"I equal to N", nil, []string{"--shard", "3/3", "--shard-run", "r"}, "I must be 0 to 2"},
		{"N zero", nil, []string{"--shard", "0/0", "--shard-run", "r"}, "N must be at least 1"},
		{"negative I", nil, []string{"--shard", "-1/3", "--shard-run", "r"}, "I must be 0 to 2"},
		{"not I/N", nil, []string{"--shard", "two", "--shard-run", "r"}, `--shard "two" is not I/N`},
		{"a sign", nil, []string{"--shard", "+1/3", "--shard-run", "r"}, `--shard "+1/3" is not I/N`},
		{"a space", nil, []string{"--shard", "1/ 3", "--shard-run", "r"}, `--shard "1/ 3" is not I/N`},
		{"no run id", nil, []string{"--shard", "0/3"}, "--shard-run ID"},
		{"run id without shard", nil, []string{"--shard-run", "r"}, "--shard-run and --shard-wait go with --shard"},
		{"shards env without index", map[string]string{envShards: "3", envCompletionIndex: ""}, nil, "JOB_COMPLETION_INDEX is not set"},
		{"index env past shards", map[string]string{envShards: "3", envCompletionIndex: "5", envShardRun: "r"}, nil, "$JOB_COMPLETION_INDEX/$KAFKASTREAMS_DR_SHARDS \"5/3\""},
	} {
		for _, command := range [][]string{{"backup"}, {"restore", "--yes"}} {
			t.Run(command[0]+"/"+tc.name, func(t *testing.T) {
				for k, v := range tc.env {
					t.Setenv(k, v)
				}
				code, _, stderr := runCLI(t, slices.Concat(command, []string{"-c", cfg}, tc.args)...)
				if code != exitUsage || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, want %d with %q:\n%s", code, exitUsage, tc.want, stderr)
				}
				if first, _, _ := strings.Cut(stderr, "\n"); strings.Count(first, "--shard ") > 1 {
					t.Errorf("the error names the flag twice: %s", first)
				}
				if _, err := os.Stat(repo); !os.IsNotExist(err) {
					t.Fatalf("the refused %s created %s", command[0], repo)
				}
			})
		}
	}
}

// seedShardCluster starts the sharding tests' source cluster: topic "big"
// (bigParts partitions of bigRecords uncompressed records of valueSize
// bytes, a key and a header each) and "small" (partition p holds
// 10*(p+1) records), and group shard-app committed at big/1@1234 and
// small/3@7. Uncompressed: a partition of 4000 records of 1 KiB is then
// about 4 MiB, more than one fetch (max.partition.fetch.bytes 2 MiB)
// returns, so a backup fetches again past the tests' holds. (The
// producer's default, snappy, made the partition about 200 KiB: one fetch
// from offset 0 returned all of it and a hold never held.)
func seedShardCluster(t *testing.T, bigParts, smallParts int32, bigRecords, valueSize int) (*testkit.Kfake, *kadm.Client) {
	t.Helper()
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := testkit.Admin(t, kf.Addrs())
	for topic, n := range map[string]int32{"big": bigParts, "small": smallParts} {
		if _, err := adm.CreateTopic(t.Context(), n, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for p := range int32(bigParts) {
		for i := range bigRecords {
			recs = append(recs, &kgo.Record{Topic: "big", Partition: p, Key: fmt.Appendf(nil, "k%d-%d", p, i),
				Value: bytes.Repeat(fmt.Appendf(nil, "%d", i%10), valueSize), Headers: []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}}})
		}
	}
	for p := range int32(smallParts) {
		for i := range 10 * (int(p) + 1) {
			recs = append(recs, &kgo.Record{Topic: "small", Partition: p, Key: fmt.Appendf(nil, "s%d-%d", p, i), Value: fmt.Appendf(nil, "v%d", i)})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "big", Partition: 1, At: 1234, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "small", Partition: 3, At: 7, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(t.Context(), "shard-app", offs); err != nil {
		t.Fatal(err)
	}
	return kf, adm
}
