package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// crashLoopEnv reads the crash loop's knobs: KDR_CRASH_ITERATIONS
// (iterations per command, default 6) and KDR_CRASH_SEED (the seed of the
// kill delays, default the clock), so a failing run can be replayed.
func crashLoopEnv(t *testing.T) (iterations int, seed uint64) {
	t.Helper()
	iterations = 6
	if v := os.Getenv("KDR_CRASH_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KDR_CRASH_ITERATIONS=%q: want a whole number of iterations, at least 1", v)
		}
		iterations = n
	}
	seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("KDR_CRASH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("KDR_CRASH_SEED=%q: want the unsigned number a crash loop printed", v)
		}
		seed = s
	}
	return iterations, seed
}

// crashRun is one command of the crash loop, run as a process of its own
// (TestHelperMain).
type crashRun struct {
	t    *testing.T
	args []string
	// atKill, when set, says how far the killed run got (segments
	// stored, records restored, backups deleted), for the log.
	atKill func() string
	// beforeRerun, when set, runs after the kills, before the run to
	// completion.
	beforeRerun func()
	// kills counts the SIGKILLs sent while the process ran; finished the
	// runs that ended by themselves before their kill delay; takeovers the
	// runs that took over a dead run's lock.
	kills, finished, takeovers int
	// points are the kill points: the delay and atKill's answer.
	points []string
}

// mustHaveKilled fails the test when no run of the loop was killed: it
// would have shown nothing.
func (c *crashRun) mustHaveKilled(t *testing.T, what string) {
	t.Helper()
	if c.kills == 0 {
		t.Errorf("%s: every run ended before its kill: the crash loop killed nothing", what)
	}
}

// add counts o's kills, runs and takeovers into c.
func (c *crashRun) add(o *crashRun) {
	c.kills, c.finished, c.takeovers = c.kills+o.kills, c.finished+o.finished, c.takeovers+o.takeovers
	c.points = append(c.points, o.points...)
}

// once runs the command and waits for it, at most two minutes: its exit
// code, stderr and how long it took.
func (c *crashRun) once() (int, string, time.Duration) {
	c.t.Helper()
	start := time.Now()
	p := startShard(c.t, c.args...)
	code := p.wait(c.t)
	c.tookOver(p.stderr.String())
	return code, p.stderr.String(), time.Since(start)
}

// killAfter starts the command and sends it SIGKILL after d, unless it
// ended by itself before: then it returns how long that run took.
func (c *crashRun) killAfter(d time.Duration) (ranFor time.Duration) {
	c.t.Helper()
	start := time.Now()
	p := startShard(c.t, c.args...)
	ended := func() time.Duration {
		<-p.done
		c.finished++
		if code := p.cmd.ProcessState.ExitCode(); code != exitOK {
			c.t.Fatalf("%v ended by itself with exit %d before its kill at %v:\n%s", c.args, code, d, p.stderr.String())
		}
		return time.Since(start)
	}
	select {
	case <-p.done:
		return ended()
	case <-time.After(d):
	}
	if err := p.cmd.Process.Kill(); errors.Is(err, os.ErrProcessDone) {
		return ended() // it exited just as its delay ran out
	} else if err != nil {
		c.t.Fatal(err)
	}
	<-p.done
	if !p.cmd.ProcessState.Exited() && p.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		c.t.Fatalf("%v: %v after SIGKILL", c.args, p.cmd.ProcessState)
	}
	if p.cmd.ProcessState.Exited() {
		return ended() // it exited between the kill and the signal's delivery
	}
	c.kills++
	c.tookOver(p.stderr.String())
	point := fmt.Sprintf("killed at %v", d.Round(time.Millisecond))
	if c.atKill != nil {
		point += ": " + c.atKill()
	}
	c.points = append(c.points, point)
	return 0
}

// tookOver counts a run whose log says it took over a dead run's lock.
func (c *crashRun) tookOver(stderr string) {
	if strings.Contains(stderr, "taking over stale repository lock") {
		c.takeovers++
	}
}

