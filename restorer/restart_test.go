package restorer_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// restoredObserver calls restored on every Restored event.
type restoredObserver struct{ restored func() }

func (o restoredObserver) RestoreStart(string, int32, int64) {}
func (o restoredObserver) Restored(string, int32, int64)     { o.restored() }
func (o restoredObserver) RestoreEnd(string, int32, int64)   {}
func (o restoredObserver) PhaseDone(string, time.Duration)   {}

// TestTargetAwayFor20SecondsIsSurvived: the target's only broker stops
// after the first batch is acknowledged and comes back on the same port 20
// seconds later (a restart: connections refused meanwhile); with the
// default timeouts the restore waits for it and the target holds every
// record of the backup (issue 9, "outlasts a broker restart").
func TestTargetAwayFor20SecondsIsSurvived(t *testing.T) {
	_, store, m := backedUpSample(t)
	dir := t.TempDir()
	first, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	addrs := first.ListenAddrs()
	_, portText, _ := net.SplitHostPort(addrs[0])
	port, _ := strconv.Atoi(portText)

	var mu sync.Mutex
	var second *kfake.Cluster
	restarted := make(chan error, 1)
	stop := sync.OnceFunc(func() {
		go func() {
			first.Close()
			time.Sleep(20 * time.Second)
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir))
			mu.Lock()
			second = c
			mu.Unlock()
			restarted <- err
		}()
	})
	t.Cleanup(func() {
		first.Close()
		mu.Lock()
		defer mu.Unlock()
		if second != nil {
			second.Close()
		}
	})
	target, err := config.Cluster{BootstrapServers: addrs}.ClientOptions() // the default timeouts
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rep, err := restorer.Run(ctx, restorer.Options{Target: target, Store: store, ApplicationID: sample.AppID, ReplicationFactor: 1, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observer: restoredObserver{restored: stop}})
	select {
	case rerr := <-restarted:
		if rerr != nil {
			t.Fatalf("restart the broker on port %d: %v", port, rerr)
		}
	default:
		t.Fatalf("the restore ended (err %v) before the broker came back: the test did not stop it", err)
	}
	if err != nil {
		t.Fatalf("restore failed across a 20s broker restart: %v", err)
	}
	if !rep.Committed {
		t.Errorf("the group's offsets were not committed")
	}
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			want := backupcheck.Records(t, store, m, tp.Name, p.Partition)
			got, err := sample.ReadCommitted(ctx, addrs, tp.Name, map[int32]int64{p.Partition: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%s/%d: %d records on the target, the backup has %d", tp.Name, p.Partition, len(got), len(want))
			}
		}
	}
}
