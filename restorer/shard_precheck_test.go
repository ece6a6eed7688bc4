package restorer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestShardPrechecksItsOwnPartitions: a shard of a sharded restore whose
// run has its topics created prechecks only the partitions the run assigns
// to it (each shard read every segment of the backup: N times the reads,
// docs/DESIGN.md "Sharded restore"), and refuses damage in them before its
// first write; shard 0 of a new run, which creates every topic, prechecks
// every segment first.
func TestShardPrechecksItsOwnPartitions(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	const run = "run-1"
	shard := func(i int) restorer.Options {
		return restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID,
			Shard: &restorer.Shard{Index: i, Count: 2, Run: run}}
	}
	flip := func(s format.Segment) (restore func()) {
		b := getObject(t, store, s.Key)
		d := append([]byte(nil), b...)
		d[len(d)/2] ^= 0x40
		putObject(t, store, s.Key, d)
		return func() { putObject(t, store, s.Key, b) }
	}
	var segs []struct {
		topic string
		p     int32
		s     format.Segment
	}
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			if len(p.Segments) > 0 && p.Segments[0].Records > 0 {
				segs = append(segs, struct {
					topic string
					p     int32
					s     format.Segment
				}{tp.Name, p.Partition, p.Segments[0]})
			}
		}
	}

	// Shard 0 of a new run creates every topic: it prechecks every segment.
	undo := flip(segs[len(segs)-1].s)
	_, err := restorer.Run(ctx, shard(0))
	if de, ok := errors.AsType[*restorer.DamageError](err); !ok || de.Written || de.RunWritten || !errors.Is(err, restorer.ErrNothingWritten) {
		t.Fatalf("shard 0 of a new run: %v; want a *restorer.DamageError before the first write of the run", err)
	}
	if topics, _ := testkit.Admin(t, dst.Addrs()).ListTopics(ctx); len(topics) != 0 {
		t.Fatalf("shard 0 created topics with a damaged segment: %v", topics.Names())
	}
	undo()
	rep, err := restorer.Run(ctx, shard(0))
	if err != nil || len(rep.ShardsPending) != 1 || rep.ShardsPending[0] != 1 {
		t.Fatalf("shard 0: %v, report %+v; want shard 1 pending", err, rep)
	}
	var sr format.RestoreShardRun
	if err := json.Unmarshal(getObject(t, store, format.RestoreShardRunKey(run)), &sr); err != nil {
		t.Fatal(err)
	}
	var own0, own1 format.Segment
	var own1Topic string
	var own1Partition int32
	for _, sg := range segs {
		switch {
		case sr.Owns(0, sg.topic, sg.p) && own0.Key == "":
			own0 = sg.s
		case sr.Owns(1, sg.topic, sg.p) && own1.Key == "":
			own1, own1Topic, own1Partition = sg.s, sg.topic, sg.p
		}
	}
	if own0.Key == "" || own1.Key == "" {
		t.Fatalf("assignment %+v: want a segment of records in each shard", sr.Assignment)
	}

	// Shard 1 prechecks its own partitions: damage in one of them is
	// refused before it writes, and only it is named (not shard 0's).
	flip(own0)
	undo = flip(own1)
	_, err = restorer.Run(ctx, shard(1))
	de, ok := errors.AsType[*restorer.DamageError](err)
	if !ok || de.Written || !errors.Is(err, restorer.ErrNothingWritten) {
		t.Fatalf("shard 1: %v; want a *restorer.DamageError before the first write", err)
	}
	if !de.RunWritten {
		// The CLI said "nothing was written" with shard 0's topics and
		// records on the target (new-user pass).
		t.Errorf("shard 1's damage says its run wrote nothing to the target; shard 0 created every topic and restored its partitions")
	}
	if len(de.Damaged) != 1 || de.Damaged[0].Key != own1.Key {
		t.Errorf("shard 1 names %+v; want only its own damaged segment %s (shard 0's %s is not its to read)", de.Damaged, own1.Key, own0.Key)
	}
	ends, err := testkit.Admin(t, dst.Addrs()).ListEndOffsets(ctx, own1Topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(own1Topic, own1Partition); o.Offset != 0 {
		t.Errorf("%s/%d holds %d records after shard 1 was refused; want none", own1Topic, own1Partition, o.Offset)
	}

	// Its own segments whole, shard 1 restores its partitions and completes
	// the restore: shard 0's damaged segment is not read again.
	undo()
	rep, err = restorer.Run(ctx, shard(1))
	if err != nil || !rep.Committed || len(rep.ShardsPending) != 0 {
		t.Fatalf("shard 1: %v, report %+v; want the restore completed", err, rep)
	}
}

// A sharded restore's run object that does not decode is refused (exit 2
// in the CLI: running again reads the same bytes), naming the object, what
// is wrong with its JSON and the way out; it was an error of the retryable
// kind quoting encoding/json ("invalid character 'x' looking for
// beginning of value").
func TestDamagedShardRunObjectIsRefused(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	ctx := context.Background()
	const run = "run-1"
	shard := func(i int) restorer.Options {
		return restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID,
			Shard: &restorer.Shard{Index: i, Count: 2, Run: run}}
	}
	if _, err := restorer.Run(ctx, shard(0)); err != nil {
		t.Fatal(err)
	}
	putObject(t, store, format.RestoreShardRunKey(run), []byte("xx\n"))
	_, err := restorer.Run(ctx, shard(1))
	re, ok := errors.AsType[*restorer.RefusedError](err)
	if !ok {
		t.Fatalf("shard 1 with a damaged run object: %v; want a *restorer.RefusedError", err)
	}
	for _, want := range []string{format.RestoreShardRunKey(run), "not valid JSON at byte"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	for _, want := range []string{"new --shard-run", "delete its restored topics"} {
		if !strings.Contains(re.Hint, want) {
			t.Errorf("hint %q does not say %q", re.Hint, want)
		}
	}
}
