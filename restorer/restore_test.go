package restorer_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// backedUpSample seeds a kfake cluster with the sample app, compacts it and
// backs it up into a local repository.
func backedUpSample(t *testing.T) (*testkit.Kfake, storage.Backend, *format.Manifest) {
	t.Helper()
	src := testkit.StartKfake(t, 3)
	ctx := context.Background()
	if err := sample.Seed(ctx, testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	src.Compact()
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include, SegmentMaxBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return src, store, backupcheck.Latest(t, store, res.BackupID)
}

func TestRestoreRoundTripOnKfake(t *testing.T) {
	src, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}

	dry := o
	dry.DryRun = true
	plan, err := restorer.Run(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if topics, _ := testkit.Admin(t, dst.Addrs()).ListTopics(ctx); len(topics) != 0 {
		t.Fatalf("dry run created topics: %v", topics.Names())
	}

	began := time.Now()
	rep, err := restorer.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restore took %s", time.Since(began))
	if !rep.Committed || !rep.WipeState || rep.RestoreID == "" {
		t.Fatalf("report: committed %v wipe %v id %q", rep.Committed, rep.WipeState, rep.RestoreID)
	}
	restored := restorecheck.Records{}
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			want := backupcheck.Records(t, store, m, tp.Name, p.Partition)
			got, err := sample.ReadCommitted(ctx, dst.Addrs(), tp.Name, map[int32]int64{p.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if restored[tp.Name] == nil {
				restored[tp.Name] = map[int32][]format.Record{}
			}
			restored[tp.Name][p.Partition] = got
			if len(got) != len(want) {
				t.Fatalf("%s/%d: %d records restored, backup has %d", tp.Name, p.Partition, len(got), len(want))
			}
			for i := range got {
				w := want[i]
				w.Offset = int64(i) // renumbered from 0
				g := got[i]
				if len(g.Headers) == 0 {
					g.Headers = nil
				}
				if len(w.Headers) == 0 {
					w.Headers = nil
				}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("%s/%d record %d:\n got %+v\nwant %+v", tp.Name, p.Partition, i, g, w)
				}
			}
		}
	}
	// The state of every changelog partition is proven: the report says
	// equal, and the records read here digest to the manifest's.
	if n := restorecheck.StateDigests(t, m, rep, restored); n != 4 {
		t.Errorf("%d changelog partitions proven, want 4 (the changelog's 2 and customers' 2)", n)
	}
	// The group's offsets on the target equal the plan's and the dry run's.
	got, err := testkit.Admin(t, dst.Addrs()).FetchOffsets(ctx, sample.AppID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, op := range rep.Group.Offsets {
		if op != plan.Group.Offsets[i] {
			t.Errorf("offset %d: restore %+v, dry run predicted %+v", i, op, plan.Group.Offsets[i])
		}
		if op.Action != "commit" {
			if _, ok := got.Lookup(op.Topic, op.Partition); ok {
				t.Errorf("dropped offset %s/%d was committed", op.Topic, op.Partition)
			}
			continue
		}
		n++
		if o, ok := got.Lookup(op.Topic, op.Partition); !ok || o.At != op.Translated {
			t.Errorf("%s/%d: target has %+v, want %d", op.Topic, op.Partition, o, op.Translated)
		}
	}
	// 5 of the 6 in the backup, and the 4 partitions of the in-flight
	// tails (the group committed one of them on the source).
	if n != 9 {
		t.Fatalf("%d offsets committed, want 9 (the 5 of inputs and outputs, and the 4 of the in-flight tails)", n)
	}
	if rep.InFlight == nil || !rep.InFlight.Restored || rep.InFlight.Records != 8 || rep.InFlight.Lost() != 0 {
		t.Errorf("report in flight %+v: want 8 records restored", rep.InFlight)
	}
	restorecheck.InFlight(t, src.Addrs(), dst.Addrs(), testkit.Admin(t, src.Addrs()), testkit.Admin(t, dst.Addrs()), sample.AppID,
		restorecheck.GroupOffsets(t, testkit.Admin(t, src.Addrs()), sample.AppID), m)
}

func TestRestoreRefusesPITROnChangelogs(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 1)
	at := time.Now()
	_, err := restorer.Run(context.Background(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ToTime: &at, ReplicationFactor: 1})
	var re *restorer.RefusedError
	if !errors.As(err, &re) || re.Hint == "" {
		t.Fatalf("err = %v; want a refusal with a hint", err)
	}
	if topics, _ := kadm.NewClient(testkit.Client(t, dst.Addrs())).ListTopics(context.Background()); len(topics) != 0 {
		t.Fatalf("refused restore created topics: %v", topics.Names())
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// TestRestoreResumesAfterAFailure: a restore that fails midway (the target
// rejects produce requests) is resumed by running it again: the journal
// says this restore created the now non-empty topics, and every record ends
// up on the target exactly once (field case 23: a resumed restore into topics it created).
func TestRestoreResumesAfterAFailure(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Concurrency: 1}

	failing, _ := failProducesAfter(dst, 4)
	if _, err := restorer.Run(ctx, o); err == nil {
		t.Fatal("the injected produce failure did not fail the restore")
	}
	failing.Store(false)

	// Another restore of the same backup, other strategy: refused (the
	// topics are not empty and not its own).
	other := o
	other.Strategy = restorer.StrategyRebuild
	var re *restorer.RefusedError
	if _, err := restorer.Run(ctx, other); !errors.As(err, &re) {
		t.Fatalf("a different restore into the half-restored target: err = %v, want a refusal", err)
	}

	plan := o
	plan.DryRun = true
	p, err := restorer.Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0
	for _, tp := range p.Topics {
		if tp.Action == "resume" {
			resumed++
		}
	}
	if resumed == 0 {
		t.Fatalf("no topic planned as resume: %+v", p.Topics)
	}
	rep, err := restorer.Run(ctx, o)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if !rep.Committed {
		t.Fatal("offsets not committed")
	}
	// The in-flight tails resume like the other topics: exactly once.
	restoredOnce(t, store, m, dst.Addrs())
}

// TestRestoreIntoPreCreatedTopicsResumesAfterAFailure: a restore into
// topics an operator created empty beforehand (the "fill" plan), failed
// midway, is resumed by running it again, every record exactly once. It
// was refused: "not empty and was not created by an earlier run of this
// restore" (issue 14), since only created topics were journaled; a
// CreateTopics that timed out while the broker created the topic left the
// same state.
func TestRestoreIntoPreCreatedTopicsResumesAfterAFailure(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	adm := kadm.NewClient(testkit.Client(t, dst.Addrs()))
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		var configs map[string]*string
		if c, ok := tp.Configs["cleanup.policy"]; ok && c.Value != nil {
			configs = map[string]*string{"cleanup.policy": c.Value}
		}
		if _, err := adm.CreateTopic(ctx, int32(tp.Partitions), int16(tp.ReplicationFactor), configs, tp.Name); err != nil {
			t.Fatal(err)
		}
	}
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Concurrency: 1}
	plan := o
	plan.DryRun = true
	p, err := restorer.Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range p.Topics {
		if tp.Action != format.ActionFill {
			t.Fatalf("topic %q planned %q into a pre-created empty topic, want fill", tp.Topic, tp.Action)
		}
	}

	failing, produces := failProducesAfter(dst, 4)
	if _, err := restorer.Run(ctx, o); err == nil {
		t.Fatal("the injected produce failure did not fail the restore")
	}
	failing.Store(false)
	if produces.Load() <= 4 {
		t.Fatalf("%d produce requests: the failure came before any record was written", produces.Load())
	}

	rep, err := restorer.Run(ctx, o)
	if err != nil {
		t.Fatalf("re-run into the pre-created topics it half filled: %v", err)
	}
	if !rep.Committed {
		t.Fatal("offsets not committed")
	}
	restoredOnce(t, store, m, dst.Addrs())
}

