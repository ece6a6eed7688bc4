package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// TestVerifyAgainstClusterNamesAStoreWhoseStateWasAltered: on a real Kafka
// 4.4 target, a restore proves every changelog partition's state (the
// report says equal, kcat reads the same state); one record produced
// afterwards into a restored changelog partition, with a key the store
// holds and another value, makes `verify --against-cluster` report that
// store's state different, exit 1, the other store equal.
func TestVerifyAgainstClusterNamesAStoreWhoseStateWasAltered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := testkit.StartKfake(t, 3)
	ctx := t.Context()
	if err := sample.Seed(ctx, testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include})
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Manifest(ctx, store, res.BackupID)
	if err != nil {
		t.Fatal(err)
	}
	target := testkit.StartKafka(t)
	cfg := restoreConfig(t, target.Addrs(), dir)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--replication-factor", "1", "--yes"); code != exitOK ||
		!strings.Contains(stdout, "4 changelog partitions hold the backup's state (state digest equal)") {
		t.Fatalf("restore: exit %d, want 0 and the state line\n%s\n%s", code, stdout, stderr)
	}
	rep, err := repository.LatestReport(ctx, store, sample.AppID, "")
	if err != nil || rep == nil {
		t.Fatalf("restore report: %v %v", rep, err)
	}
	if n := restorecheck.StateDigests(t, m, rep, nil); n != 4 {
		t.Fatalf("%d changelog partitions proven, want 4", n)
	}
	if n := restorecheck.KcatStateDigests(t, m, target.Bootstrap()); n != 4 {
		t.Fatalf("kcat checked %d changelog partitions, want 4", n)
	}
	code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitOK || !strings.Contains(stdout, `state of store "order-totals-store" (topic `+sample.Changelog+`, 2 partitions): equal`) ||
		!strings.Contains(stdout, `state of store "customers" (topic customers, 2 partitions): equal`) {
		t.Fatalf("verify --against-cluster after the restore: exit %d, want 0 with both stores equal\n%s\n%s", code, stdout, stderr)
	}

	// One altered changelog record: cust-1's total on partition 0.
	cl := testkit.Client(t, target.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: sample.Changelog, Partition: 0, Key: []byte("cust-1"), Value: []byte("total-altered")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitError || !strings.Contains(stdout, `state of store "order-totals-store" (topic `+sample.Changelog+`, 2 partitions): different (partition 0 differs`) ||
		!strings.Contains(stdout, `state of store "customers" (topic customers, 2 partitions): equal`) ||
		!strings.Contains(stdout, `state differs: store "order-totals-store"`) {
		t.Fatalf("verify --against-cluster after altering a changelog record: exit %d, want %d naming order-totals-store different\n%s\n%s", code, exitError, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "verify", "-c", cfg, "--against-cluster", "--json")
	var out verify.Result
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != exitError {
		t.Fatalf("verify --json: exit %d, %v\n%s", code, err, stdout)
	}
	for _, st := range out.States {
		want := format.StateDigestEqual
		if st.Topic == sample.Changelog && st.Partition == 0 {
			want = format.StateDigestDifferent
		}
		if st.Result != want {
			t.Errorf("--json: %s/%d state %q, want %q", st.Topic, st.Partition, st.Result, want)
		}
	}
}

// TestRestoreOfAnAlteredStateDigestExits1: a backup whose manifest records
// another state digest than its changelog's records encode makes restore
// print its report with the partition DIFFERENT and exit 1, saying not to
// start the application and how to tell which side is wrong.
func TestRestoreOfAnAlteredStateDigestExits1(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := testkit.StartKfake(t, 3)
	ctx := t.Context()
	if err := sample.Seed(ctx, testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include})
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Manifest(ctx, store, res.BackupID)
	if err != nil {
		t.Fatal(err)
	}
	for ti := range m.Topics {
		if m.Topics[ti].Name == sample.Customers {
			m.Topics[ti].PartitionCuts[0].StateDigest.Keys++
		}
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, format.ManifestKey(m.BackupID), strings.NewReader(string(b)), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), dir)
	// verify --deep decodes every record: it recomputes the digest and
	// finds the manifest's altered (a new-user fault: it passed).
	code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg, "--deep")
	if code != exitUsage || !strings.Contains(stdout, `topic "customers" partition 0: state digest`) ||
		!strings.Contains(stdout, "the manifest's state_digest says") || !strings.Contains(stderr, "the manifest's state digests do not match the backup's records") ||
		!strings.Contains(stderr, "restore an older backup") || !strings.Contains(stderr, "--full") {
		t.Errorf("verify --deep of an altered state digest: exit %d, want %d naming customers partition 0 and the way out\n%s\n%s", code, exitUsage, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes")
	// The headline says the restore failed its state check, not "complete"
	// (a new-user fault).
	if !regexp.MustCompile(`\Arestore \S+ FAILED the state check: 1 changelog partition holds another state than the backup's \(`).MatchString(stdout) {
		t.Errorf("restore that fails the state check: the headline does not say so:\n%s", stdout)
	}
	if code != exitError || !strings.Contains(stdout, "1 changelog partition DIFFERENT from the backup's state") ||
		!strings.Contains(stderr, `topic "customers" partition 0`) || !strings.Contains(stderr, "do not start the application") ||
		!strings.Contains(stderr, "verify -c") {
		t.Fatalf("restore of a backup with an altered state digest: exit %d, want %d with the report and the way out\n%s\n%s", code, exitError, stdout, stderr)
	}
	// verify finds every record equal and the state different, and says
	// what that means (not "run the same restore again").
	code, stdout, stderr = runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitError || !strings.Contains(stdout, `state of store "customers" (topic customers, 2 partitions): different`) ||
		!strings.Contains(stderr, "do not match its records") || strings.Contains(stderr, "run the same restore again") {
		t.Fatalf("verify --against-cluster after the failed state check: exit %d, want %d with the state hint\n%s\n%s", code, exitError, stdout, stderr)
	}
	// The same restore again checks again: never "already complete", exit 0.
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes")
	if code != exitError || strings.Contains(stdout, "already complete") || !strings.Contains(stdout, "DIFFERENT") {
		t.Fatalf("the same restore again: exit %d, want %d and the state check again\n%s\n%s", code, exitError, stdout, stderr)
	}
	// --json says it to a script: "status": "failed".
	code, stdout, stderr = runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes", "--json")
	var status struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(stdout), &status); code != exitError || err != nil || status.Status != "failed" {
		t.Errorf("restore --json that fails the state check: exit %d (%v), status %q; want %d, status failed\n%s\n%s", code, err, status.Status, exitError, stdout, stderr)
	}
}

// TestRestoreEmbeddedOfAnAlteredStateDigestExits1: restore --embedded of a
// repository whose manifest records another state digest than its records
// prints the report with the difference and exits 1 with the way out.
func TestRestoreEmbeddedOfAnAlteredStateDigestExits1(t *testing.T) {
	repo := embeddedRepository(t)
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	altered := false
	for ti := range m.Topics {
		for pi := range m.Topics[ti].PartitionCuts {
			if d := m.Topics[ti].PartitionCuts[pi].StateDigest; d != nil && !altered {
				d.Keys += 1000
				altered = true
			}
		}
	}
	if !altered {
		t.Fatal("the embedded backup records no state digest")
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ManifestKey(m.BackupID), strings.NewReader(string(b)), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBounded(t, "--log-level", "error", "restore", "--embedded", "--from", repo)
	if code != exitError || !strings.Contains(stdout, "1 changelog partition DIFFERENT from the backup's state") || !strings.Contains(stderr, "do not start the application") ||
		!strings.Contains(stdout, "FAILED the state check") {
		t.Fatalf("exit %d, want %d with the difference (in the headline too) and the way out\n%s\n%s", code, exitError, stdout, stderr)
	}
}
