package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

const (
	// eosRuns is the number of drills per group protocol.
	eosRuns = 3
	// eosSlowMs slows the source app's count per category (the
	// sub-topology behind the by-category repartition topic), in ms per
	// record: drill.slow.downstream.ms (e2e/streams-app).
	eosSlowMs = 15
	// eosBatch events are produced every eosEvery while the source app runs.
	eosBatch = 10
	eosEvery = 100 * time.Millisecond
	// At least eosBackups backups are taken, one every eosBackupEvery,
	// while the app runs, and up to eosMaxBackups until the latest holds
	// records in flight; the app is killed right after the last one.
	eosBackups     = 3
	eosMaxBackups  = 8
	eosBackupEvery = 2 * time.Second
	// eosMore events are produced on the target after the restore.
	eosMore = 60
)

// Drill 5, exactly-once recovery of a running app (issue 11): the drill app
// runs with exactly_once_v2 and a deliberately slow downstream sub-topology
// (drill.slow.downstream.ms), so that many records committed into its
// repartition topic are not yet counted at any moment. Events arrive while
// it runs; eosBackups backups are taken while it runs; the app is killed
// with SIGKILL right after the last one, its transactions open; the source
// cluster is destroyed. The latest backup is restored into a new cluster with
// the changelog strategy; the app starts there with an empty state dir and
// processes eosMore more events. Every output (latest value per key) must
// equal drillWant over the events below the restored input's cut (the N
// events the restored drill-events holds, checked to be a prefix of what
// was produced in each partition) followed by the M new ones: 0 lost, 0
// doubled. Subtests: the classic group protocol and the streams group
// protocol (KIP-1071, group.protocol=streams), eosRuns runs each.
//
// The outputs are judged once the restored app has caught up
// (eosAwaitOutputs): its lag at most 1 on every partition it consumes and
// its offsets and outputs unchanged for eosSettle; until then a count
// below the wanted one is "not counted yet", not "lost". A fixed drillWait
// made one run under -race on a loaded 2-core machine report "55 lost"
// while its app was still counting (docs/RELIABILITY.md, "The
// exactly-once drill on a loaded machine").
//
// Each run logs the records in flight at the cut: from the manifest (its
// group offsets' end_offset - offset on the repartition topics, and its
// in-flight tails once the backup captures them) and independently from
// the source cluster's internal topics (records read read_committed from
// the group's committed offset to the cut's end, after the kill and before
// the source is destroyed: at least the tail's, which holds only the
// transactions committed at the cut); and the lost and doubled events of drill-counts.
//
// Observed on the code before the in-flight tails (main at 7f3df37, Kafka
// 4.4.0, this test as committed first, on a shared 2-core machine): every
// run failed, lost and never doubled, each run losing exactly the
// by-category records in flight that it read on the source: classic
// 110, 18 and 180 events lost (121 in a lone first run), streams 244, 53
// and 25, of 600 to 620 events below the cut. drill-labeled was right in
// those runs although 10 to 128 foreign-key join records were in flight;
// the M events were then of the same users and overwrote most of their
// latest values (they are of other users since).
func TestDrillExactlyOnce(t *testing.T) {
	begin := time.Now()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	for _, proto := range []string{"classic", "streams"} {
		t.Run(proto, func(t *testing.T) {
			for run := 1; run <= eosRuns; run++ {
				t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
					st, err := storage.NewS3(context.Background(), storage.S3Options{Bucket: srv.Bucket,
						Prefix: fmt.Sprintf("drills/eos/%s/%d", proto, run), Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
					if err != nil {
						t.Fatal(err)
					}
					drillExactlyOnce(t, st, proto, uint64(10*run))
				})
			}
		})
	}
	t.Logf("TestDrillExactlyOnce took %v", time.Since(begin).Round(time.Millisecond))
}

// eosInFlight is what was in flight at a backup's cut on one internal
// topic of the app.
type eosInFlight struct {
	topic              string
	committed, cut     int64 // summed over the partitions
	records            int   // read read_committed in [committed, cut) on the source after the kill
	manifestTailRecord int64 // in the manifest's in-flight tails; -1 when it has none
	gapOffsets         int64 // offsets the manifest's tails record as gaps (deleted before read)
}