// loop kills the command kills times, each after a random delay in
// [0, full], then runs it to completion: it must exit 0. A run that ends
// before its kill shortens full to its own length (the uninterrupted run
// was slower, the machine busier), so the next kills land inside a run.
func (c *crashRun) loop(rng *rand.Rand, kills int, full time.Duration) {
	c.t.Helper()
	for range kills {
		if ranFor := c.killAfter(time.Duration(rng.Int64N(int64(full) + 1))); ranFor > 0 {
			full = min(full, ranFor)
		}
	}
	if c.beforeRerun != nil {
		c.beforeRerun()
	}
	code, stderr, _ := c.once()
	if code != exitOK {
		c.t.Fatalf("%v after %d kills (%s): exit %d\n%s", c.args, c.kills, strings.Join(c.points, "; "), code, stderr)
	}
}

// TestCrashLoop is issue 14's crash loop: backup, restore into new topics,
// restore into pre-created empty topics and prune, each run as a process
// of its own and killed with SIGKILL at random points (uniform over the
// length of an uninterrupted run, once or twice in a row), then run again
// to completion and compared with an uninterrupted run of the same
// command: the backup record for record and group offset for group
// offset (and verify --deep), the restore record for record and offset
// for offset on the target, exactly once, with the same committed group
// offsets, and the prune keeping exactly the backups the uninterrupted
// prune keeps, each of which verifies. KDR_CRASH_ITERATIONS (default 6)
// and KDR_CRASH_SEED replay or lengthen it; the seed is logged.
func TestCrashLoop(t *testing.T) {
	iterations, seed := crashLoopEnv(t)
	t.Logf("crash loop: %d iterations per command, seed %d (replay: KDR_CRASH_SEED=%d KDR_CRASH_ITERATIONS=%d go test ./cmd/kafkastreams-dr -run '^TestCrashLoop$')", iterations, seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	src := testkit.StartKfake(t, 3)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, crashOrders)
	// Each fetch answered 5 ms late: the copy, not the process start,
	// is most of a backup's run, so most kills land inside it.
	slowDown(src.Cluster, kmsg.Fetch, 5*time.Millisecond)
	base := t.TempDir()
	// crashYAML is the config of every command: the sample's topics,
	// a repository in repo, small segments (many write points) and,
	// for restores, a target.
	crashYAML := func(repo string, target []string) string {
		return sampleConfig(t, "crash.yaml", src.Addrs(), target, fmt.Sprintf(`storage:
  backend: filesystem
  path: %s
backup:
  segment_max_bytes: 4KiB
  concurrency: 2
`, repo))
	}
	backupYAML := func(repo string) string { return crashYAML(repo, nil) }

	// The uninterrupted backup every crashed one is compared with.
	full := &crashRun{t: t, args: []string{"--log-level", "info", "backup", "-c", backupYAML(base)}}
	code, stderr, backupTook := full.once()
	if code != exitOK {
		t.Fatalf("uninterrupted backup: exit %d\n%s", code, stderr)
	}
	baseStore, err := storage.NewFilesystem(base)
	if err != nil {
		t.Fatal(err)
	}
	want, err := repository.Latest(t.Context(), baseStore)
	if err != nil || want == nil {
		t.Fatalf("the uninterrupted backup: %v, %v", want, err)
	}
	segments := 0
	for _, tp := range slices.Concat(want.Topics, want.InFlight) {
		for _, p := range tp.PartitionCuts {
			segments += len(p.Segments)
		}
	}
	t.Logf("uninterrupted backup %s: %v, %d segments", want.BackupID, backupTook, segments)

	t.Run("backup", func(t *testing.T) {
		var total crashRun
		for i := range iterations {
			repo := t.TempDir()
			c := &crashRun{t: t, args: []string{"--log-level", "info", "backup", "-c", backupYAML(repo)}}
			c.atKill = func() string {
				return fmt.Sprintf("%d of %d segments stored, %d manifests", filesEnding(t, repo, ".kseg"), segments, filesEnding(t, repo, "manifest.json"))
			}
			c.loop(rng, 1+rng.IntN(2), backupTook)
			store, err := storage.NewFilesystem(repo)
			if err != nil {
				t.Fatal(err)
			}
			x, err := repository.ReadIndex(t.Context(), store)
			if err != nil {
				t.Fatal(err)
			}
			ids := x.CompleteIDs()
			if len(ids) == 0 {
				t.Fatalf("iteration %d: no complete backup after the re-run", i)
			}
			// The oldest complete backup is the crashed run's (a kill
			// after its manifest, before its exit, leaves it complete and
			// the re-run takes one more).
			got := backupcheck.Latest(t, store, ids[len(ids)-1])
			sameCrashedBackup(t, baseStore, want, store, got)
			if code, stdout, stderr := runCLI(t, "verify", "-c", c.args[len(c.args)-1], "--backup-id", got.BackupID, "--deep"); code != exitOK {
				t.Fatalf("iteration %d: verify --deep %s: exit %d\n%s\n%s", i, got.BackupID, code, stdout, stderr)
			}
			t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers, %d complete backups: equal", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers, len(ids))
			total.add(c)
		}
		total.mustHaveKilled(t, "backup")
		t.Logf("backup: %d iterations, %d kills, %d runs ended before their kill, %d lock takeovers; records lost 0, duplicated 0", iterations, total.kills, total.finished, total.takeovers)
	})

	for _, precreate := range []bool{false, true} {
		name := "restore"
		if precreate {
			name = "restore-into-precreated"
		}
		t.Run(name, func(t *testing.T) {
			// target starts a new target cluster and a copy of the
			// backup repository (restores write their journal and
			// report there): the config and the cluster's brokers.
			target := func(id int) (cfg string, addrs []string) {
				c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID(fmt.Sprintf("crash-target-%d", id)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				slowDown(c, kmsg.Produce, 5*time.Millisecond)
				repo := t.TempDir()
				copyTree(t, base, repo)
				addrs = c.ListenAddrs()
				if precreate {
					adm := testkit.Admin(t, addrs)
					for _, tp := range slices.Concat(want.Topics, want.InFlight) {
						var configs map[string]*string
						if v, ok := tp.Configs["cleanup.policy"]; ok && v.Value != nil {
							configs = map[string]*string{"cleanup.policy": v.Value}
						}
						if _, err := adm.CreateTopic(t.Context(), int32(tp.Partitions), int16(tp.ReplicationFactor), configs, tp.Name); err != nil {
							t.Fatal(err)
						}
					}
				}
				return crashYAML(repo, addrs), addrs
			}
			cfg, addrs := target(0)
			full := &crashRun{t: t, args: []string{"--log-level", "info", "restore", "-c", cfg, "--yes"}}
			code, stderr, took := full.once()
			if code != exitOK {
				t.Fatalf("uninterrupted %s: exit %d\n%s", name, code, stderr)
			}
			wantRecs, wantGroup := restored(t, want, addrs)
			wantTotal := 0
			for _, parts := range wantRecs {
				for _, rs := range parts {
					wantTotal += len(rs)
				}
			}
			t.Logf("uninterrupted %s: %v", name, took)
			var total crashRun
			for i := range iterations {
				cfg, addrs := target(i + 1)
				c := &crashRun{t: t, args: []string{"--log-level", "info", "restore", "-c", cfg, "--yes"}}
				c.atKill = func() string {
					recs, group := restoredCounts(t, want, addrs)
					return fmt.Sprintf("%d of %d records restored, %d group offsets committed", recs, wantTotal, group)
				}
				c.loop(rng, 1+rng.IntN(2), took)
				sameRestore(t, fmt.Sprintf("iteration %d", i), baseStore, want, addrs, wantRecs, wantGroup)
				t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers: equal", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers)
				total.add(c)
			}
			total.mustHaveKilled(t, name)
			t.Logf("%s: %d iterations, %d kills, %d runs ended before their kill, %d lock takeovers; records lost 0, duplicated 0", name, iterations, total.kills, total.finished, total.takeovers)
		})
	}

	t.Run("prune", func(t *testing.T) {
		// Four more backups of new orders, each with segments of its own.
		for n := range 4 {
			produceOrders(t, cl, crashOrders+300*n, 300)
			if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", backupYAML(base)); code != exitOK {
				t.Fatalf("backup %d: exit %d\n%s\n%s", n+2, code, stdout, stderr)
			}
		}
		before := completeIDs(t, baseStore)
		if len(before) != 5 {
			t.Fatalf("%d complete backups, want 5: %v", len(before), before)
		}
		prune := func(repo string) *crashRun {
			return &crashRun{t: t, args: []string{"--log-level", "info", "prune", "-c", backupYAML(repo), "--keep-last", "2"}}
		}
		ref := t.TempDir()
		copyTree(t, base, ref)
		code, stderr, took := prune(ref).once()
		if code != exitOK {
			t.Fatalf("uninterrupted prune: exit %d\n%s", code, stderr)
		}
		refStore, err := storage.NewFilesystem(ref)
		if err != nil {
			t.Fatal(err)
		}
		kept := completeIDs(t, refStore)
		if len(kept) != 2 {
			t.Fatalf("the uninterrupted prune kept %v, want the last 2 of %v", kept, before)
		}
		t.Logf("uninterrupted prune: %v, kept %v of %v", took, kept, before)
		var total crashRun
		for i := range iterations {
			repo := t.TempDir()
			copyTree(t, base, repo)
			store, err := storage.NewFilesystem(repo)
			if err != nil {
				t.Fatal(err)
			}
			c := prune(repo)
			// The re-run is the next day's prune: what the killed runs
			// left is older than prune's hour by then.
			c.beforeRerun = func() { ageTemps(t, repo, 2*time.Hour) }
			c.atKill = func() string {
				return fmt.Sprintf("%d of %d backups left, %d of %d segments", len(completeIDs(t, store)), len(before), filesEnding(t, repo, ".kseg"), filesEnding(t, base, ".kseg"))
			}
			c.loop(rng, 1+rng.IntN(2), took)
			if got := completeIDs(t, store); !slices.Equal(got, kept) {
				t.Fatalf("iteration %d: %v remain, the uninterrupted prune kept %v", i, got, kept)
			}
			for _, id := range kept {
				if code, stdout, stderr := runCLI(t, "verify", "-c", c.args[len(c.args)-3], "--backup-id", id, "--deep"); code != exitOK {
					t.Fatalf("iteration %d: verify --deep %s: exit %d\n%s\n%s", i, id, code, stdout, stderr)
				}
			}
			if a, b := repoFiles(t, ref), repoFiles(t, repo); !slices.Equal(a, b) {
				t.Errorf("iteration %d: the repository differs from the uninterrupted prune's: only there %v, only after the uninterrupted prune %v", i, without(b, a), without(a, b))
			}
			t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers: kept %v", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers, kept)
			total.add(c)
		}
		total.mustHaveKilled(t, "prune")
		t.Logf("prune: %d iterations, %d kills, %d runs ended before their kill, %d lock takeovers; backups lost 0", iterations, total.kills, total.finished, total.takeovers)
	})
}

