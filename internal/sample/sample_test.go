package sample

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReadCommittedOutwaitsASlowFirstFetch: the oracle stopped at its
// first poll that returned nothing for half a second. A broker slow to
// answer the first fetches (a loaded machine: the race detector on 2
// cores made three tests read "the source has 0" records) made it return
// no records at all. It reads every record: here each of the first two
// fetches takes 1.2 s (kfake's SleepControl).
func TestReadCommittedOutwaitsASlowFirstFetch(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 50
	for i := range n {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var slow atomic.Int32
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		if slow.Add(1) <= 2 {
			c.KeepControl()
			c.SleepControl(func() { time.Sleep(1200 * time.Millisecond) })
		}
		return nil, nil, false
	})
	recs, err := ReadCommitted(t.Context(), c.ListenAddrs(), "t", map[int32]int64{0: n / 2, 1: n / 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Errorf("read %d records, want %d", len(recs), n)
	}
	if slow.Load() < 1 {
		t.Error("no fetch was slowed: the test shows nothing")
	}
}

// TestReadCommittedEndsAtATransactionMarker: a partition whose last
// offsets are an aborted transaction and its marker holds no committed
// record there; the read ends at the marker (end-1), returning the
// committed records only, not after waiting out ReadQuiet.
func TestReadCommittedEndsAtATransactionMarker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"), kgo.TransactionalID("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: fmt.Appendf(nil, "%v-%d", bool(commit), i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(t.Context(), commit); err != nil {
			t.Fatal(err)
		}
	}
	// 3 committed, their marker, 3 aborted, their marker.
	start := time.Now()
	recs, err := ReadCommitted(t.Context(), c.ListenAddrs(), "t", map[int32]int64{0: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || string(recs[0].Value) != "true-0" || string(recs[2].Value) != "true-2" {
		t.Errorf("read %d records %v, want the 3 committed ones", len(recs), recs)
	}
	if d := time.Since(start); d >= ReadQuiet {
		t.Errorf("read took %s: it waited out ReadQuiet (%s) instead of ending at the marker", d, ReadQuiet)
	}
}