// drillExactlyOnce is one run of TestDrillExactlyOnce with the group
// protocol proto ("classic" or "streams"); seed makes its events.
func drillExactlyOnce(t *testing.T, store storage.Backend, proto string, seed uint64) {
	begin := time.Now()
	protoOpt := testkit.StreamsAppProperty("group.protocol", proto)
	var (
		produced []*kgo.Record // with the partition and offset the source gave them
		results  []*backup.Result
		inFlight []eosInFlight
		m        *format.Manifest
	)
	drillSourceRun(t, time.Now().Add(-time.Minute), func(t *testing.T, src *testkit.Kafka, cl *kgo.Client) {
		app := testkit.StartStreamsApp(t, src.Bootstrap(), protoOpt,
			testkit.StreamsAppProperty(testkit.StreamsAppSlowDownstreamMs, strconv.Itoa(eosSlowMs)))
		var (
			mu   sync.Mutex
			stop = make(chan struct{})
			done = make(chan error, 1)
		)
		go func() {
			// Bounded: at most 3000 events.
			for seq := 0; seq < 3000; seq += eosBatch {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				batch := drillEvents(seed, seq, eosBatch, time.Now(), time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := cl.ProduceSync(ctx, batch...).FirstErr()
				cancel()
				if err != nil {
					done <- fmt.Errorf("produce events %d..: %w", seq, err)
					return
				}
				mu.Lock()
				produced = append(produced, batch...)
				mu.Unlock()
				time.Sleep(eosEvery)
			}
			done <- nil
		}()
		// At least eosBackups backups; more (at most eosMaxBackups) while
		// the latest holds no committed record in flight in the
		// by-category repartition topic: under load the app's one
		// transaction can span all of that topic's records above the
		// group's offset at a cut, and such a run would test nothing of the
		// tails (its outputs are exact all the same).
		for i := 0; i < eosMaxBackups && (i < eosBackups || eosRepartitionTail(t, store, results[len(results)-1]) == 0); i++ {
			time.Sleep(eosBackupEvery)
			results = append(results, drillBackup(t, src, store))
		}
		// Kill the app while its transaction is open (its one stream thread
		// has one transactional producer, busy all the time here): SIGKILL,
		// no close, no commit; the transaction is left to time out.
		// Paused (SIGSTOP) while the check runs, so that the transaction
		// seen open is still open when the kill lands: an unpaused app could
		// commit it in between (seen once on an idle machine).
		for range 100 { // bounded: 100 tries, 5 s of waiting
			app.Pause(t)
			if eosOpenTransactions(t, src) > 0 {
				break
			}
			app.Resume(t)
			time.Sleep(50 * time.Millisecond)
		}
		app.Kill(t)
		open := eosOpenTransactions(t, src)
		if open < 1 {
			t.Errorf("no open transaction on the source after the kill, want the killed app's (a kill mid-stream)")
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		t.Logf("%d events produced while the app ran; %d backups taken; the app killed with %d open transactions (listed after the kill)",
			len(produced), len(results), open)
		mu.Unlock()
		for _, r := range results {
			bm := backupcheck.Latest(t, store, r.BackupID)
			t.Logf("backup %s: cut %s", r.BackupID, eosCut(bm.Cut))
		}
		m = backupcheck.Latest(t, store, results[len(results)-1].BackupID)
		if m.Group == nil || m.Group.Type != proto {
			t.Errorf("the latest backup's group %+v, want type %q (group.protocol=%s)", m.Group, proto, proto)
		}
		if m.Cut == nil || !m.Cut.Proven {
			t.Errorf("the latest backup's cut %s, want proven consistent with the app's transactions (docs/DESIGN.md invariant 1)", eosCut(m.Cut))
		}
		inFlight = eosSourceInFlight(t, src, m)
	})
	latest := results[len(results)-1]

	dst := testkit.StartKafka(t)
	rep := drillRestore(t, dst, store, restorer.Options{Strategy: restorer.StrategyChangelog})
	if rep.BackupID != latest.BackupID {
		t.Fatalf("restored backup %s, want the latest %s (taken while the app ran)", rep.BackupID, latest.BackupID)
	}

	// N: the events below the restored input's cut, per partition a prefix
	// of what was produced there; the restore holds exactly those.
	below := eosBelowCut(t, m, produced)
	restored := drillReadRestored(t, dst, testkit.StreamsAppEventsTopic)
	for p := range int32(drillPartitions) {
		var got, want []string
		for _, r := range restored[p] {
			got = append(got, string(r.Value))
		}
		for _, r := range below {
			if r.Partition == p {
				want = append(want, string(r.Value))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("restored %s/%d: %d records, want the %d produced below the cut %d", testkit.StreamsAppEventsTopic, p, len(got), len(want), drillCut(m, testkit.StreamsAppEventsTopic, p))
		}
	}
	// The M events are of other users ("n" + a user id): every drill-labeled
	// value of the N events' users is then theirs alone, and a lost
	// foreign-key join record shows.
	more := drillEvents(seed, 100000, eosMore, time.Now(), time.Millisecond)
	for _, r := range more {
		r.Key = append([]byte("n"), r.Key...)
	}
	want := drillWant(slices.Concat(below, more))

	app := testkit.StartStreamsApp(t, dst.Bootstrap(), protoOpt) // an empty state dir; not slowed
	drillProduce(t, testkit.Client(t, dst.Addrs()), more)
	// Judged once the app has caught up (eosAwaitOutputs): on a loaded
	// machine the restored app can still be counting after drillWait, and
	// "not yet counted" is not "lost".
	waitBegin := time.Now()
	got, ok, caughtUp, lag, why := eosAwaitOutputs(t, dst, want)
	waited := time.Since(waitBegin).Round(time.Millisecond)
	app.Stop(t)

	var flight []string
	for _, f := range inFlight {
		tail := "none"
		if f.manifestTailRecord >= 0 {
			tail = strconv.FormatInt(f.manifestTailRecord, 10)
		}
		if strings.HasSuffix(f.topic, "-by-category-repartition") && f.records == 0 {
			t.Errorf("%s: no record in flight at the cut, want the slow downstream sub-topology's lag (else this run tests nothing)", f.topic)
		}
		// The tail holds the transactions committed at the cut; the source,
		// read after the kill, also those open at the cut that committed
		// before the kill (their input is above the cut's group offsets and
		// is processed again on the target).
		if f.manifestTailRecord > int64(f.records) {
			t.Errorf("%s: the backup's in-flight tail holds %d records, more than the %d the source committed from the group's offset to the cut's end", f.topic, f.manifestTailRecord, f.records)
		}
		if f.gapOffsets > 0 {
			tail += fmt.Sprintf(" (with gaps over %d offsets)", f.gapOffsets)
		}
		flight = append(flight, fmt.Sprintf("%s: committed %d, cut %d, %d records read on the source, in the manifest's tails %s",
			strings.TrimPrefix(f.topic, drillApp+"-"), f.committed, f.cut, f.records, tail))
	}
	lost, doubled := eosLostDoubled(got[testkit.StreamsAppCountsTopic], want[testkit.StreamsAppCountsTopic])
	t.Logf("%s: N=%d events below the cut (of %d produced), M=%d; in flight at the cut:\n  %s\ndrill-counts: %d lost, %d doubled; outputs exact: %v after %v (the app caught up: %v; its lag on the target: %s); run took %v",
		proto, len(below), len(produced), len(more), strings.Join(flight, "\n  "), lost, doubled, ok, waited, caughtUp, lag, time.Since(begin).Round(time.Millisecond))
	if !ok {
		for _, topic := range slices.Sorted(maps.Keys(want)) {
			if d := drillDiff(got[topic], want[topic]); d != "" {
				t.Errorf("%s (latest value per key, read_committed), want every event below the cut and the %d more processed once:\n%s", topic, len(more), d)
			}
		}
		if d := eosCountsAgree(got); d != "" {
			t.Errorf("drill-counts and drill-window-counts disagree (%s): the same task updates both in one transaction, so a settled app shows state restored inconsistently, a running one outputs read mid-commit", d)
		}
		if !caughtUp {
			// Read after the app stopped: its own transactions are closed
			// by then; any other holds a last stable offset back.
			t.Fatalf("%s: the restored app did not catch up in %v (%s; lag %s; %d transactions open on the target after it stopped): outputs not judged; drill-counts %d events not counted yet, %d doubled",
				proto, waited, why, lag, eosOpenTransactions(t, dst), lost, doubled)
		}
		t.Fatalf("%s: outputs not exact with the app caught up (lag %s, offsets and outputs unchanged for %v): drill-counts %d events lost, %d doubled",
			proto, lag, eosSettle, lost, doubled)
	}
	drillCheckFinal(t, dst, want)
}

// eosBelowCut returns the produced events below the cut of m's
// drill-events, in the order they were produced.
func eosBelowCut(t *testing.T, m *format.Manifest, produced []*kgo.Record) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for _, r := range produced {
		cut := drillCut(m, testkit.StreamsAppEventsTopic, r.Partition)
		if cut < 0 {
			t.Fatalf("backup %s has no cut for %s/%d", m.BackupID, testkit.StreamsAppEventsTopic, r.Partition)
		}
		if r.Offset < cut {
			out = append(out, r)
		}
	}
	return out
}

// eosCut says how a backup's cut was taken and proven.
func eosCut(c *format.Cut) string {
	if c == nil {
		return "not recorded"
	}
	s := fmt.Sprintf("%s, proven %v after %d attempts, %d transactions waited for, %d ms", c.Method, c.Proven, c.Attempts, c.TransactionsWaited, c.DurationMillis)
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// eosLostDoubled sums, over the categories, how many events a count is
// below (lost) or above (doubled) the wanted one.
func eosLostDoubled(got, want map[string]string) (lost, doubled int) {
	for k, w := range want {
		wn, _ := strconv.Atoi(w)
		gn, _ := strconv.Atoi(got[k])
		if gn < wn {
			lost += wn - gn
		} else {
			doubled += gn - wn
		}
	}
	return lost, doubled
}

// eosOpenTransactions lists the source's ongoing transactions.
func eosOpenTransactions(t *testing.T, src cluster) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txs, err := admin(t, src).ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Logf("list the source's transactions: %v", err)
		return -1
	}
	return len(txs)
}

// eosSourceInFlight counts, on the source cluster and independently of the
// backup, the records of the app's repartition and foreign-key join topics
// that were in flight at m's cut: committed into the topic, at or after the
// group's committed offset (m.Group) and below the cut's end (the group
// offset's end_offset), read with a read_committed consumer of its own. It
// also gives the records of the manifest's in-flight tails per topic.
func eosSourceInFlight(t *testing.T, src cluster, m *format.Manifest) []eosInFlight {
	t.Helper()
	if m.Group == nil {
		t.Fatalf("backup %s has no group", m.BackupID)
	}
	byTopic := map[string]*eosInFlight{}
	parts := map[string]map[int32]kgo.Offset{}
	ends := map[string]map[int32]int64{}
	for _, o := range m.Group.Offsets {
		if !strings.HasSuffix(o.Topic, "-repartition") && !strings.HasSuffix(o.Topic, "-topic") {
			continue
		}
		f := byTopic[o.Topic]
		if f == nil {
			f = &eosInFlight{topic: o.Topic, manifestTailRecord: -1}
			byTopic[o.Topic] = f
			parts[o.Topic] = map[int32]kgo.Offset{}
			ends[o.Topic] = map[int32]int64{}
		}
		f.committed += o.Offset
		f.cut += o.EndOffset
		if o.EndOffset > o.Offset {
			parts[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
			ends[o.Topic][o.Partition] = o.EndOffset
		}
	}
	// A partition the group never committed is in flight from its start
	// (offset 0 here: Kafka Streams purges only what it committed).
	for _, tp := range m.InFlight {
		f := byTopic[tp.Name]
		if f == nil {
			f = &eosInFlight{topic: tp.Name, manifestTailRecord: -1}
			byTopic[tp.Name] = f
			parts[tp.Name] = map[int32]kgo.Offset{}
			ends[tp.Name] = map[int32]int64{}
		}
		for _, p := range tp.PartitionCuts {
			if _, ok := ends[tp.Name][p.Partition]; ok || p.EndOffset == 0 || slices.ContainsFunc(m.Group.Offsets, func(o format.GroupOffset) bool {
				return o.Topic == tp.Name && o.Partition == p.Partition
			}) {
				continue
			}
			f.cut += p.EndOffset
			parts[tp.Name][p.Partition] = kgo.NewOffset().At(0)
			ends[tp.Name][p.Partition] = p.EndOffset
		}
	}
	for topic, ps := range parts {
		if len(ps) == 0 {
			delete(parts, topic)
		}
	}
	if len(parts) > 0 {
		// The source is idle (the app killed): read until a poll of 2 s
		// brings nothing more; a read_committed fetch stops at the last
		// stable offset, below the killed app's open transactions.
		cl := testkit.Client(t, src.Addrs(), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumePartitions(parts))
		for range 15 { // bounded: 30 s
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			fs := cl.PollFetches(ctx)
			cancel()
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if end, ok := ends[r.Topic][r.Partition]; ok && r.Offset < end {
					byTopic[r.Topic].records++
				}
			})
			if n == 0 {
				break
			}
		}
		cl.Close()
	}
	for _, tp := range eosManifestInFlight(m) {
		if f := byTopic[tp.name]; f != nil {
			f.manifestTailRecord, f.gapOffsets = tp.records, tp.gapOffsets
		}
	}
	var out []eosInFlight
	for _, k := range slices.Sorted(maps.Keys(byTopic)) {
		out = append(out, *byTopic[k])
	}
	return out
}

