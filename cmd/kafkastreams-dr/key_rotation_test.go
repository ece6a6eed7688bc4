package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// ringOf is the keyring of keys, the first the primary.
func ringOf(t *testing.T, keys ...repoKey) *storage.Keyring {
	t.Helper()
	ring := &storage.Keyring{}
	for _, k := range keys {
		if err := ring.Add(k.raw); err != nil {
			t.Fatal(err)
		}
	}
	return ring
}

// TestKeyRotationLeavesReportsReadable is a new user's fault (issue 14):
// after the documented rotation (k2 primary, k1 in previous_keys, backup
// --full, prune --keep-last 1, list showing k2 only, k1 dropped) estimate
// failed with exit 2 on a restore report still under k1. Now: list says
// which key ids the kept restore and drill reports need (k1) while k1 is
// configured; with k1 dropped, estimate and drill history skip the
// reports under k1 with a warning naming its id and exit 0, and list
// still names k1 as needed by the reports, "not configured". On a local
// directory.
func TestKeyRotationLeavesReportsReadable(t *testing.T) {
	repo := encFilesystemRepo(t)
	src := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	k1, k2 := newRepoKey(t), newRepoKey(t)
	cfg1 := encConfig(t, src.Addrs(), nil, repo, &k1)
	if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg1); code != exitOK {
		t.Fatalf("backup under k1: exit %d\n%s", code, stderr)
	}
	// A restore and a drill under k1 wrote their reports (as restore and
	// drill do, through the encrypting store).
	under1 := storage.Encrypt(repo.raw, ringOf(t, k1), format.IsLockKey)
	start := time.Now().UTC().Add(-time.Hour)
	restoreID := format.NewBackupID(start, [4]byte{0, 0, 0, 1})
	if err := repository.SaveReport(t.Context(), under1, &format.RestoreReport{RestoreID: restoreID, StartedAt: start, FinishedAt: start.Add(2 * time.Second), Records: 1000}); err != nil {
		t.Fatal(err)
	}
	drillID := format.NewBackupID(start.Add(time.Minute), [4]byte{0, 0, 0, 2})
	if err := repository.SaveDrillReport(t.Context(), under1, &format.DrillReport{DrillID: drillID, ApplicationID: sample.AppID, StartedAt: start, LostAt: start, FinishedAt: start.Add(time.Minute), OK: true}); err != nil {
		t.Fatal(err)
	}

	// The rotation of docs/OPERATIONS.md "Encryption".
	cfg21 := encConfig(t, src.Addrs(), nil, repo, &k2, k1)
	for _, args := range [][]string{{"backup", "--full"}, {"prune", "--keep-last", "1"}} {
		if code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error"}, append(args, "-c", cfg21)...)...); code != exitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	for id, keys := range listKeyIDs(t, cfg21) {
		if len(keys) != 1 || keys[0] != k2.id {
			t.Fatalf("after the rotation backup %s needs key ids %v, want only %s", id, keys, k2.id)
		}
	}
	want := "restore and drill reports need key id " + k1.id
	if code, stdout, stderr := runCLI(t, "list", "-c", cfg21); code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("list with k1 configured: exit %d, want a line %q:\n%s\n%s", code, want, stdout, stderr)
	}

	// k1 dropped.
	cfg2 := encConfig(t, src.Addrs(), nil, repo, &k2)
	for _, tc := range []struct {
		args []string
		want []string // on stdout and stderr
	}{
		{[]string{"estimate", "--no-cluster"}, []string{"warning: ", format.RestoreReportKey(restoreID), "key id " + k1.id}},
		{[]string{"drill", "history"}, []string{format.DrillReportKey(drillID), "key id " + k1.id}},
		{[]string{"list"}, []string{want + " (not configured)"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(tc.args, "-c", cfg2)...)
			if code != exitOK {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output does not say %q:\nstdout:\n%s\nstderr:\n%s", w, stdout, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "damaged") {
				t.Errorf("a report under a dropped key is called damaged:\n%s\n%s", stdout, stderr)
			}
		})
	}
}

