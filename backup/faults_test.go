package backup_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// faultTopicRequest reports whether a request names topic "events" (or all
// topics, for Metadata): the requests of the backup's own work.
func faultTopicRequest(kr kmsg.Request) bool {
	switch req := kr.(type) {
	case *kmsg.MetadataRequest:
		if req.Topics == nil {
			return true
		}
		for _, rt := range req.Topics {
			if rt.Topic != nil && *rt.Topic == eventsTopic {
				return true
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, rt := range req.Topics {
			if rt.Topic == eventsTopic {
				return true
			}
		}
	case *kmsg.FetchRequest:
		return len(req.Topics) > 0
	case *kmsg.OffsetFetchRequest:
		return true
	}
	return false
}

// TestBackupKafkaFaults is the backup's half of the Kafka fault suite
// (issue 14): each of Metadata, ListOffsets, Fetch and OffsetFetch (the
// group's committed offsets) gets each fault of testkit.KafkaFaults. A
// fault once is survived within retry_timeout and the backup is record for
// record the cluster's, with the group's offsets; UNKNOWN_SERVER_ERROR on
// every request fails the run within a bound, naming the API, the topic or
// group and the retry_timeout; no case ends in success with less data.
func TestBackupKafkaFaults(t *testing.T) {
	const (
		group          = "app"
		requestTimeout = 500 * time.Millisecond
		retryTimeout   = 2 * time.Second
	)
	apis := []struct {
		key     kmsg.Key
		persist []string // what the error of a persistent fault names
	}{
		{kmsg.Metadata, []string{`topic "events" metadata (Metadata)`, "UNKNOWN_SERVER_ERROR", "retry_timeout is 2s"}},
		{kmsg.ListOffsets, []string{`(ListOffsets) of topic "events" partition`, "UNKNOWN_SERVER_ERROR", "retry_timeout is 2s"}},
		{kmsg.Fetch, []string{`fetch topic "events" partition`, "UNKNOWN_SERVER_ERROR", "retry_timeout is 2s"}},
		{kmsg.OffsetFetch, []string{`(OffsetFetch) of group "app"`, "UNKNOWN_SERVER_ERROR", "retry_timeout is 2s"}},
	}
	for _, api := range apis {
		for _, f := range testkit.KafkaFaults(3 * requestTimeout) {
			t.Run(api.key.Name()+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				kf, _ := eventsKfake(t)
				produceEvents(t, kf.Addrs(), 20, 10)
				var offs kadm.Offsets
				for p := range int32(3) {
					offs.Add(kadm.Offset{Topic: eventsTopic, Partition: p, At: 5})
				}
				if _, err := testkit.Admin(t, kf.Addrs()).CommitOffsets(t.Context(), group, offs); err != nil {
					t.Fatal(err)
				}
				inj := testkit.InjectFault(kf, api.key, faultTopicRequest, f, eventsTopic)
				store, _ := storage.NewFilesystem(t.TempDir())
				o := eventsOptions(kf.Addrs(), store)
				o.Source = clusterOptions(t, kf.Addrs(), requestTimeout, retryTimeout)
				o.RetryTimeout, o.ApplicationID = retryTimeout, group

				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res, err := backup.Run(ctx, o)
				inj.Heal()
				if ctx.Err() != nil {
					t.Fatalf("backup still running after a minute (retry_timeout %s): %v", retryTimeout, err)
				}
				if inj.Count() == 0 {
					t.Fatalf("no %s request was faulted (err %v)", api.key.Name(), err)
				}
				if f.Persistent {
					if err == nil {
						t.Fatalf("backup succeeded although every %s request failed (%d records)", api.key.Name(), res.Records)
					}
					for _, want := range api.persist {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error does not say %q: %v", want, err)
						}
					}
					t.Logf("%d faults; error: %v", inj.Count(), err)
					return
				}
				if err != nil {
					t.Fatalf("backup after %d faults: %v", inj.Count(), err)
				}
				m := backupcheck.Latest(t, store, res.BackupID)
				if res.Records != 3*20 {
					t.Errorf("backup holds %d records; want 60", res.Records)
				}
				backupcheck.MatchesCluster(t, store, m, kf.Addrs())
				if m.Group == nil || len(m.Group.Offsets) != 3 {
					t.Fatalf("group offsets = %+v; want 3", m.Group)
				}
				for _, g := range m.Group.Offsets {
					if g.Offset != 5 {
						t.Errorf("group offset %+v; want 5", g)
					}
				}
			})
		}
	}
}

// restartObserver stops the broker at the first copied records and starts
// it again in the background, so that the backup's next requests meet
// refused connections, then a broker that is starting.
type restartObserver struct {
	retried, after atomic.Int64 // requests retried; records copied after the stop
	once           sync.Once
	stopped        atomic.Bool
	k              *testkit.Kafka
	started        chan error
}

func (o *restartObserver) Planned(string, int32, int64, int64)       {}
func (o *restartObserver) SegmentStored(string, int32, int64, int64) {}
func (o *restartObserver) Retried(string)                            {}
func (o *restartObserver) PhaseDone(string, time.Duration)           {}
func (o *restartObserver) Copied(_ string, _ int32, n, _, _ int64) {
	if o.stopped.Load() {
		o.after.Add(n)
	}
	o.once.Do(func() {
		defer o.stopped.Store(true)
		o.k.Stop()
		go func() { o.started <- o.k.Start(2 * time.Minute) }()
	})
}

// TestBackupOutlastsABrokerRestart: the source's only broker (real Kafka
// 4.4) stops cleanly after the backup's first records are copied and
// starts again on the same port and data directory; the backup waits for
// it within retry_timeout and holds every record of the topic and the
// group's offsets (issue 14, "a broker restarting mid-run").
func TestBackupOutlastsABrokerRestart(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, eventsTopic); err != nil {
		t.Fatal(err)
	}
	produceEvents(t, k.Addrs(), 200, 100)
	var offs kadm.Offsets
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: eventsTopic, Partition: p, At: 5, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(t.Context(), "app", offs); err != nil {
		t.Fatal(err)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	o := eventsOptions(k.Addrs(), store)
	o.Source = clusterOptions(t, k.Addrs(), 5*time.Second, time.Minute)
	o.RetryTimeout, o.ApplicationID = time.Minute, "app"
	o.Concurrency = 1 // one partition at a time: the others are read after the stop
	obs := &restartObserver{k: k, started: make(chan error, 1)}
	o.Observer = obs

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := backup.Run(ctx, o)
	select {
	case serr := <-obs.started:
		if serr != nil {
			t.Fatalf("the broker did not start again: %v", serr)
		}
	case <-ctx.Done():
		t.Fatal("the broker was never restarted, or did not start again in 3 minutes")
	}
	if err != nil {
		t.Fatalf("backup across a broker restart: %v", err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	if res.Records != 3*200 {
		t.Errorf("backup holds %d records; want 600", res.Records)
	}
	backupcheck.MatchesCluster(t, store, m, k.Addrs())
	if m.Group == nil || len(m.Group.Offsets) != 3 {
		t.Errorf("group offsets = %+v; want 3", m.Group)
	}
	if obs.after.Load() == 0 {
		t.Errorf("no record was copied after the broker stopped: the restart did not happen mid-run")
	}
	t.Logf("%d records copied after the broker stopped, %d requests retried", obs.after.Load(), obs.retried.Load())
}