type eosTail struct {
	name       string
	records    int64
	gapOffsets int64
}

// eosManifestInFlight is the records of the manifest's in-flight tails per
// topic (Manifest.InFlight).
func eosManifestInFlight(m *format.Manifest) []eosTail {
	var out []eosTail
	for _, tp := range m.InFlight {
		tail := eosTail{name: tp.Name}
		for _, p := range tp.PartitionCuts {
			tail.records += p.Records
			for _, g := range p.Gaps {
				tail.gapOffsets += g.To - g.From
			}
		}
		out = append(out, tail)
	}
	return out
}

// eosRepartitionTail is the number of records backup r's in-flight tails
// hold of the app's by-category repartition topic.
func eosRepartitionTail(t *testing.T, store storage.Backend, r *backup.Result) int64 {
	t.Helper()
	var n int64
	for _, tp := range backupcheck.Latest(t, store, r.BackupID).InFlight {
		if strings.HasSuffix(tp.Name, "-by-category-repartition") {
			for _, p := range tp.PartitionCuts {
				n += p.Records
			}
		}
	}
	return n
}

const (
	// eosSettle is how long the restored app's committed offsets and its
	// outputs must stay unchanged, with its lag at most 1 on every
	// partition it consumes, before its outputs are judged.
	eosSettle = 5 * time.Second
	// eosStall ends the wait when the app's committed offsets have not
	// moved for that long while it still lags (a stuck app).
	eosStall = time.Minute
	// eosCatchUpCap bounds the whole wait for an app that keeps making
	// progress but has not caught up (a loaded machine: under -race and
	// 2 busy cores it has needed more than drillWait).
	eosCatchUpCap = 5 * time.Minute
)