// sameRestore asserts that the restore of backup m (in store) at addrs
// equals the uninterrupted restore's records (wantRecs) and committed
// group offsets (wantGroup): each partition holds the backup's count of
// records (exactly once), field for field and offset for offset.
func sameRestore(t *testing.T, what string, store storage.Backend, m *format.Manifest, addrs []string, wantRecs restorecheck.Records, wantGroup restorecheck.Offsets) {
	t.Helper()
	gotRecs, gotGroup := restored(t, m, addrs)
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range tp.PartitionCuts {
			what := fmt.Sprintf("%s: %s/%d", what, tp.Name, p.Partition)
			g, w := gotRecs[tp.Name][p.Partition], wantRecs[tp.Name][p.Partition]
			if n := len(backupcheck.Records(t, store, m, tp.Name, p.Partition)); len(g) != n {
				t.Errorf("%s: %d records on the target, the backup holds %d", what, len(g), n)
			}
			restorecheck.SameRecords(t, what, g, w, false)
			for k := range min(len(g), len(w)) {
				if g[k].Offset != w[k].Offset {
					t.Fatalf("%s: record %d at offset %d, the uninterrupted restore put it at %d", what, k, g[k].Offset, w[k].Offset)
				}
			}
		}
	}
	if gotGroup.String() != wantGroup.String() {
		t.Fatalf("%s: committed offsets %s, the uninterrupted restore committed %s", what, gotGroup, wantGroup)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// crashOrders is how many orders the crash loop adds to the sample's.
const crashOrders = 3000

// slowDown answers every request of kind key d late, without holding up
// the cluster's other connections (kfake's SleepControl).
func slowDown(c *kfake.Cluster, key kmsg.Key, d time.Duration) {
	c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

// produceOrders appends n orders of 200-byte values, numbered from first,
// over the three partitions of the sample's orders topic.
func produceOrders(t *testing.T, cl *kgo.Client, first, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Topic: sample.Orders, Partition: int32(i % 3), Key: fmt.Appendf(nil, "crash-%05d", i),
			Value: append(fmt.Appendf(nil, `{"order":%d,"pad":"`, i), bytes.Repeat([]byte("x"), 180)...)})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// ageTemps makes the temporary files under dir (storage.TempPrefix) look
// written d ago.
func ageTemps(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	at := time.Now().Add(-d)
	for _, f := range repoFiles(t, dir) {
		if strings.HasPrefix(filepath.Base(f), storage.TempPrefix) {
			if err := os.Chtimes(filepath.Join(dir, f), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// without returns the elements of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// filesEnding counts the files under dir whose names end with suffix.
func filesEnding(t *testing.T, dir, suffix string) int {
	t.Helper()
	n := 0
	for _, f := range repoFiles(t, dir) {
		if strings.HasSuffix(f, suffix) {
			n++
		}
	}
	return n
}

// restoredCounts counts the records on the restored topics of backup m at
// addrs (their end offsets) and the group offsets committed.
func restoredCounts(t *testing.T, m *format.Manifest, addrs []string) (records int64, group int) {
	t.Helper()
	adm := kadm.NewClient(testkit.Client(t, addrs))
	var names []string
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		names = append(names, tp.Name)
	}
	// A run killed before it created every topic leaves some missing.
	lo, err := adm.ListEndOffsets(t.Context(), names...)
	if err != nil {
		t.Fatalf("list end offsets of %v: %v", names, err)
	}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			records += o.Offset
		}
	})
	for _, parts := range restorecheck.GroupOffsets(t, adm, m.ApplicationID) {
		group += len(parts)
	}
	return records, group
}

// completeIDs lists the repository's complete backups, newest first.
func completeIDs(t *testing.T, store storage.Backend) []string {
	t.Helper()
	x, err := repository.ReadIndex(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	return x.CompleteIDs()
}

// restored reads back, with clients independent of the restorer, every
// restored topic of backup m on the cluster at addrs and the offsets the
// restore committed for the application's group.
func restored(t *testing.T, m *format.Manifest, addrs []string) (restorecheck.Records, restorecheck.Offsets) {
	t.Helper()
	adm := kadm.NewClient(testkit.Client(t, addrs))
	var names []string
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		names = append(names, tp.Name)
	}
	return restorecheck.ReadAll(t, addrs, restorecheck.EndOffsets(t, adm, names...)), restorecheck.GroupOffsets(t, adm, m.ApplicationID)
}

// sameCrashedBackup asserts that backup b (of a run killed and re-run)
// holds the cut of backup a (uninterrupted): the same group offsets, the
// same partitions with the same start and end offsets, and the same
// records, field for field.
func sameCrashedBackup(t *testing.T, sa storage.Backend, a *format.Manifest, sb storage.Backend, b *format.Manifest) {
	t.Helper()
	if a.Group == nil || b.Group == nil || len(a.Group.Offsets) == 0 || !slices.EqualFunc(a.Group.Offsets, b.Group.Offsets, func(x, y format.GroupOffset) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset
	}) {
		t.Fatalf("group offsets differ: %+v vs %+v", a.Group, b.Group)
	}
	ta, tb := slices.Concat(a.Topics, a.InFlight), slices.Concat(b.Topics, b.InFlight)
	if len(ta) != len(tb) {
		t.Fatalf("%d topics vs %d", len(ta), len(tb))
	}
	for i := range ta {
		if ta[i].Name != tb[i].Name || len(ta[i].PartitionCuts) != len(tb[i].PartitionCuts) {
			t.Fatalf("topic %q vs %q", ta[i].Name, tb[i].Name)
		}
		for k, pa := range ta[i].PartitionCuts {
			pb := tb[i].PartitionCuts[k]
			if pa.Partition != pb.Partition || pa.StartOffset != pb.StartOffset || pa.EndOffset != pb.EndOffset || pa.Records != pb.Records {
				t.Fatalf("%s/%d: cut %d..%d (%d records) vs %d..%d (%d)", ta[i].Name, pa.Partition, pa.StartOffset, pa.EndOffset, pa.Records, pb.StartOffset, pb.EndOffset, pb.Records)
			}
			ra, rb := backupcheck.Records(t, sa, a, ta[i].Name, pa.Partition), backupcheck.Records(t, sb, b, tb[i].Name, pb.Partition)
			if int64(len(rb)) != pb.Records {
				t.Fatalf("%s/%d: %d records read, the manifest says %d", tb[i].Name, pb.Partition, len(rb), pb.Records)
			}
			restorecheck.SameRecords(t, fmt.Sprintf("%s/%d", ta[i].Name, pa.Partition), rb, ra, false)
			for j := range min(len(ra), len(rb)) {
				if ra[j].Offset != rb[j].Offset {
					t.Fatalf("%s/%d record %d: offset %d vs %d", ta[i].Name, pa.Partition, j, ra[j].Offset, rb[j].Offset)
				}
			}
		}
	}
}

