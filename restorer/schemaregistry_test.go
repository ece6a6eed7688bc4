package restorer_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// registryTopic is the Schema Registry storage topic of these tests: named
// to sort after the app's topics, so that only the rule, not the name
// order, puts it first.
const registryTopic = "zz-registry"

// backedUpWithRegistry backs up an app's topics "orders" (3 partitions)
// and "payments" with registryTopic as the schema registry's storage
// topic, whose records carry keys, headers and a null value (a
// registry's tombstone).
func backedUpWithRegistry(t *testing.T) (storage.Backend, *format.Manifest, []string) {
	t.Helper()
	src := testkit.StartKfake(t, 1, kfake.SeedTopics(3, "orders"), kfake.SeedTopics(1, "payments", registryTopic))
	cl := testkit.Client(t, src.Addrs())
	var recs []*kgo.Record
	for i := range 4 {
		recs = append(recs, &kgo.Record{Topic: registryTopic, Key: fmt.Appendf(nil, `{"subject":"s%d"}`, i), Value: fmt.Appendf(nil, `{"id":%d}`, i+1),
			Headers: []kgo.RecordHeader{{Key: "mt", Value: []byte("CreateArtifact")}}, Timestamp: time.Now().Add(time.Duration(i-5) * time.Second).Truncate(time.Millisecond)})
	}
	recs = append(recs, &kgo.Record{Topic: registryTopic, Key: []byte(`{"subject":"s0"}`), Value: nil})
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: []byte{0, 0, 0, 0, byte(i%4 + 1), 'o'}},
			&kgo.Record{Topic: "payments", Value: []byte{0, 0, 0, 0, byte(i%4 + 1), 'p'}})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		Include: []string{"orders", "payments"}, SchemaRegistryTopic: registryTopic})
	if err != nil {
		t.Fatal(err)
	}
	return store, backupcheck.Latest(t, store, res.BackupID), src.Addrs()
}

// orderObserver records the order in which partitions start and end.
type orderObserver struct {
	mu     sync.Mutex
	events []string // "start topic/p", "end topic/p"
}

func (o *orderObserver) RestoreStart(topic string, p int32, _ int64) { o.add("start", topic, p) }
func (o *orderObserver) Restored(string, int32, int64)               {}
func (o *orderObserver) RestoreEnd(topic string, p int32, _ int64)   { o.add("end", topic, p) }
func (o *orderObserver) PhaseDone(string, time.Duration)             {}
func (o *orderObserver) add(what, topic string, p int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf("%s %s/%d", what, topic, p))
}

// TestRestoreSchemaRegistryTopicFirst: the registry's storage topic is
// first in the plan, and its records are all in before any other
// partition starts, with one partition restored at a time or four; they
// are restored record for record (keys, values, the tombstone, headers,
// timestamps).
func TestRestoreSchemaRegistryTopicFirst(t *testing.T) {
	store, m, _ := backedUpWithRegistry(t)
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency %d", concurrency), func(t *testing.T) {
			dst := testkit.StartKfake(t, 1)
			obs := &orderObserver{}
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
				Concurrency: concurrency, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			if tp := rep.Plan.Topics[0]; tp.Topic != registryTopic || !tp.SchemaRegistry {
				t.Errorf("first topic of the plan: %s (schema_registry %v), want %s", tp.Topic, tp.SchemaRegistry, registryTopic)
			}
			for _, tp := range rep.Plan.Topics[1:] {
				if tp.SchemaRegistry {
					t.Errorf("topic %s marked schema_registry in the plan", tp.Topic)
				}
			}
			registryEnd := -1
			for i, e := range obs.events {
				if e == "end "+registryTopic+"/0" {
					registryEnd = i
				}
			}
			if registryEnd < 0 {
				t.Fatalf("the registry topic was not restored: %q", obs.events)
			}
			for _, e := range obs.events[:registryEnd] {
				if !strings.HasSuffix(e, " "+registryTopic+"/0") {
					t.Errorf("%q happened before the registry topic was done: %q", e, obs.events)
				}
			}
			want := backupcheck.Records(t, store, m, registryTopic, 0)
			got := restorecheck.ReadAll(t, dst.Addrs(), restorecheck.Offsets{registryTopic: {0: 1 << 40}})
			restorecheck.SameRecords(t, registryTopic, got[registryTopic][0], want, false)
			if len(want) != 5 || want[4].Value != nil {
				t.Errorf("the backup holds %d registry records (want 5, the last a tombstone): %s", len(want), restorecheck.Summary(want))
			}
		})
	}
}

// TestRestoreToTimeKeepsTheWholeRegistryTopic: a point-in-time restore
// cuts the app's topics but restores the registry's topic whole: a schema
// registered after the cut harms nothing, one lost to a clock skew between
// the registry and a producer would leave an id unresolvable.
func TestRestoreToTimeKeepsTheWholeRegistryTopic(t *testing.T) {
	store, m, _ := backedUpWithRegistry(t)
	recs := backupcheck.Records(t, store, m, registryTopic, 0)
	cut := time.UnixMilli(recs[1].Timestamp) // after two registry records, before every order
	dst := testkit.StartKfake(t, 1)
	rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
		Strategy: restorer.StrategyRebuild, ToTime: &cut, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range rep.Plan.Topics {
		for _, pp := range tp.PartitionPlans {
			switch {
			case tp.Topic == registryTopic && (pp.Records != int64(len(recs)) || pp.CutAt != -1):
				t.Errorf("registry topic partition %d: %d records, cut at %d; want all %d, no cut", pp.Partition, pp.Records, pp.CutAt, len(recs))
			case tp.Topic != registryTopic && pp.Records != 0:
				t.Errorf("topic %s partition %d: %d records restored, want none (every record is after the time)", tp.Topic, pp.Partition, pp.Records)
			}
		}
	}
}

// TestRestoreTopicsWithoutTheRegistryTopicSaysSo: --topics that leaves
// the registry's topic out skips it with the consequence and the fix.
func TestRestoreTopicsWithoutTheRegistryTopicSaysSo(t *testing.T) {
	store, _, _ := backedUpWithRegistry(t)
	dst := testkit.StartKfake(t, 1)
	plan, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
		Topics: []string{"orders", "payments"}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var reason string
	for _, s := range plan.Plan.Skipped {
		if s.Topic == registryTopic {
			reason = s.Reason
		}
	}
	if !strings.Contains(reason, "not matched by --topics; it is the Schema Registry's storage topic") || !strings.Contains(reason, "add it to --topics") {
		t.Errorf("skipped %+v: want the registry topic skipped with the consequence and the fix", plan.Plan.Skipped)
	}
}

// TestRestoreRefusesAWrittenRegistryTopic: a target whose registry topic
// already holds records (a registry was started there first) is refused
// before the first write, with the fix.
func TestRestoreRefusesAWrittenRegistryTopic(t *testing.T) {
	store, _, _ := backedUpWithRegistry(t)
	dst := testkit.StartKfake(t, 1, kfake.SeedTopics(1, registryTopic))
	if err := testkit.Client(t, dst.Addrs()).ProduceSync(t.Context(), &kgo.Record{Topic: registryTopic, Value: []byte("bootstrap")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store})
	var re *restorer.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err %v: want a refusal", err)
	}
	for _, w := range []string{`topic "zz-registry", the Schema Registry's storage topic, is not empty on the target (1 records)`, "stop that registry, delete the topic, restore"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	if n := len(restorecheck.Topics(t, testkit.Admin(t, dst.Addrs()))); n != 1 {
		t.Errorf("the refused restore left %d topics on the target, want the registry's 1", n)
	}
}
