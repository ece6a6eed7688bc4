package restorer_test

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// requestLog is a kgo.HookBrokerE2E that counts the requests a client
// sends, per request key, with the time each took from write to read.
type requestLog struct {
	mu    sync.Mutex
	count map[int16]int
	took  map[int16]time.Duration
	began time.Time
	times []string // "+<since began> <request> <took>", every request but Produce
}

func (l *requestLog) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count[key]++
	l.took[key] += e2e.DurationE2E()
	if key != int16(kmsg.Produce) {
		at := time.Since(l.began) - e2e.DurationE2E()
		l.times = append(l.times, fmt.Sprintf("+%s %s %s", at.Round(time.Millisecond), kmsg.NameForKey(key), e2e.DurationE2E().Round(time.Millisecond)))
	}
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []int16
	for k := range l.count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return l.took[keys[i]] > l.took[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %dx %s", kmsg.NameForKey(k), l.count[k], l.took[k].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ") + "\n" + strings.Join(l.times, "\n")
}

// journalPuts counts the restore journal's writes to a Backend and the
// time they took.
type journalPuts struct {
	storage.Backend
	mu   sync.Mutex
	n    int
	took time.Duration
}

func (j *journalPuts) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	began := time.Now()
	err := j.Backend.Put(ctx, key, r, size)
	if strings.HasPrefix(key, "restores/journals/") {
		j.mu.Lock()
		j.n++
		j.took += time.Since(began)
		j.mu.Unlock()
	}
	return err
}

// phaseTimes is a restorer.Observer that keeps each phase's duration.
type phaseTimes struct {
	mu     sync.Mutex
	phases map[string]time.Duration
}

func (*phaseTimes) RestoreStart(string, int32, int64) {}
func (*phaseTimes) Restored(string, int32, int64)     {}
func (*phaseTimes) RestoreEnd(string, int32, int64)   {}
func (p *phaseTimes) PhaseDone(phase string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phases[phase] = d
}

// BenchmarkRestoreTopicsKafka restores a backup of 2,000 partitions of one
// record each, in one topic and spread over 20 topics, into one real Kafka
// 4.4 broker (a scratch cluster of this benchmark) per iteration, and
// reports the "topics" phase (createTopics: creation, journal, waitReady)
// in ms, with the requests the restore sent and the journal's writes in
// the log (-v). Each iteration deletes the restored topics and the
// journals (in the benchmark's own repository under b.TempDir).
func BenchmarkRestoreTopicsKafka(b *testing.B) {
	k := testkit.StartKafka(b)
	adm := testkit.Admin(b, k.Addrs())
	for _, shape := range []struct{ topics, partitions int }{{1, 2000}, {20, 100}} {
		b.Run(fmt.Sprintf("%dx%d", shape.topics, shape.partitions), func(b *testing.B) {
			var names []string
			for i := range shape.topics {
				names = append(names, fmt.Sprintf("many-%d", i))
			}
			src := testkit.StartKfake(b, 1, kfake.SeedTopics(int32(shape.partitions), names...))
			cl := testkit.Client(b, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var recs []*kgo.Record
			for _, name := range names {
				for p := range shape.partitions {
					recs = append(recs, &kgo.Record{Topic: name, Partition: int32(p), Key: fmt.Appendf(nil, "k%d", p), Value: fmt.Appendf(nil, "%0100d", p)})
				}
			}
			if err := cl.ProduceSync(b.Context(), recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			fs, err := storage.NewFilesystem(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := backup.Run(b.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: fs, Include: names}); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for b.Loop() {
				reqs := &requestLog{count: map[int16]int{}, took: map[int16]time.Duration{}, began: time.Now()}
				store := &journalPuts{Backend: fs}
				obs := &phaseTimes{phases: map[string]time.Duration{}}
				if _, err := restorer.Run(b.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...), kgo.WithHooks(reqs)},
					Store: store, ReplicationFactor: 1, Observer: obs}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				total += obs.phases["topics"]
				b.Logf("topics phase %s; journal writes %dx %s; requests: %s", obs.phases["topics"].Round(time.Millisecond), store.n, store.took.Round(time.Millisecond), reqs)
				if _, err := adm.DeleteTopics(b.Context(), names...); err != nil {
					b.Fatal(err)
				}
				var journals []string
				if err := fs.List(b.Context(), "restores/", func(oi storage.ObjectInfo) error { journals = append(journals, oi.Key); return nil }); err != nil {
					b.Fatal(err)
				}
				for _, key := range journals {
					if err := fs.Delete(b.Context(), key); err != nil {
						b.Fatal(err)
					}
				}
				for range 600 {
					if ts, err := adm.ListTopics(b.Context(), names...); err == nil && len(ts.Names()) == 0 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "topics-ms/op")
		})
	}
}
