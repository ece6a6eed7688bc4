package backup_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestTimestampsOutsideTimeNanosAreKeptExactly: Kafka timestamps are any
// 64-bit count of milliseconds; franz-go's consumer turns one into a
// time.Time through nanoseconds (time.Unix(0, ms*1e6)), which wraps
// outside 1677-09-21..2262-04-11. A new-user test backed up a record of
// year 3000 (32503680000000) as -4389808147420 (year 1830), exit 0, and
// verify said OK. The backup must store every record's timestamp as the
// broker holds it.
func TestTimestampsOutsideTimeNanosAreKeptExactly(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	adm := testkit.Admin(t, kf.Addrs())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "far-times"); err != nil {
		t.Fatal(err)
	}
	want := []int64{
		1_700_000_000_000,   // 2023
		-1,                  // no timestamp (RecordBatch.NO_TIMESTAMP)
		0,                   // 1970
		9_223_372_036_854,   // 2262-04-11T23:47:16.854Z: the last that fits in nanoseconds
		9_223_372_036_855,   // one past it
		32_503_680_000_000,  // 3000-01-01
		-9_223_372_036_855,  // before 1677-09-21
		-62_135_596_800_000, // 0001-01-01
		1 << 56,             // about 2.28 million years from 1970
		-(1 << 56),
		math.MaxInt64, // the new-user test's second pass: came back as -1
		1<<58 - 1,
		1 << 57,
		math.MinInt64 + 1,
	}
	var recs []testkit.RawRecord
	for i, ts := range want {
		recs = append(recs, testkit.RawRecord{Key: []byte{'k', byte('0' + i)}, Value: []byte("v"), Timestamp: ts})
	}
	testkit.ProduceRaw(t, kf.Addrs(), "far-times", 0, recs)

	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
		ApplicationID: "app", Include: []string{"far-times"}, SourceClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	got := backupcheck.Records(t, store, m, "far-times", 0)
	if len(got) != len(want) {
		t.Fatalf("backed up %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Timestamp != want[i] {
			t.Errorf("offset %d: timestamp %d in the backup, the broker holds %d", r.Offset, r.Timestamp, want[i])
		}
	}
	// A restore refuses the topic (its producer cannot send offsets 4 to
	// 13's timestamps): the backup says so the day it is taken.
	warned := false
	for _, w := range m.Warnings {
		if strings.Contains(w, `topic "far-times": 10 records (the first at partition 0 offset 4) have timestamps outside 1677-09-21..2262-04-11`) {
			warned = true
		}
	}
	if !warned {
		t.Errorf("the manifest's warnings do not name the 10 records a restore refuses: %q", m.Warnings)
	}
}

// TestNullKeysInACompactedTopicAreWarned: null-key records in a topic that
// became compacted after they were written are backed up, but a restore
// refuses the topic; the backup warns the day it is taken (a new-user test
// found the first word of it on the day of the restore).
func TestNullKeysInACompactedTopicAreWarned(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	adm := testkit.Admin(t, kf.Addrs())
	for _, topic := range []string{"app-store-changelog", "events"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		testkit.ProduceRaw(t, kf.Addrs(), topic, 0, []testkit.RawRecord{
			{Key: []byte("k"), Value: []byte("v"), Timestamp: 1_700_000_000_000},
			{Key: nil, Value: []byte("no key"), Timestamp: 1_700_000_000_001},
		})
	}
	compact := "compact"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &compact}}, "app-store-changelog"); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
		ApplicationID: "app", Include: []string{"app-store-changelog", "events"}, SourceClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	var nullKeyWarnings []string
	for _, w := range m.Warnings {
		if strings.Contains(w, "null key") {
			nullKeyWarnings = append(nullKeyWarnings, w)
		}
	}
	if len(nullKeyWarnings) != 1 || !strings.Contains(nullKeyWarnings[0], `topic "app-store-changelog" (cleanup.policy compact): 1 records (the first at partition 0 offset 1) have a null key`) {
		t.Errorf("null-key warnings %q; want one, for the compacted app-store-changelog only", nullKeyWarnings)
	}
}
