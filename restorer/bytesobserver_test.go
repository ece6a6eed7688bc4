package restorer_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// bytesObserver counts what RestoredBytes and Restored are told, per
// partition.
type bytesObserver struct {
	mu              sync.Mutex
	records         map[string]int64 // from Restored
	bRecords, bytes map[string]int64 // from RestoredBytes
}

func (o *bytesObserver) RestoreStart(string, int32, int64) {}
func (o *bytesObserver) RestoreEnd(string, int32, int64)   {}
func (o *bytesObserver) PhaseDone(string, time.Duration)   {}
func (o *bytesObserver) Restored(topic string, p int32, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.records[fmt.Sprintf("%s/%d", topic, p)] += n
}

func (o *bytesObserver) RestoredBytes(topic string, p int32, n, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	tp := fmt.Sprintf("%s/%d", topic, p)
	o.bRecords[tp] += n
	o.bytes[tp] += bytes
}

// TestBytesObserverSeesEveryRecordsBytes: an Observer that implements
// BytesObserver is told, for each acknowledged batch, its records (the
// same as Restored) and their bytes: keys, values, header keys and values
// of the backup's records, summing to those of every restored record.
func TestBytesObserverSeesEveryRecordsBytes(t *testing.T) {
	_, store, m := backedUpSample(t)
	dst := testkit.StartKfake(t, 3)
	obs := &bytesObserver{records: map[string]int64{}, bRecords: map[string]int64{}, bytes: map[string]int64{}}
	rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, tp := range slices.Concat(m.Topics, m.InFlight) {
		for _, p := range tp.PartitionCuts {
			var n int64
			for _, r := range backupcheck.Records(t, store, m, tp.Name, p.Partition) {
				n += int64(len(r.Key) + len(r.Value))
				for _, h := range r.Headers {
					n += int64(len(h.Key) + len(h.Value))
				}
			}
			if n > 0 {
				want[fmt.Sprintf("%s/%d", tp.Name, p.Partition)] = n
			}
		}
	}
	for _, pr := range rep.Partitions {
		tp := fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)
		if obs.records[tp] != pr.Records || obs.bRecords[tp] != pr.Records || obs.bytes[tp] != want[tp] {
			t.Errorf("%s: Restored %d records, RestoredBytes %d records and %d bytes; the report says %d records, the backup's records hold %d bytes",
				tp, obs.records[tp], obs.bRecords[tp], obs.bytes[tp], pr.Records, want[tp])
		}
	}
	if len(want) == 0 || len(rep.Partitions) == 0 {
		t.Fatalf("nothing restored: %d partitions", len(rep.Partitions))
	}
}