// eosLag is the restored app's lag on the target at one moment: per
// topic, summed over its partitions, the last stable offset minus the
// group's committed offset (the whole partition when the group has no
// offset there), for every topic the group has committed or the app reads
// as input.
type eosLag struct {
	byTopic   map[string]int64
	committed map[string]map[int32]int64
	max       int64    // the largest lag of one partition
	lagging   []string // the partitions lagging more than 1: committed, last stable offset, high watermark
	err       error
}

func (l eosLag) String() string {
	if l.err != nil {
		return "unknown: " + l.err.Error()
	}
	var parts []string
	for _, topic := range slices.Sorted(maps.Keys(l.byTopic)) {
		parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(topic, drillApp+"-"), l.byTopic[topic]))
	}
	s := fmt.Sprintf("%s (at most %d on one partition)", strings.Join(parts, ", "), l.max)
	if len(l.lagging) > 0 {
		// A last stable offset below the high watermark is a transaction
		// still open there.
		s += "; lagging: " + strings.Join(l.lagging, ", ")
	}
	return s
}

// caughtUp reports whether the app has consumed every record: a lag of at
// most 1 per partition, as an EOS consumer commits its position before
// the COMMIT marker that ends the partition (a control record, not to be
// consumed) when its transaction's is the last one.
func (l eosLag) caughtUp() bool { return l.err == nil && l.max <= 1 }

