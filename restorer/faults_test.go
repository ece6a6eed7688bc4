package restorer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

const (
	faultsTopic = "events"
	faultsGroup = "app"
)

// backedUpEvents backs up topic "events" (3 partitions of 20 records
// "p<partition>-<i>") and group "app" (committed at offset 5 of each
// partition) of a kfake cluster into a new local repository.
func backedUpEvents(t *testing.T) (storage.Backend, *format.Manifest) {
	t.Helper()
	src := testkit.StartKfake(t, 1)
	adm := testkit.Admin(t, src.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, faultsTopic); err != nil {
		t.Fatal(err)
	}
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var offs kadm.Offsets
	for p := range int32(3) {
		var recs []*kgo.Record
		for i := range 20 {
			recs = append(recs, &kgo.Record{Topic: faultsTopic, Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offs.Add(kadm.Offset{Topic: faultsTopic, Partition: p, At: 5, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(t.Context(), faultsGroup, offs); err != nil {
		t.Fatal(err)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	res, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: faultsGroup, Include: []string{faultsTopic}, SourceClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return store, backupcheck.Latest(t, store, res.BackupID)
}

// faultRestoreRequest reports whether a request is of the restore's own
// work: it names topic "events" (or all topics, for Metadata), produces, or
// reads or commits offsets.
func faultRestoreRequest(kr kmsg.Request) bool {
	switch req := kr.(type) {
	case *kmsg.MetadataRequest:
		if req.Topics == nil {
			return true
		}
		for _, rt := range req.Topics {
			if rt.Topic != nil && *rt.Topic == faultsTopic {
				return true
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, rt := range req.Topics {
			if rt.Topic == faultsTopic {
				return true
			}
		}
	case *kmsg.CreateTopicsRequest:
		for _, rt := range req.Topics {
			if rt.Topic == faultsTopic {
				return true
			}
		}
	case *kmsg.ProduceRequest, *kmsg.OffsetCommitRequest, *kmsg.OffsetFetchRequest:
		return true
	}
	return false
}

// TestRestoreKafkaFaults is the restore's half of the Kafka fault suite
// (issue 14): each of Metadata, ListOffsets, Produce, CreateTopics,
// OffsetCommit and OffsetFetch on the target gets each fault of
// testkit.KafkaFaults. A fault once is survived within retry_timeout; a
// persistent UNKNOWN_SERVER_ERROR fails the restore within a bound, naming
// the API, the topic/partition or group and the retry_timeout, and the
// same restore run again once the target is well resumes it. Every case
// ends with every record of the backup on the target once, at its offset,
// and the group's offsets committed and read back; none ends in success
// with less.
func TestRestoreKafkaFaults(t *testing.T) {
	const (
		requestTimeout = 500 * time.Millisecond
		retryTimeout   = 2 * time.Second
	)
	apis := []struct {
		key     kmsg.Key
		persist []string // what the error of a persistent fault names
		// fails is the fault once that fails the run all the same, with
		// the persistent fault's error: franz-go's idempotent producer
		// (like Kafka's Java producer) fails a batch answered
		// UNKNOWN_SERVER_ERROR, which may or may not be written; the
		// restore run again resumes from what the target holds.
		fails string
	}{
		{kmsg.Metadata, []string{"Metadata", `"events"`, "UNKNOWN_SERVER_ERROR", "retry_timeout"}, ""},
		{kmsg.ListOffsets, []string{"ListOffsets", `"events"`, "UNKNOWN_SERVER_ERROR", "retry_timeout"}, ""},
		{kmsg.Produce, []string{`produce to topic "events" partition`, "UNKNOWN_SERVER_ERROR"}, "UNKNOWN_SERVER_ERROR once"},
		{kmsg.CreateTopics, []string{"CreateTopics", `"events"`, "UNKNOWN_SERVER_ERROR", "retry_timeout"}, ""},
		{kmsg.OffsetCommit, []string{"OffsetCommit", `group "app"`, "UNKNOWN_SERVER_ERROR", "retry_timeout"}, ""},
		{kmsg.OffsetFetch, []string{"OffsetFetch", `group "app"`, "UNKNOWN_SERVER_ERROR", "retry_timeout"}, ""},
	}
	for _, api := range apis {
		for _, f := range testkit.KafkaFaults(3 * requestTimeout) {
			t.Run(api.key.Name()+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				store, m := backedUpEvents(t) // a repository of its own: restores lock it by target cluster id
				dst := testkit.StartKfake(t, 3)
				inj := testkit.InjectFault(dst, api.key, faultRestoreRequest, f)
				target, err := config.Cluster{BootstrapServers: dst.Addrs(), RequestTimeout: requestTimeout, RetryTimeout: retryTimeout}.ClientOptions()
				if err != nil {
					t.Fatal(err)
				}
				o := restorer.Options{Target: target, Store: store, ApplicationID: faultsGroup,
					RequestTimeout: requestTimeout, RetryTimeout: retryTimeout}

				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				rep, err := restorer.Run(ctx, o)
				if ctx.Err() != nil {
					t.Fatalf("restore still running after a minute (retry_timeout %s): %v", retryTimeout, err)
				}
				if inj.Count() == 0 {
					t.Fatalf("no %s request was faulted (err %v)", api.key.Name(), err)
				}
				if f.Persistent || f.Name == api.fails {
					inj.Heal()
					if err == nil {
						t.Fatalf("restore succeeded although %s was answered %s", api.key.Name(), f.Name)
					}
					for _, want := range api.persist {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error does not say %q: %v", want, err)
						}
					}
					t.Logf("%d faults; error: %v", inj.Count(), err)
					// The target is well again: the same restore resumes.
					if rep, err = restorer.Run(ctx, o); err != nil {
						t.Fatalf("restore run again after the fault: %v", err)
					}
				} else if err != nil {
					t.Fatalf("restore after %d faults: %v", inj.Count(), err)
				}
				inj.Heal()
				if !rep.Committed {
					t.Errorf("the report says the offsets were not committed")
				}
				checkRestoredEvents(t, store, m, dst.Addrs())
			})
		}
	}
}

// checkRestoredEvents checks that the target holds every record of the
// backup's topic "events" once, at its offset, and group "app" committed
// at offset 5 of each partition.
func checkRestoredEvents(t *testing.T, store storage.Backend, m *format.Manifest, addrs []string) {
	t.Helper()
	adm := testkit.Admin(t, addrs)
	ends := restorecheck.EndOffsets(t, adm, faultsTopic)
	got := restorecheck.ReadAll(t, addrs, ends)
	for p := range int32(3) {
		want := backupcheck.Records(t, store, m, faultsTopic, p)
		if len(want) != 20 {
			t.Fatalf("the backup holds %d records of partition %d, want 20", len(want), p)
		}
		restorecheck.SameRecords(t, fmt.Sprintf("%s/%d", faultsTopic, p), got[faultsTopic][p], want, false)
		if end := ends[faultsTopic][p]; end != 20 {
			t.Errorf("partition %d ends at %d on the target, want 20 (a record written twice?)", p, end)
		}
		for i, r := range got[faultsTopic][p] {
			if r.Offset != want[i].Offset {
				t.Errorf("partition %d record %d restored at offset %d, the backup's is %d", p, i, r.Offset, want[i].Offset)
				break
			}
		}
	}
	offs, err := adm.FetchOffsets(t.Context(), faultsGroup)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, ok := offs.Lookup(faultsTopic, p); !ok || o.Err != nil || o.At != 5 {
			t.Errorf("group %q partition %d: committed %+v on the target, want 5", faultsGroup, p, o)
		}
	}
}