// TestConcurrentRestoresNeverDuplicate is a regression test: two restores
// started together into one target both found the topics resumable and
// wrote every record twice (found by a new-user test). The restore lock
// lets one through; the other is refused or finds the restore complete.
func TestConcurrentRestoresNeverDuplicate(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store}
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := restorer.Run(ctx, o); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil && !errors.Is(err, restorer.ErrLocked) {
			t.Fatalf("concurrent restore: %v", err)
		}
	}
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, pc := range tp.PartitionCuts {
			got, err := sample.ReadCommitted(ctx, dst.Addrs(), tp.Name, map[int32]int64{pc.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != pc.Records {
				t.Fatalf("%s/%d: %d records on the target, the backup has %d", tp.Name, pc.Partition, len(got), pc.Records)
			}
		}
	}
}

// TestRerunOfACompleteRestoreLeavesTheGroupAlone is a regression test: a
// second run of a finished restore committed the translated offsets again,
// moving back a group that had consumed since.
func TestRerunOfACompleteRestoreLeavesTheGroupAlone(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store}
	if _, err := restorer.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	adm := testkit.Admin(t, dst.Addrs())
	moved := kadm.Offsets{}
	moved.AddOffset(sample.Orders, 0, 15, -1)
	if err := adm.CommitAllOffsets(ctx, sample.AppID, moved); err != nil {
		t.Fatal(err)
	}
	rep, err := restorer.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Records != 0 {
		t.Fatalf("re-run: complete %v, records %d; want a complete restore that writes nothing", rep.Complete, rep.Records)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "moved on orders/0") {
		t.Errorf("no warning that the group moved: %q", rep.Warnings)
	}
	got, err := adm.FetchOffsets(ctx, sample.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup(sample.Orders, 0); o.At != 15 {
		t.Fatalf("orders/0 is at %d after the re-run, want the consumer's 15", o.At)
	}
}