// eosReadLag reads the lag of group drillApp on c (eosLag).
func eosReadLag(t *testing.T, adm *kadm.Client) eosLag {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, drillApp)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return eosLag{err: fmt.Errorf("fetch the offsets of group %s: %w", drillApp, err)}
	}
	l := eosLag{byTopic: map[string]int64{}, committed: map[string]map[int32]int64{}}
	topics := []string{testkit.StreamsAppEventsTopic, testkit.StreamsAppCategoriesTopic}
	offs.Each(func(o kadm.OffsetResponse) {
		if l.committed[o.Topic] == nil {
			l.committed[o.Topic] = map[int32]int64{}
			if !slices.Contains(topics, o.Topic) {
				topics = append(topics, o.Topic)
			}
		}
		l.committed[o.Topic][o.Partition] = o.At
	})
	lsos, err := adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = lsos.Error()
	}
	if err != nil {
		return eosLag{err: fmt.Errorf("list the last stable offsets of %s: %w", strings.Join(topics, ", "), err)}
	}
	hws, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = hws.Error()
	}
	if err != nil {
		return eosLag{err: fmt.Errorf("list the high watermarks of %s: %w", strings.Join(topics, ", "), err)}
	}
	lsos.Each(func(lo kadm.ListedOffset) {
		at, ok := l.committed[lo.Topic][lo.Partition]
		if !ok || at < 0 {
			at = 0
		}
		lag := max(lo.Offset-at, 0)
		l.byTopic[lo.Topic] += lag
		l.max = max(l.max, lag)
		if lag > 1 {
			hw, _ := hws.Lookup(lo.Topic, lo.Partition)
			l.lagging = append(l.lagging, fmt.Sprintf("%s/%d committed %d, last stable %d, high watermark %d",
				strings.TrimPrefix(lo.Topic, drillApp+"-"), lo.Partition, at, lo.Offset, hw.Offset))
		}
	})
	slices.Sort(l.lagging)
	return l
}

