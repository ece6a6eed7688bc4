package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
)

// TestShardedRestore backs up three large partitions, six small ones and
// committed group offsets on kfake with three `backup --shard I/3`
// processes, and restores that backup into a new kfake cluster with three
// `restore --shard I/3` processes; an unsharded backup is restored into
// another by one unsharded restore. Every produce to a large partition after its first is
// held, and shard 1 is killed (SIGKILL) once its large partition has
// records on the target and its next produce is held: shards 0 and 2 exit
// 0 saying the restore is not complete (shard 1 pending) and the target's
// group has no committed offset yet; shard 1 run again resumes and
// completes the restore, and the target equals the unsharded restore's
// record for record, offsets included, with the same committed group
// offsets; one restore report, whose id is the run object's.
func TestShardedRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four subprocess restores")
	}
	const (
		bigParts, smallParts = 3, 6
		bigRecords           = 3000
		valueSize            = 1024
	)
	src, _ := seedShardCluster(t, bigParts, smallParts, bigRecords, valueSize)
	repo := filepath.Join(t.TempDir(), "repo")
	config := func(repo string, target []string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf("application_id: shard-app\nsource:\n  bootstrap_servers: [%s]\n  topics:\n    include: [big, small]\ntarget:\n  bootstrap_servers: [%s]\nstorage:\n  backend: filesystem\n  path: %s\nbackup:\n  segment_max_bytes: 256KiB\n",
			strings.Join(src.Addrs(), ", "), strings.Join(target, ", "), repo))
	}
	// The unsharded backup and restore, into a repository and a cluster
	// of their own (kfake's clusters share one cluster id, and so would
	// the two restores' journals and locks in one repository); the
	// sharded backup by three `backup --shard I/3` processes.
	repoU := filepath.Join(t.TempDir(), "repo")
	if code, _, stderr := runCLI(t, "backup", "-c", config(repoU, src.Addrs())); code != 0 {
		t.Fatalf("unsharded backup: exit %d\n%s", code, stderr)
	}
	backups := make([]*shardProc, 3)
	for i := range backups {
		backups[i] = startShard(t, "--log-level", "error", "backup", "-c", config(repo, src.Addrs()), "--shard", fmt.Sprintf("%d/3", i), "--shard-run", "job-uid-b")
	}
	for i, p := range backups {
		if code := p.wait(t); code != 0 {
			t.Fatalf("backup shard %d: exit %d\n%s", i, code, p.stderr.String())
		}
	}
	tu := testkit.StartKfake(t, 1)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", config(repoU, tu.Addrs()), "--yes", "--compression", "none"); code != 0 {
		t.Fatalf("unsharded restore: exit %d\n%s\n%s", code, stdout, stderr)
	}

	ts := testkit.StartKfake(t, 1)
	cfgS := config(repo, ts.Addrs())
	// Uncompressed (--compression none): a large partition, about 3 MiB,
	// then goes in several produce requests of at most one 1 MiB batch
	// each, so the hold below holds (compressed, one request took it all).
	release := make(chan struct{})
	var heldMu sync.Mutex
	produced, held := map[int32]int{}, map[int32]bool{} // per partition of big: produce requests seen, one held
	ts.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		hold := false
		heldMu.Lock()
		for _, rt := range req.(*kmsg.ProduceRequest).Topics {
			// Produce v13 names the topic by id only: a batch of more than
			// 64 KiB is of big (small's are a few hundred bytes).
			for _, rp := range rt.Partitions {
				if len(rp.Records) <= 64<<10 {
					continue
				}
				if produced[rp.Partition]++; produced[rp.Partition] > 1 {
					hold, held[rp.Partition] = true, true
				}
			}
		}
		heldMu.Unlock()
		if hold {
			ts.SleepControl(func() {
				select {
				case <-release:
				case <-time.After(30 * time.Second):
				}
			})
		}
		return nil, nil, false
	})
	const run = "job-uid-r"
	shardArgs := func(i, n int) []string {
		return []string{"--log-level", "info", "restore", "-c", cfgS, "--yes", "--json", "--compression", "none", "--shard", fmt.Sprintf("%d/%d", i, n), "--shard-run", run}
	}
	procs := make([]*shardProc, 3)
	for i := range procs {
		procs[i] = startShard(t, shardArgs(i, 3)...)
	}
	runKey := filepath.Join(repo, format.RestoreShardRunKey(run))
	var sr format.RestoreShardRun
	deadline := time.Now().Add(40 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no run object with topics ready at %s; shard 0 stderr:\n%s", runKey, procs[0].stderr.String())
		}
		if b, err := os.ReadFile(runKey); err == nil && json.Unmarshal(b, &sr) == nil && sr.TopicsReady {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Disjoint, covering, each large partition on its own shard.
	owners := map[string]int{}
	for i, a := range sr.Assignment {
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
	if len(owners) != bigParts+smallParts || len(sr.Assignment) != 3 || sr.Shards != 3 {
		t.Fatalf("run object %+v: want 3 shards covering %d partitions", sr, bigParts+smallParts)
	}
	var bigOf1 int32 = -1
	seen := map[int]bool{}
	for p := range int32(bigParts) {
		o := owners[fmt.Sprintf("big/%d", p)]
		if seen[o] {
			t.Fatalf("shard %d got two large partitions: %+v", o, sr.Assignment)
		}
		seen[o] = true
		if o == 1 {
			bigOf1 = p
		}
	}
	for {
		heldMu.Lock()
		holding := held[bigOf1]
		heldMu.Unlock()
		if holding {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard 1's second produce to big/%d was not held; stderr:\n%s", bigOf1, procs[1].stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := procs[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[1].done
	admS := testkit.Admin(t, ts.Addrs())
	// Killed mid-partition: some of its records are in, not all.
	if n := restorecheck.EndOffsets(t, admS, "big")["big"][bigOf1]; n <= 0 || n >= bigRecords {
		t.Fatalf("big/%d holds %d records on the target when shard 1 is killed, want some of %d", bigOf1, n, bigRecords)
	}
	close(release)
	for _, i := range []int{0, 2} {
		if code := procs[i].wait(t); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, procs[i].stderr.String())
		}
		var out struct {
			Complete      bool   `json:"complete"`
			RestoreID     string `json:"restore_id"`
			ShardsPending []int  `json:"shards_pending"`
		}
		if err := json.Unmarshal([]byte(procs[i].stdout.String()), &out); err != nil || out.Complete || !slices.Contains(out.ShardsPending, 1) || out.RestoreID != sr.RestoreID {
			t.Fatalf("shard %d's --json, with shard 1 killed: %v, want complete false, shard 1 pending, restore %s:\n%s", i, err, sr.RestoreID, procs[i].stdout.String())
		}
	}
	// No offset committed while shard 1 has not finished.
	if g := restorecheck.GroupOffsets(t, admS, "shard-app"); len(g) != 0 {
		t.Fatalf("with shard 1 unfinished the target's group has offsets %s", g)
	}
	if _, err := os.ReadFile(filepath.Join(repo, format.RestoreReportKey(sr.RestoreID))); err == nil {
		t.Fatal("with shard 1 unfinished the restore report is written")
	}

	// Shard 1 run again resumes and completes the restore.
	again := startShard(t, shardArgs(1, 3)...)
	if code := again.wait(t); code != 0 {
		t.Fatalf("shard 1 run again: exit %d\n%s\n%s", code, again.stdout.String(), again.stderr.String())
	}
	var rep struct {
		RestoreID string `json:"restore_id"`
		Committed bool   `json:"committed"`
	}
	if err := json.Unmarshal([]byte(again.stdout.String()), &rep); err != nil || rep.RestoreID != sr.RestoreID {
		t.Fatalf("shard 1 run again: %v, want the report of restore %s:\n%s", err, sr.RestoreID, again.stdout.String())
	}
	if b, err := os.ReadFile(filepath.Join(repo, format.RestoreReportKey(sr.RestoreID))); err != nil || !rep.Committed || bytes.Contains(b, []byte("the plan predicted")) {
		t.Fatalf("the last shard's report (committed %v, %v): want it saved, committed, with every offset as planned:\n%s", rep.Committed, err, b)
	}

	admU := testkit.Admin(t, tu.Addrs())
	endsU, endsS := restorecheck.EndOffsets(t, admU, "big", "small"), restorecheck.EndOffsets(t, admS, "big", "small")
	if endsU.String() != endsS.String() {
		t.Fatalf("restored end offsets differ: unsharded %s, sharded %s", endsU, endsS)
	}
	recU, recS := restorecheck.ReadAll(t, tu.Addrs(), endsU), restorecheck.ReadAll(t, ts.Addrs(), endsS)
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

	// A shard of this run with another N, and a shard of a run whose
	// shard 0 never wrote its run object, are refused, nothing written.
	before := treeOf(t, repo)
	code, _, stderr := runCLI(t, shardArgs(2, 4)...)
	if code != exitUsage || !strings.Contains(stderr, "split into 3 shards") || !strings.Contains(stderr, "--shard 2/4") {
		t.Fatalf("restore shard 2/4 of a run of 3: exit %d, want %d naming both N:\n%s", code, exitUsage, stderr)
	}
	code, _, stderr = runCLI(t, "restore", "-c", cfgS, "--yes", "--shard", "1/3", "--shard-run", "no-shard-0", "--shard-wait", "1s")
	if code == 0 || !strings.Contains(stderr, "shard 0") || !strings.Contains(stderr, "--shard-wait") {
		t.Fatalf("restore shard 1/3 without shard 0: exit %d, want an error naming shard 0 and --shard-wait:\n%s", code, stderr)
	}
	if after := treeOf(t, repo); !slices.Equal(before, after) {
		t.Fatalf("a refused restore shard wrote to the repository:\nbefore %v\nafter  %v", before, after)
	}
}