// TestRestoreDryRunRefusesAMissingKey is a new user's fault (issue 14):
// with k1 dropped, restore --dry-run of an incremental backup under k2
// whose parent's segments are under k1 said the restore would succeed
// (exit 0) while the real restore was refused (exit 2). Both now refuse
// before anything, exit 2, naming the key ids the backup needs
// (Manifest.KeyIDs) that storage.encryption does not hold; the target
// gets no topic. On a local directory.
func TestRestoreDryRunRefusesAMissingKey(t *testing.T) {
	repo := encFilesystemRepo(t)
	src := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Records of now only: a plan reads no segment of them (no
	// timestamp near a limit), so only the key check can refuse a dry run.
	if _, err := testkit.Admin(t, src.Addrs()).CreateTopic(t.Context(), 3, 1, nil, sample.Orders); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, 50)
	k1, k2 := newRepoKey(t), newRepoKey(t)
	target := testkit.StartKfake(t, 1)
	config := func(keys ...repoKey) string {
		return writeFile(t, "orders.yaml", fmt.Sprintf("application_id: %s\nsource:\n  bootstrap_servers: [%s]\n  topics:\n    include: [orders]\ntarget:\n  bootstrap_servers: [%s]\n%s%s",
			sample.AppID, strings.Join(src.Addrs(), ", "), strings.Join(target.Addrs(), ", "), repo.storageYAML, encryptionYAML(&keys[0], keys[1:]...)))
	}
	if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", config(k1)); code != exitOK {
		t.Fatalf("backup under k1: exit %d\n%s", code, stderr)
	}
	produceOrders(t, cl, 50, 50)
	if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", config(k2, k1)); code != exitOK {
		t.Fatalf("backup under k2: exit %d\n%s", code, stderr)
	}
	cfg := config(k2)
	for _, args := range [][]string{
		{"restore", "--dry-run"},
		{"restore", "--yes"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error"}, append(args, "-c", cfg)...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			for _, w := range []string{"needs key id " + k1.id, "configured key ids: " + k2.id, "storage.encryption.previous_keys"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if topics, err := testkit.Admin(t, target.Addrs()).ListTopics(t.Context()); err != nil || len(topics) != 0 {
				t.Errorf("after the refused restore the target has topics %v (%v)", topics.Names(), err)
			}
		})
	}
	// verify of the same backup: every problem is the missing key, so the
	// closing hint is the key's, not "a damaged or missing segment".
	t.Run("verify", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg)
		if code != exitUsage {
			t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
		}
		for _, w := range []string{"needs key id " + k1.id, "add the key with id " + k1.id + " to storage.encryption.previous_keys"} {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("verify does not say %q:\nstdout:\n%s\nstderr:\n%s", w, stdout, stderr)
			}
		}
		if strings.Contains(stderr, "damaged or missing segment") {
			t.Errorf("verify calls segments under a missing key damaged:\n%s", stderr)
		}
	})
}

// TestEmbeddedRestoreOfAnEncryptedRepository is a new user's fault (issue
// 14): restore --embedded --from DIR on an encrypted repository said
// "decode manifest: not valid JSON ... the manifest is damaged". It now
// says the repository is encrypted (naming the key id) and that
// --embedded reads plaintext only, with the -c CONFIG way; exit 2. On a
// local directory.
func TestEmbeddedRestoreOfAnEncryptedRepository(t *testing.T) {
	repo := encFilesystemRepo(t)
	src := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	k1 := newRepoKey(t)
	if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", encConfig(t, src.Addrs(), nil, repo, &k1)); code != exitOK {
		t.Fatalf("backup under k1: exit %d\n%s", code, stderr)
	}
	dir := strings.TrimSpace(strings.TrimPrefix(repo.storageYAML[strings.Index(repo.storageYAML, "path: "):], "path: "))
	for _, args := range [][]string{{"--dry-run"}, {}} {
		t.Run(strings.Join(append([]string{"restore", "--embedded"}, args...), " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error", "restore", "--embedded", "--from", dir}, args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			for _, w := range []string{"is encrypted", "key id " + k1.id, "--embedded reads plaintext repositories only", "-c CONFIG", "storage.encryption"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "damaged") || strings.Contains(stderr, "not valid JSON") {
				t.Errorf("an encrypted repository is called damaged:\n%s", stderr)
			}
		})
	}
}
