package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// backends are the repositories every test runs on: a local directory and
// S3 (versitygw; skipped when the binary is missing).
var backends = []struct {
	name string
	open func(t *testing.T) storage.Backend
}{
	{"filesystem", func(t *testing.T) storage.Backend {
		st, err := storage.NewFilesystem(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"s3", func(t *testing.T) storage.Backend {
		srv := testkit.StartS3(t)
		srv.SetEnv(t)
		st, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: "repo",
			Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

func options(kf *testkit.Kfake, store storage.Backend) backup.Options {
	return backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs,
		Include: sample.Include, Exclude: sample.Exclude, SourceClusterID: "test", SegmentMaxBytes: 4 << 10}
}

func produce(t *testing.T, cl *kgo.Client, topic string, part int32, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// chain backs the sample up four times, with records produced in between:
// an incremental chain where each manifest names its ancestors' segments.
// Before the third run customer-totals is deleted and recreated, so its
// first chain's segments are named only by the first two manifests.
func chain(t *testing.T, store storage.Backend) []*format.Manifest {
	t.Helper()
	ctx := t.Context()
	kf := testkit.StartKfake(t, 3)
	if err := sample.Seed(ctx, testkit.Client(t, kf.Addrs())); err != nil {
		t.Fatal(err)
	}
	kf.Compact()
	cl := testkit.Client(t, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	var ms []*format.Manifest
	run := func() {
		t.Helper()
		r, err := backup.Run(ctx, options(kf, store))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, backupcheck.Latest(t, store, r.BackupID))
	}
	run()
	produce(t, cl, sample.Orders, 1, 1000, 40)
	run()
	if _, err := adm.DeleteTopics(ctx, sample.Totals); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, sample.Totals); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, sample.Totals, 0, 0, 5)
	produce(t, cl, sample.Orders, 0, 2000, 30)
	run()
	produce(t, cl, sample.Payments, 0, 3000, 20)
	run()
	for i, m := range ms[1:] {
		if m.ParentBackupID != ms[i].BackupID {
			t.Fatalf("backup %s: parent %q, want %s", m.BackupID, m.ParentBackupID, ms[i].BackupID)
		}
	}
	return ms
}

// noSegmentReads fails any Get or List of segments/: List and Describe
// read manifests only.
type noSegmentReads struct {
	storage.Backend
	t *testing.T
}

func (s noSegmentReads) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if strings.HasPrefix(key, "segments/") {
		s.t.Errorf("Get(%q): a segment was read", key)
	}
	return s.Backend.Get(ctx, key)
}

func (s noSegmentReads) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if !strings.HasPrefix(prefix, "backups/") {
		s.t.Errorf("List(%q): only backups/ may be listed", prefix)
	}
	return s.Backend.List(ctx, prefix, fn)
}

func TestCatalog(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store := be.open(t)
			ms := chain(t, store)
			t.Run("list", func(t *testing.T) { testList(t, store, ms) })
			t.Run("describe", func(t *testing.T) { testDescribe(t, ms[3]) })
			t.Run("prune", func(t *testing.T) { testPrune(t, store, ms) })
		})
	}
}