// TestCrashLoopS3Multipart is the crash loop's backup into S3 (versitygw)
// with segments above the 8 MiB multipart part size, so that kills land
// inside multipart uploads: each iteration SIGKILLs the backup once or
// twice at a random point of an uninterrupted run's length and runs it
// again to completion. The completed backup must equal the uninterrupted
// one record for record and group offset for group offset, verify --deep
// must pass, and no multipart upload may be left incomplete (the re-run
// aborts the killed run's). KDR_CRASH_ITERATIONS (default 6) and
// KDR_CRASH_SEED apply.
func TestCrashLoopS3Multipart(t *testing.T) {
	iterations, seed := crashLoopEnv(t)
	t.Logf("S3 crash loop: %d iterations, seed %d (replay: KDR_CRASH_SEED=%d KDR_CRASH_ITERATIONS=%d go test ./cmd/kafkastreams-dr -run '^TestCrashLoopS3Multipart$')", iterations, seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	srv := testkit.StartS3(t)
	srv.SetEnv(t)

	const (
		partitions = 2
		perPart    = 12000 // 1 KiB values: 12 MiB a partition, incompressible
	)
	src := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), partitions, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	data := rand.NewChaCha8([32]byte{1})
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPart {
			v := make([]byte, 1024)
			data.Read(v)
			recs = append(recs, &kgo.Record{Topic: "big", Partition: p, Key: fmt.Appendf(nil, "%d-%d", p, i), Value: v})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.AddOffset("big", 0, perPart/2, -1)
	offs.AddOffset("big", 1, perPart/3, -1)
	if err := adm.CommitAllOffsets(t.Context(), "big-app", offs); err != nil {
		t.Fatal(err)
	}

	open := func(prefix string) (storage.Backend, string) {
		store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		return store, writeFile(t, "s3.yaml", fmt.Sprintf(`application_id: big-app
source:
  bootstrap_servers: [%s]
  topics:
    include: [big]
storage:
  backend: s3
  bucket: %s
  prefix: %s
  region: %s
  endpoint: %s
  path_style: true
backup:
  segment_max_bytes: 10MiB
`, strings.Join(src.Addrs(), ", "), srv.Bucket, prefix, srv.Region, srv.Endpoint))
	}
	// uploads lists the multipart uploads in progress under prefix.
	uploads := func(prefix string) int {
		out, err := srv.Client().ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &srv.Bucket, Prefix: aws.String(prefix + "/")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}

	baseStore, baseCfg := open("base")
	full := &crashRun{t: t, args: []string{"--log-level", "info", "backup", "-c", baseCfg}}
	code, stderr, took := full.once()
	if code != exitOK {
		t.Fatalf("uninterrupted backup: exit %d\n%s", code, stderr)
	}
	want, err := repository.Latest(t.Context(), baseStore)
	if err != nil || want == nil {
		t.Fatalf("the uninterrupted backup: %v, %v", want, err)
	}
	big := 0
	for _, tp := range want.Topics {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				if s.Size > 8<<20 {
					big++
				}
			}
		}
	}
	if big == 0 {
		t.Fatalf("no segment of the uninterrupted backup is above the 8 MiB part size: no multipart upload to kill")
	}
	t.Logf("uninterrupted backup %s: %v, %d segments above the part size (multipart uploads)", want.BackupID, took, big)

	var total crashRun
	inside := 0
	for i := range iterations {
		prefix := fmt.Sprintf("crash-%d", i)
		store, cfg := open(prefix)
		c := &crashRun{t: t, args: []string{"--log-level", "info", "backup", "-c", cfg}}
		c.atKill = func() string {
			n := uploads(prefix)
			if n > 0 {
				inside++
			}
			return fmt.Sprintf("%d multipart uploads in progress", n)
		}
		c.loop(rng, 1+rng.IntN(2), took)
		if n := uploads(prefix); n != 0 {
			t.Errorf("iteration %d: %d multipart uploads left incomplete after the re-run", i, n)
		}
		ids := completeIDs(t, store)
		if len(ids) == 0 {
			t.Fatalf("iteration %d: no complete backup after the re-run", i)
		}
		got := backupcheck.Latest(t, store, ids[len(ids)-1])
		sameCrashedBackup(t, baseStore, want, store, got)
		if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--backup-id", got.BackupID, "--deep"); code != exitOK {
			t.Fatalf("iteration %d: verify --deep %s: exit %d\n%s\n%s", i, got.BackupID, code, stdout, stderr)
		}
		t.Logf("iteration %d: %d kills [%s] (%d runs ended before their kill), %d lock takeovers, %d complete backups: equal", i, c.kills, strings.Join(c.points, "; "), c.finished, c.takeovers, len(ids))
		total.add(c)
	}
	total.mustHaveKilled(t, "S3 backup")
	t.Logf("S3 backup: %d iterations, %d kills (%d inside a multipart upload), %d runs ended before their kill, %d lock takeovers; records lost 0, duplicated 0, uploads left 0", iterations, total.kills, inside, total.finished, total.takeovers)
}

// sampleConfig writes, as file name, the config of the sample application
// (internal/sample) backed up from the brokers src and restored to target
// (no target section when nil), followed by rest (its storage and backup
// sections).
func sampleConfig(t *testing.T, name string, src, target []string, rest string) string {
	t.Helper()
	targetYAML := ""
	if target != nil {
		targetYAML = fmt.Sprintf("target:\n  bootstrap_servers: [%s]\n", strings.Join(target, ", "))
	}
	return writeFile(t, name, fmt.Sprintf(`application_id: %s
source_changelog_topics: [%s]
source:
  bootstrap_servers: [%s]
  topics:
    include: ["%s"]
%s%s`, sample.AppID, strings.Join(sample.SourceChangelogs, ", "), strings.Join(src, ", "), strings.Join(sample.Include, `", "`), targetYAML, rest))
}
