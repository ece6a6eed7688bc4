package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestVerifyAgainstClusterComparesTheRestoredBackup is a regression test
// (new user, Kafka 4.4): after `restore --strategy rebuild` of backup A
// and two more backups B and C, `verify --against-cluster` said
// "comparing with ... restore <id>" (whose report is of A) but checked C,
// the newest: problems (a changelog "missing on the target", which a
// rebuild skips by design), exit 1, "restore it again into an empty
// cluster". Without --backup-id it compares the backup of the latest
// restore report into the target, and says so; an explicit --backup-id
// that was not restored there is refused, naming the one that was.
func TestVerifyAgainstClusterComparesTheRestoredBackup(t *testing.T) {
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
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	backupOnce := func() string {
		t.Helper()
		r, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store,
			ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include, SourceClusterID: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		return r.BackupID
	}
	a := backupOnce()
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), dir)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--backup-id", a, "--strategy", "rebuild", "--yes"); code != exitOK {
		t.Fatalf("restore --strategy rebuild: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var later []string
	for i := range 2 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sample.Orders, Partition: int32(i), Value: []byte("after the restore")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		later = append(later, backupOnce())
	}

	code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitOK || !strings.Contains(stdout, "backup "+a+": checked") || !strings.Contains(stdout, "OK") {
		t.Fatalf("verify --against-cluster after restoring %s (newest %s): exit %d, want 0 comparing %s\n%s\n%s", a, later[1], code, a, stdout, stderr)
	}
	if !strings.Contains(stderr, "backup "+a) || !strings.Contains(stderr, "latest restore into cluster") {
		t.Errorf("verify does not say which backup it compares, and why:\n%s", stderr)
	}
	if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster", "--backup-id", a); code != exitOK {
		t.Errorf("--backup-id %s (the restored one): exit %d\n%s\n%s", a, code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "verify", "-c", cfg, "--against-cluster", "--backup-id", later[1])
	if code != exitUsage || !strings.Contains(stderr, later[1]) || !strings.Contains(stderr, "of backup "+a) || strings.Contains(stdout, "problem") {
		t.Fatalf("--backup-id %s, never restored there: exit %d, want %d refused naming %s\n%s\n%s", later[1], code, exitUsage, a, stdout, stderr)
	}

	// A damaged journal of the backup named (second new-user pass: exit 1
	// and "run the command again", which cannot help): exit 2 naming the
	// journal and the way out, as restore does.
	journals, err := filepath.Glob(filepath.Join(dir, "restores", "journals", a, "*.json"))
	if err != nil || len(journals) != 1 {
		t.Fatalf("the restore of %s left journals %v (%v), want one", a, journals, err)
	}
	clusterID := strings.TrimSuffix(filepath.Base(journals[0]), ".json")
	key := format.RestoreJournalKey(later[0], clusterID)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, key)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "verify", "-c", cfg, "--against-cluster", "--backup-id", later[0])
	if code != damageExitCode || !strings.Contains(stderr, key) || !strings.Contains(stderr, "Delete it") {
		t.Errorf("--backup-id %s with a damaged journal: exit %d, want %d naming %s and the way out\n%s\n%s", later[0], code, damageExitCode, key, stdout, stderr)
	}
}

// TestVerifyAfterInterruptedRestoreSaysResume is a regression test: after
// a restore that did not finish (no report; its journal says incomplete),
// verify --against-cluster found records missing and said "restore it
// again into an empty cluster", which refuses the topics the restore
// created; running the same restore again resumes it.
func TestVerifyAfterInterruptedRestoreSaysResume(t *testing.T) {
	t.Parallel()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	cfg := backedUpEvents(t, 20, dst.ListenAddrs()[0], "  request_timeout: 500ms\n  retry_timeout: 2s\n")
	var healed atomic.Bool
	dst.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if healed.Load() {
			dst.DropControl()
			return nil, nil, false
		}
		dst.KeepControl()
		return nil, nil, true // read, never answered: the restore gives up
	})
	rctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, out, errOut := testStreams()
	if code := exitCode(rctx, run(rctx, []string{"--log-level", "error", "restore", "-c", cfg, "--yes"}, s)); code != exitError {
		t.Fatalf("restore against a broker that never answers Produce: exit %d, want %d\n%s\n%s", code, exitError, out, errOut)
	}
	healed.Store(true)

	code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitError || !strings.Contains(stderr, "run the same restore again: it resumes") || strings.Contains(stderr, "empty cluster") {
		t.Fatalf("verify after an interrupted restore: exit %d, want %d with the resume hint\n%s\n%s", code, exitError, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("the same restore again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster"); code != exitOK {
		t.Fatalf("verify after the resumed restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