func testList(t *testing.T, store storage.Backend, ms []*format.Manifest) {
	got, err := catalog.List(t.Context(), noSegmentReads{store, t})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ms) {
		t.Fatalf("List: %d backups, want %d", len(got), len(ms))
	}
	for i, s := range got {
		m := ms[len(ms)-1-i] // newest first
		var records, stored, raw, own int64
		segs := 0
		// In-flight tails included, as the backup's summary and verify
		// count them (list left them out without saying so).
		for _, tp := range slices.Concat(m.Topics, m.InFlight) {
			for _, p := range tp.PartitionCuts {
				records += p.Records
				for _, seg := range p.Segments {
					segs++
					stored += seg.Size
					raw += seg.RawSize
					if seg.BackupID == m.BackupID {
						own += seg.Size
					}
				}
			}
		}
		want := catalog.Summary{BackupID: m.BackupID, State: catalog.StateComplete, ParentBackupID: m.ParentBackupID,
			Topics: len(m.Topics) + len(m.InFlight), Records: records, Segments: segs, StoredBytes: stored, RawBytes: raw, OwnBytes: own,
			InFlightTopics: len(m.InFlight), InFlightRecords: m.InFlightRecords()}
		if len(m.InFlight) == 0 || m.InFlightRecords() == 0 {
			t.Fatalf("backup %s has no in-flight tail: the test shows nothing of their counts", m.BackupID)
		}
		if s.BackupID != want.BackupID || s.State != want.State || s.ParentBackupID != want.ParentBackupID || s.Topics != want.Topics ||
			s.Records != want.Records || s.Segments != want.Segments || s.StoredBytes != want.StoredBytes ||
			s.RawBytes != want.RawBytes || s.OwnBytes != want.OwnBytes || s.InFlightTopics != want.InFlightTopics || s.InFlightRecords != want.InFlightRecords {
			t.Errorf("summary %d:\n got %+v\nwant %+v", i, s, want)
		}
		if s.CompressionRatio <= 1 || !s.CutAt.Equal(m.CutAt) || s.Partitions == 0 {
			t.Errorf("summary %d: ratio %.2f cut %v partitions %d", i, s.CompressionRatio, s.CutAt, s.Partitions)
		}
	}
	if got[0].OwnSegments == 0 || got[0].OwnSegments >= got[0].Segments {
		t.Errorf("latest backup: %d own segments of %d; want some, not all (incremental)", got[0].OwnSegments, got[0].Segments)
	}
}

func testDescribe(t *testing.T, m *format.Manifest) {
	d := catalog.Describe(m)
	if len(d.Topics) != len(m.Topics) || d.Group == nil || len(d.Group.Offsets) == 0 {
		t.Fatalf("Describe: %d topics, group %v", len(d.Topics), d.Group)
	}
	for i, tp := range m.Topics {
		td := d.Topics[i]
		if td.Name != tp.Name || len(td.Cuts) != len(tp.PartitionCuts) || td.Configs["cleanup.policy"].Value == nil {
			t.Fatalf("topic %s: %+v", tp.Name, td)
		}
		for j, p := range tp.PartitionCuts {
			pd := td.Cuts[j]
			if pd.Partition != p.Partition || pd.StartOffset != p.StartOffset || pd.EndOffset != p.EndOffset ||
				pd.Records != p.Records || pd.Segments != len(p.Segments) || len(pd.Gaps) != len(p.Gaps) {
				t.Errorf("%s/%d: %+v; manifest %+v", tp.Name, p.Partition, pd, p)
			}
		}
	}
}

