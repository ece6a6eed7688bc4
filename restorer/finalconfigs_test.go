package restorer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestResumedRestoreEndsWithTheDeferredConfigs is a regression test
// (issue 14): the restore holds some configs back while the records go in
// (message.timestamp.type=CreateTime instead of LogAppendTime, so the
// records keep their timestamps; retention.ms=-1 under --retention keep)
// and sets or names the backed-up values once they are in. A run failed
// between the two left the topic CreateTime for good: the re-run planned
// a filled topic from the altered topic (now CreateTime, retention.ms=-1),
// and a created one that inherited LogAppendTime from the broker as
// "resume", which the broker-default care skipped. Each case fails the
// first run after one produce request (the pre-configs applied, some
// records in), runs it again, and checks the topic's final configs, the
// plan's retention set-back command, and every record once with its
// timestamp. On kfake, which applies message.timestamp.type.
func TestResumedRestoreEndsWithTheDeferredConfigs(t *testing.T) {
	const day = int64(24 * time.Hour / time.Millisecond)
	now := time.Now().UnixMilli()
	// 1 KiB values: 3 MiB in a partition, several produce requests (a
	// batch holds at most 1 MiB, franz-go's ProducerBatchMaxBytes).
	value := strings.Repeat("v", 1024)
	records := func(n int, ts int64) []format.Record {
		rs := make([]format.Record, n)
		for i := range rs {
			rs[i] = rec(ts+int64(i), fmt.Sprintf("k%05d", i), value)
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		// broker holds the target's broker configs; topic the backup's
		// topic; precreate, when set, the configs of the empty topic an
		// operator created on the target before the restore.
		broker    map[string]string
		topic     testTopic
		precreate map[string]*string
		retention restorer.RetentionChoice
		// wantType is the final message.timestamp.type; wantSetBack, when
		// set, what the plan's retention set-back command must hold.
		wantType, wantSetBack string
	}{
		{
			name:      "fill of a LogAppendTime topic",
			topic:     testTopic{name: "appended", configs: map[string]string{"message.timestamp.type": "LogAppendTime"}, records: records(3000, now-3600_000)},
			precreate: map[string]*string{"message.timestamp.type": ptr("LogAppendTime")},
			wantType:  "LogAppendTime",
		},
		{
			name:     "created topic inheriting LogAppendTime from the broker",
			broker:   map[string]string{"log.message.timestamp.type": "LogAppendTime"},
			topic:    testTopic{name: "inherited", defaults: map[string]string{"message.timestamp.type": "LogAppendTime"}, records: records(3000, now-3600_000)},
			wantType: "LogAppendTime",
		},
		{
			name:        "fill kept past retention.ms",
			topic:       testTopic{name: "old", configs: map[string]string{"retention.ms": fmt.Sprint(7 * day)}, records: records(3000, now-30*day)},
			precreate:   map[string]*string{"retention.ms": ptr(fmt.Sprint(7 * day))},
			retention:   restorer.RetentionKeep,
			wantType:    "CreateTime",
			wantSetBack: "--entity-name old --add-config retention.ms=604800000",
		},
		{
			name:        "created topic kept past retention.ms",
			topic:       testTopic{name: "old-created", configs: map[string]string{"retention.ms": fmt.Sprint(7 * day)}, records: records(3000, now-30*day)},
			retention:   restorer.RetentionKeep,
			wantType:    "CreateTime",
			wantSetBack: "--entity-name old-created --add-config retention.ms=604800000",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var opts []kfake.Opt
			if tc.broker != nil {
				opts = append(opts, kfake.BrokerConfigs(tc.broker))
			}
			dst := testkit.StartKfake(t, 1, opts...)
			adm := testkit.Admin(t, dst.Addrs())
			if tc.precreate != nil {
				resp, err := adm.CreateTopic(ctx, 1, 1, tc.precreate, tc.topic.name)
				if err == nil {
					err = resp.Err
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			store := writeBackup(t, tc.topic)
			o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, Concurrency: 1, Retention: tc.retention}

			failing, produces := failProducesAfter(dst, 1)
			if _, err := restorer.Run(ctx, o); err == nil {
				t.Fatalf("the injected produce failure did not fail the restore (%d produce requests)", produces.Load())
			}
			failing.Store(false)
			if produces.Load() <= 1 {
				t.Fatalf("%d produce requests: the failure came before any record was written", produces.Load())
			}
			if got := timestampType(t, adm, tc.topic.name); got != "CreateTime" {
				t.Fatalf("after the failed run the topic is %s: the failure did not land between the pre-configs and the final configs", got)
			}

			rep, err := restorer.Run(ctx, o)
			if err != nil {
				t.Fatalf("re-run: %v", err)
			}
			if got := timestampType(t, adm, tc.topic.name); got != tc.wantType {
				t.Errorf("the resumed restore ends with message.timestamp.type=%s, the backup's is %s", got, tc.wantType)
			}
			if tc.wantSetBack != "" {
				if rp := rep.Topics[0].Retention; rp == nil || !strings.Contains(rp.SetBack, tc.wantSetBack) {
					t.Errorf("the resumed restore's retention plan %+v: want a set-back command with %q (the topic's retention.ms before the restore)", rp, tc.wantSetBack)
				}
			}
			got := consumeAll(t, dst.Addrs(), tc.topic.name, len(tc.topic.records))
			if len(got) != len(tc.topic.records) {
				t.Fatalf("%d records on the target, the backup holds %d", len(got), len(tc.topic.records))
			}
			for i, r := range got {
				w := tc.topic.records[i]
				if r.Offset != int64(i) || string(r.Key) != string(w.Key) || r.Timestamp.UnixMilli() != w.Timestamp {
					t.Fatalf("record %d: offset %d key %s timestamp %d, want offset %d key %s timestamp %d", i, r.Offset, r.Key, r.Timestamp.UnixMilli(), i, w.Key, w.Timestamp)
				}
			}
		})
	}
}

// timestampType is topic's message.timestamp.type on the cluster of adm.
func timestampType(t *testing.T, adm *kadm.Client, topic string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "message.timestamp.type" {
			return c.MaybeValue()
		}
	}
	t.Fatalf("topic %s: no message.timestamp.type described", topic)
	return ""
}