// eosAwaitOutputs polls c's outputs (latest value per key, read_committed)
// until they equal want, and otherwise judges them only once the app has
// caught up: its lag at most 1 on every partition it consumes (eosLag)
// and its committed offsets and outputs unchanged for eosSettle. It gives
// up, not caught up, when the app's offsets have not moved for eosStall,
// or after eosCatchUpCap. It returns the outputs, whether they equal want,
// whether the app had caught up, its last lag and, when it had not, why
// the wait ended.
func eosAwaitOutputs(t *testing.T, c cluster, want map[string]map[string]string) (map[string]map[string]string, bool, bool, eosLag, string) {
	t.Helper()
	cl := testkit.Client(t, c.Addrs(),
		kgo.ConsumeTopics(slices.Sorted(maps.Keys(want))...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	adm := admin(t, c)
	got := map[string]map[string]string{}
	for topic := range want {
		got[topic] = map[string]string{}
	}
	begin := time.Now()
	lastChange, lastProgress := begin, begin
	lag := eosReadLag(t, adm)
	pastWait := false
	for {
		equal := true
		for topic, w := range want {
			equal = equal && maps.Equal(got[topic], w)
		}
		if equal {
			return got, true, true, lag, ""
		}
		now := time.Now()
		if !pastWait && now.Sub(begin) >= drillWait {
			pastWait = true
			lost, _ := eosLostDoubled(got[testkit.StreamsAppCountsTopic], want[testkit.StreamsAppCountsTopic])
			t.Logf("outputs not exact after %v (drill-counts %d events short), the app caught up: %v, its offsets last moved %v ago; lag %s",
				drillWait, lost, lag.caughtUp(), now.Sub(lastProgress).Round(time.Millisecond), lag)
		}
		switch {
		case lag.caughtUp() && now.Sub(lastProgress) >= eosSettle && now.Sub(lastChange) >= eosSettle:
			return got, false, true, lag, ""
		case now.Sub(lastProgress) >= eosStall:
			return got, false, false, lag, fmt.Sprintf("its committed offsets did not move for %v", eosStall)
		case now.Sub(begin) >= eosCatchUpCap:
			return got, false, false, lag, fmt.Sprintf("still making progress after %v", eosCatchUpCap)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Topic][string(r.Key)] != string(r.Value) {
				got[r.Topic][string(r.Key)] = string(r.Value)
				lastChange = time.Now()
			}
		})
		next := eosReadLag(t, adm)
		if next.err == nil && (lag.err != nil || !maps.EqualFunc(next.committed, lag.committed, maps.Equal)) {
			lastProgress = time.Now()
		}
		lag = next
	}
}

// eosCountsAgree checks an invariant of the app's outputs that holds at
// every transaction it commits: a category's count (drill-counts) is the
// sum of its window counts (drill-window-counts), both updated by the same
// task in the same transaction. It returns the categories where the
// outputs read disagree, "" when none: read from a settled app, a
// disagreement is state restored inconsistently (a cut that split a
// transaction); read from a running one, outputs read mid-commit.
func eosCountsAgree(got map[string]map[string]string) string {
	sums := map[string]int{}
	for k, v := range got[testkit.StreamsAppWindowCountsTopic] {
		cat, _, _ := strings.Cut(k, "@")
		n, _ := strconv.Atoi(v)
		sums[cat] += n
	}
	var out []string
	for _, cat := range slices.Sorted(maps.Keys(got[testkit.StreamsAppCountsTopic])) {
		n, _ := strconv.Atoi(got[testkit.StreamsAppCountsTopic][cat])
		if n != sums[cat] {
			out = append(out, fmt.Sprintf("%s: count %d, windows %d", cat, n, sums[cat]))
		}
	}
	return strings.Join(out, "; ")
}