func TestRestoreRefusals(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	at := time.Now()
	tests := []struct {
		name string
		o    restorer.Options
		want string
	}{
		{"point in time with the changelog strategy, changelogs left out",
			restorer.Options{ToTime: &at, Topics: []string{sample.Orders}}, "needs --strategy rebuild"},
		{"rebuild of changelogs only",
			restorer.Options{Strategy: restorer.StrategyRebuild, Topics: []string{sample.Changelog}}, "nothing to restore"},
		{"topics matching nothing", restorer.Options{Topics: []string{"nope-*"}}, "matches no topic"},
		{"another application's config", restorer.Options{ApplicationID: "billing"}, `application.id "order-processor"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Target, tc.o.Store = []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, store
			_, err := restorer.Run(context.Background(), tc.o)
			var re *restorer.RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want a refusal saying %q", err, tc.want)
			}
		})
	}
	if topics, _ := testkit.Admin(t, dst.Addrs()).ListTopics(context.Background()); len(topics) != 0 {
		t.Fatalf("refused restores created topics: %v", topics.Names())
	}
}

// failProducesAfter makes dst answer every produce request after the first
// n with INVALID_RECORD for each partition, until failing is set false;
// produces counts the requests seen while failing.
func failProducesAfter(dst *testkit.Kfake, n int32) (failing *atomic.Bool, produces *atomic.Int32) {
	failing, produces = new(atomic.Bool), new(atomic.Int32)
	failing.Store(true)
	dst.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		if !failing.Load() || produces.Add(1) <= n {
			return nil, nil, false // the first produce requests go through
		}
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.InvalidRecord.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return failing, produces
}

// restoredOnce asserts that every partition of backup m (in-flight tails
// included) is on the cluster at addrs exactly once: its records, read
// with franz-go's consumer, at offsets 0..n-1 with the backup's keys and
// values in order.
func restoredOnce(t *testing.T, store storage.Backend, m *format.Manifest, addrs []string) {
	t.Helper()
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, pc := range tp.PartitionCuts {
			want := backupcheck.Records(t, store, m, tp.Name, pc.Partition)
			got, err := sample.ReadCommitted(t.Context(), addrs, tp.Name, map[int32]int64{pc.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s/%d: %d records on the target, backup has %d", tp.Name, pc.Partition, len(got), len(want))
			}
			for i := range got {
				if got[i].Offset != int64(i) || string(got[i].Key) != string(want[i].Key) || string(got[i].Value) != string(want[i].Value) {
					t.Fatalf("%s/%d record %d: got %+v want %+v", tp.Name, pc.Partition, i, got[i], want[i])
				}
			}
		}
	}
}