// keys returns every object key of the repository with its size.
func keys(t *testing.T, store storage.Backend) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := store.List(t.Context(), "", func(oi storage.ObjectInfo) error {
		out[oi.Key] = oi.Size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func put(t *testing.T, store storage.Backend, key string, b []byte) {
	t.Helper()
	if err := store.Put(t.Context(), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// asProgress writes m as the progress.json of a run with id.
func asProgress(t *testing.T, store storage.Backend, m *format.Manifest, id string) {
	t.Helper()
	c := *m
	c.BackupID, c.State, c.ParentBackupID, c.FinishedAt = id, format.StateRunning, m.BackupID, time.Time{}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	put(t, store, format.ProgressKey(id), b)
}

// checkReferencesExist fails unless every segment that a manifest.json or
// progress.json in the repository names exists: no dangling reference.
func checkReferencesExist(t *testing.T, store storage.Backend) {
	t.Helper()
	have := keys(t, store)
	for k := range have {
		if !strings.HasPrefix(k, "backups/") {
			continue
		}
		rc, err := store.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		m, err := format.ReadManifest(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for _, tp := range slices.Concat(m.Topics, m.InFlight) {
			for _, p := range tp.PartitionCuts {
				for _, s := range p.Segments {
					if _, ok := have[s.Key]; !ok {
						t.Errorf("%s names %s, which is gone", k, s.Key)
					}
				}
			}
		}
	}
}

func idAfter(t *testing.T, id string, d time.Duration) string {
	t.Helper()
	at, err := format.BackupIDTime(id)
	if err != nil {
		t.Fatal(err)
	}
	return format.NewBackupID(at.Add(d), [4]byte{0xab, 0xcd, 0, 1})
}

func testPrune(t *testing.T, store storage.Backend, ms []*format.Manifest) {
	ctx := t.Context()
	b1, b2, b3, b4 := ms[0].BackupID, ms[1].BackupID, ms[2].BackupID, ms[3].BackupID

	// Besides the chain: an abandoned run (older than the latest complete
	// backup) with a segment it wrote but never named, a running one
	// (newer) likewise, a segment of b2 no manifest names, and restore
	// journals of b1 and b4.
	abandoned, running := idAfter(t, b2, time.Millisecond), idAfter(t, b4, time.Millisecond)
	asProgress(t, store, ms[1], abandoned)
	asProgress(t, store, ms[3], running)
	abandonedSeg := format.SegmentKey(abandoned, sample.Orders, 0, 7)
	runningSeg := format.SegmentKey(running, sample.Orders, 0, 7)
	strayB2 := format.SegmentKey(b2, sample.Orders, 2, 9999)
	for _, k := range []string{abandonedSeg, runningSeg, strayB2} {
		put(t, store, k, []byte("unnamed segment"))
	}
	journal1, journal4 := "restores/journals/"+b1+"/kfake.json", "restores/journals/"+b4+"/kfake.json"
	put(t, store, journal1, []byte("{}"))
	put(t, store, journal4, []byte("{}"))

	// The first chain of customer-totals: named only by b1 and b2.
	oldTotals := map[string]bool{}
	for _, m := range ms[:2] {
		for _, p := range backupcheck.Topic(m, sample.Totals).PartitionCuts {
			for _, s := range p.Segments {
				oldTotals[s.Key] = true
			}
		}
	}
	if len(oldTotals) == 0 {
		t.Fatal("the first chain of customer-totals has no segment")
	}
	// The in-flight tails of b1 and b2: each backup's own, never chained,
	// so they go with their backups.
	oldTails := map[string]bool{}
	for _, m := range ms[:2] {
		for _, tp := range m.InFlight {
			for _, p := range tp.PartitionCuts {
				for _, s := range p.Segments {
					oldTails[s.Key] = true
				}
			}
		}
	}
	if len(oldTails) == 0 {
		t.Fatal("b1 and b2 hold no in-flight tail")
	}

	// Refused while a live run holds a lock: a backup, or a restore.
	now := time.Now().UTC().Format(time.RFC3339Nano)
	live := fmt.Appendf(nil, `{"owner":"20260101T000000.000Z-00000000","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, now, now)
	for _, lockKey := range []string{format.LockKey, "restores/locks/kfake"} {
		put(t, store, lockKey, live)
		before := keys(t, store)
		_, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 1}})
		if !errors.Is(err, catalog.ErrLocked) || !strings.Contains(err.Error(), "other-host") {
			t.Fatalf("prune with a live %s: err = %v; want ErrLocked naming the holder", lockKey, err)
		}
		if after := keys(t, store); len(after) != len(before) {
			t.Fatalf("refused prune (%s) changed the repository: %d objects, then %d", lockKey, len(before), len(after))
		}
		if err := store.Delete(ctx, lockKey); err != nil {
			t.Fatal(err)
		}
	}

	// Refused without a policy.
	if _, err := catalog.Prune(ctx, store, catalog.PruneOptions{}); !errors.Is(err, catalog.ErrNoPolicy) {
		t.Fatalf("no policy: err = %v", err)
	}

	// --dry-run deletes nothing but says what it would.
	before := keys(t, store)
	dry, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 2}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := keys(t, store); len(after) != len(before) {
		t.Fatalf("dry run changed the repository: %d objects, then %d", len(before), len(after))
	}
	// The old customer-totals chain, the stray b2 segment, the abandoned
	// run's segment.
	if !dry.DryRun || dry.Forgotten != 2 || dry.Progress != 1 || dry.Segments != len(oldTotals)+len(oldTails)+2 || dry.SegmentBytes == 0 || dry.Journals != 1 {
		t.Fatalf("dry run: %+v", dry)
	}
	wantDecisions := []struct {
		id   string
		keep bool
	}{{running, true}, {b4, true}, {b3, true}, {abandoned, false}, {b2, false}, {b1, false}}
	for i, w := range wantDecisions {
		if d := dry.Backups[i]; d.BackupID != w.id || d.Keep != w.keep || d.Reason == "" {
			t.Errorf("decision %d: %s keep %v (%s); want %s keep %v", i, d.BackupID, d.Keep, d.Reason, w.id, w.keep)
		}
	}

	// A crash after the forget phase: b1's manifest and the abandoned
	// progress are gone; nothing a remaining manifest names is.
	crash := errors.New("crash")
	catalog.SetAfterForget(t, func() error { return crash })
	if _, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 3}}); !errors.Is(err, crash) {
		t.Fatalf("crashed prune: err = %v", err)
	}
	catalog.SetAfterForget(t, nil)
	after := keys(t, store)
	for _, k := range []string{format.ManifestKey(b1), format.ProgressKey(abandoned)} {
		if _, ok := after[k]; ok {
			t.Errorf("after the forget phase %s still exists", k)
		}
	}
	if _, ok := after[format.LockKey]; ok {
		t.Errorf("the crashed prune left its lock")
	}
	for k := range oldTotals {
		if _, ok := after[k]; !ok {
			t.Errorf("the forget phase deleted segment %s", k)
		}
	}
	checkReferencesExist(t, store)

	// The real prune: keep the last 2.
	res, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Forgotten != 1 || res.Segments != len(oldTotals)+len(oldTails)+2 || res.Journals != 1 || len(res.Missing) != 0 {
		t.Fatalf("prune: %+v", res)
	}
	checkReferencesExist(t, store)
	after = keys(t, store)
	for k := range oldTotals {
		if _, ok := after[k]; ok {
			t.Errorf("segment %s of the forgotten chain is still there", k)
		}
	}
	for k := range oldTails {
		if _, ok := after[k]; ok {
			t.Errorf("in-flight segment %s of a forgotten backup is still there", k)
		}
	}
	for k, want := range map[string]bool{abandonedSeg: false, strayB2: false, runningSeg: true, journal1: false, journal4: true,
		format.ManifestKey(b2): false, format.ManifestKey(b3): true, format.ManifestKey(b4): true, format.ProgressKey(running): true} {
		if _, ok := after[k]; ok != want {
			t.Errorf("after prune: %s exists %v, want %v", k, ok, want)
		}
	}
	list, err := catalog.List(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].State != catalog.StateRunning || list[1].BackupID != b4 || list[2].BackupID != b3 {
		t.Fatalf("after prune: %+v", list)
	}

	// Pruning again finds nothing to do.
	if again, err := catalog.Prune(ctx, store, catalog.PruneOptions{Policy: catalog.Policy{Last: 2}}); err != nil || again.Forgotten+again.Segments+again.Progress+again.Journals != 0 {
		t.Fatalf("second prune: %+v, %v", again, err)
	}

	// Every kept backup restores, whole.
	for _, m := range ms[2:] {
		restoreAndCount(t, store, m)
	}
}

// restoreAndCount restores backup m into a new kfake cluster and checks
// that each partition holds the manifest's record count.
func restoreAndCount(t *testing.T, store storage.Backend, m *format.Manifest) {
	t.Helper()
	ctx := t.Context()
	dst := testkit.StartKfake(t, 3)
	rep, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
		BackupID: m.BackupID, ApplicationID: sample.AppID})
	if err != nil {
		t.Fatalf("restore of kept backup %s: %v", m.BackupID, err)
	}
	if len(rep.Skipped) != 0 {
		t.Fatalf("restore of %s skipped %v", m.BackupID, rep.Skipped)
	}
	adm := testkit.Admin(t, dst.Addrs())
	var topics []string
	for _, tp := range m.Topics {
		topics = append(topics, tp.Name)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	var restored int64
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			o, ok := ends.Lookup(tp.Name, p.Partition)
			if !ok || o.Err != nil || o.Offset != p.Records {
				t.Errorf("backup %s: %s/%d restored end %d (%v); manifest holds %d records", m.BackupID, tp.Name, p.Partition, o.Offset, o.Err, p.Records)
			}
			restored += o.Offset
		}
	}
	t.Logf("backup %s: %d records restored", m.BackupID, restored)
}
