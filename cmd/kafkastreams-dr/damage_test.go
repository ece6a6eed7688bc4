package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// onDisk returns the path of the object at key in versitygw's posix root
// (the test's own t.TempDir()).
func (r *faultyRepo) onDisk(key string) string {
	return filepath.Join(r.srv.Dir, r.srv.Bucket, filepath.FromSlash(faultyPrefix+"/"+key))
}

// flipOnDisk flips one byte in the middle of the stored object at key, in
// versitygw's data directory: the object keeps its size and its stored
// CRC32, its bytes no longer match it.
func (r *faultyRepo) flipOnDisk(t *testing.T, key string) {
	t.Helper()
	path := r.onDisk(key)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestS3DamagedSegmentsAreDamage is the new-user fault of issue 9's
// follow-up: on S3 a segment whose stored bytes no longer match its stored
// checksum (a byte flipped, a file truncated in the store's data
// directory) was reported as a storage failure, exit 1, naming one object
// with the "check target.bootstrap_servers" hint. Like on the filesystem
// it is damage: exit 2 before the first write, every damaged key named,
// the verify --deep / older --backup-id hint; verify finds it too.
func TestS3DamagedSegmentsAreDamage(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	m, err := repository.Latest(t.Context(), r.store)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			for _, s := range p.Segments {
				keys = append(keys, s.Key)
			}
		}
	}
	if len(keys) < 3 {
		t.Fatalf("the newest backup has %d segments, want 3 or more", len(keys))
	}
	flipped, truncated := keys[:2], keys[len(keys)-1]
	for _, k := range flipped {
		r.flipOnDisk(t, k)
	}
	if fi, err := os.Stat(r.onDisk(truncated)); err != nil {
		t.Fatal(err)
	} else if err := os.Truncate(r.onDisk(truncated), fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	damaged := append(append([]string{}, flipped...), truncated)

	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	code, stdout, stderr := runBounded(t, "restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target)
	t.Logf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	if code != exitUsage {
		t.Errorf("restore: exit %d, want 2 (refused before the first write)", code)
	}
	for _, k := range damaged {
		if !strings.Contains(stderr, k) {
			t.Errorf("restore: stderr does not name the damaged segment %s", k)
		}
	}
	for _, want := range []string{"is damaged", "verify", "--backup-id", "nothing was written"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("restore: stderr does not say %q", want)
		}
	}
	for _, bad := range []string{"target.bootstrap_servers", "run the command again", "run the same command again"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("restore: damage is given the hint of another failure (%q)", bad)
		}
	}

	code, stdout, stderr = runBounded(t, "verify", "-c", r.cfg)
	t.Logf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	if code != exitUsage {
		t.Errorf("verify: exit %d for a damaged backup, want 2 as for restore", code)
	}
	for _, k := range damaged {
		if !strings.Contains(stdout+stderr, k) {
			t.Errorf("verify: output does not name the damaged segment %s", k)
		}
	}
	if strings.Contains(stderr, "run the command again") {
		t.Error("verify: damage is given the re-run hint")
	}

	// The other readers of segments (second new-user pass: exit 1 with
	// "check target.bootstrap_servers", "check the drill target", or no
	// hint at all).
	for name, args := range map[string][]string{
		"drill":             {"drill", "-c", r.cfg, "--backup-id", "latest", "--target-bootstrap-servers", strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")},
		"offsets translate": {"offsets", "translate", "-c", r.cfg},
	} {
		code, stdout, stderr := runBounded(t, args...)
		t.Logf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		if code != exitUsage {
			t.Errorf("%s: exit %d for a damaged backup, want 2", name, code)
		}
		if !strings.Contains(stdout+stderr, "verify") || !strings.Contains(stdout+stderr, "--backup-id") {
			t.Errorf("%s: no verify / --backup-id hint", name)
		}
		for _, bad := range []string{"check target.bootstrap_servers", "check the drill target", "run the command again", "run the same command again"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("%s: damage is given the hint of another failure (%q)", name, bad)
			}
		}
	}
}

// TestTransientStorageFailureHint: every command whose storage fails
// transiently says so, with the re-run hint. The restore's pre-check
// timing out on a segment ended "(nothing was written)" with no hint (the
// error wraps context.DeadlineExceeded, which was taken for the user's
// cancellation).
func TestTransientStorageFailureHint(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	hint := "this is a storage or network failure, not damage to the backups: run the command again"
	check := func(name string, args ...string) {
		t.Helper()
		code, stdout, stderr := runBounded(t, args...)
		t.Logf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		if code != exitError {
			t.Errorf("%s: exit %d, want 1", name, code)
		}
		if !strings.Contains(stderr, hint) {
			t.Errorf("%s: stderr does not say %q", name, hint)
		}
		if strings.Contains(stderr, "damaged") {
			t.Errorf("%s: a storage failure is called damage", name)
		}
	}

	// Segments: the download stalls until storage.request_timeout, every
	// attempt, until storage.retry_timeout.
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Ranged: true, Action: testkit.FaultStallBody})
	check("restore (pre-check)", "restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target)
	check("verify", "verify", "-c", r.cfg)
	if len(r.proxy.Injected()) == 0 {
		t.Fatal("no fault injected: the test shows nothing")
	}
	// Segments: the store accepts the request and never answers.
	r.proxy.Clear()
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Ranged: true, Action: testkit.FaultHang})
	check("restore (pre-check, no answer)", "restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target)
	check("verify (no answer)", "verify", "-c", r.cfg)

	// Everything: the store does not answer at all.
	r.proxy.Clear()
	r.proxy.Fault(testkit.Fault{Action: testkit.FaultHang, Ranged: true})
	for name, args := range map[string][]string{
		"list":         {"list", "-c", r.cfg},
		"describe":     {"describe", "-c", r.cfg},
		"verify":       {"verify", "-c", r.cfg},
		"restore":      {"restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target},
		"offsets show": {"offsets", "show", "-c", r.cfg},
		"prune":        {"prune", "-c", r.cfg, "--keep-last", "1", "--dry-run"},
		"estimate":     {"estimate", "-c", r.cfg, "--no-cluster"},
	} {
		check(name+" (no answer)", args...)
	}
}

// TestRestoreInterruptedBySIGTERM runs restore in a process of its own
// (main and all, see TestHelperMain) and sends it SIGTERM while it reads
// its segments: it exits 130 with "Error: interrupted" and, as it printed
// nothing else before, the next step: run the same command again, the
// restore resumes. It does: the same command then completes.
func TestRestoreInterruptedBySIGTERM(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	args := []string{"restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target}
	r.proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Ranged: true, Action: testkit.FaultHang})
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KDR_HELPER_MAIN_ARGS="+string(a))
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for len(r.proxy.Injected()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the restore read no segment in 30s:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the restore did not stop within 30s of SIGTERM:\n%s", stderr.String())
	}
	t.Logf("interrupted restore: exit %d\n%s", cmd.ProcessState.ExitCode(), stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != exitCancelled {
		t.Errorf("exit %d after SIGTERM, want %d", code, exitCancelled)
	}
	for _, want := range []string{"Error: interrupted", "run the same command again: the restore resumes"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q", want)
		}
	}

	r.proxy.Clear()
	if code, stdout, stderr := runBounded(t, args...); code != exitOK {
		t.Errorf("the same restore after SIGTERM: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestRestoreOfAnIncompleteBackup: a backup that list shows as running
// (only a progress.json: running, or interrupted and resumed by the next
// backup) was answered by restore --backup-id with "no such backup". Now
// restore and describe say it is not complete and why, and name the latest
// complete backup; exit 2.
func TestRestoreOfAnIncompleteBackup(t *testing.T) {
	store, storageYAML := catalogRepos[0].open(t)
	ids, cfg := threeBackups(t, store, storageYAML)
	m, err := repository.LoadManifest(t.Context(), store, format.ManifestKey(ids[2]))
	if err != nil {
		t.Fatal(err)
	}
	at, err := format.BackupIDTime(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	running := format.NewBackupID(at.Add(time.Second), [4]byte{0xab, 0xcd, 0, 1})
	c := *m
	c.BackupID, c.State, c.ParentBackupID, c.FinishedAt = running, format.StateRunning, m.BackupID, time.Time{}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ProgressKey(running), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCLI(t, "list", "-c", cfg); code != exitOK || !strings.Contains(stdout, running+"  running") {
		t.Fatalf("list does not show %s running: exit %d\n%s", running, code, stdout)
	}
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	for name, args := range map[string][]string{
		"restore":  {"restore", "-c", cfg, "--backup-id", running, "--dry-run", "--target-bootstrap-servers", target},
		"describe": {"describe", "-c", cfg, "--backup-id", running},
	} {
		code, stdout, stderr := runCLI(t, args...)
		t.Logf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
		if strings.Contains(stderr, "has no backup") {
			t.Errorf("%s: an incomplete backup is called no such backup", name)
		}
		for _, want := range []string{"backup " + running + " is not complete", "running or interrupted", "the next backup resumes it", "latest complete backup is " + ids[2]} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr does not say %q", name, want)
			}
		}
	}
}

// TestConfigValidateS3PrefixAsTheStorage: config validate accepted S3
// prefixes that every S3 command then refused ("./pa": a "." path
// element, "pc//d/": an empty one). It applies the storage's key rule
// (storage.ValidatePrefix, the one NewS3 applies), exit 2 naming the key,
// its line and the fix; a prefix the storage accepts (a trailing "/") is
// accepted by both.
func TestConfigValidateS3PrefixAsTheStorage(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	cfgWith := func(prefix string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf("application_id: order-processor\nsource:\n  bootstrap_servers: [127.0.0.1:9092]\n  topics:\n    include: [orders]\n"+
			"storage:\n  backend: s3\n  bucket: %s\n  region: %s\n  endpoint: %s\n  path_style: true\n  prefix: %q\n", srv.Bucket, srv.Region, srv.Endpoint, prefix))
	}
	// "a\bq", "a\x7fq": a control character was accepted and hid every
	// backup (S3 servers list such keys back altered; second new-user
	// pass).
	for _, prefix := range []string{"./pa", "pc//d/", "a/../b", "a/.tmp-x/b", `a\b`, "a\bq", "a\x7fq", "a\tb"} {
		code, stdout, stderr := runCLI(t, "config", "validate", "-c", cfgWith(prefix))
		t.Logf("prefix %q: exit %d\n%s%s", prefix, code, stdout, stderr)
		if code != exitUsage {
			t.Errorf("prefix %q: config validate exit %d, want 2", prefix, code)
		}
		for _, want := range []string{"storage.prefix", "line 12", "write it"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("prefix %q: stderr does not say %q", prefix, want)
			}
		}
		if _, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true}); err == nil {
			t.Errorf("prefix %q: config validate refuses it, the S3 storage accepts it: two rules", prefix)
		}
	}
	for _, prefix := range []string{"pa/", "apps/order-processor"} {
		if code, stdout, stderr := runCLI(t, "config", "validate", "-c", cfgWith(prefix)); code != exitOK {
			t.Errorf("prefix %q: config validate exit %d\n%s%s", prefix, code, stdout, stderr)
		}
		if _, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true}); err != nil {
			t.Errorf("prefix %q: config validate accepts it, the S3 storage does not: %v", prefix, err)
		}
	}
}

// TestS3DamagedManifestIsDamage: a byte flipped in a stored manifest in
// versitygw's data directory (the JSON may still decode: the flip can
// land in a string) is damage in every reader, exit 2, naming the
// manifest: the store's checksum of the whole object is checked, the
// decoder's stopping at the closing brace does not skip it.
func TestS3DamagedManifestIsDamage(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	newest := r.ids[2]
	key := format.ManifestKey(newest)
	// One hex digit of a segment's SHA-256: the JSON still decodes and
	// validates, only the store's checksum tells.
	path := r.onDisk(key)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"sha256": "`))
	if i < 0 {
		t.Fatalf("no sha256 in %s", key)
	}
	i += len(`"sha256": "`)
	b[i] = map[bool]byte{true: '1', false: '0'}[b[i] == '0']
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	for name, args := range map[string][]string{
		"describe": {"describe", "-c", r.cfg, "--backup-id", newest},
		"verify":   {"verify", "-c", r.cfg, "--backup-id", newest},
		"restore":  {"restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target},
		"list":     {"list", "-c", r.cfg},
	} {
		code, stdout, stderr := runBounded(t, args...)
		t.Logf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
		if !strings.Contains(stdout+stderr, key) {
			t.Errorf("%s: the output does not name %s", name, key)
		}
		if strings.Contains(stderr, "run the command again") {
			t.Errorf("%s: damage is given the re-run hint", name)
		}
	}
}

// TestVerifyAgainstClusterOfADamagedBackup: a segment damaged after the
// restore makes verify --against-cluster exit 2 with the verify --deep /
// --backup-id hint (second new-user pass: exit 1, "check
// target.bootstrap_servers").
func TestVerifyAgainstClusterOfADamagedBackup(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	target := strings.Join(testkit.StartKfake(t, 3).Addrs(), ",")
	if code, stdout, stderr := runBounded(t, "restore", "-c", r.cfg, "--yes", "--target-bootstrap-servers", target); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m, err := repository.Latest(t.Context(), r.store)
	if err != nil {
		t.Fatal(err)
	}
	key := m.Topics[0].PartitionCuts[0].Segments[0].Key
	r.flipOnDisk(t, key)
	code, stdout, stderr := runBounded(t, "verify", "-c", r.cfg, "--against-cluster", "--target-bootstrap-servers", target)
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	if code != exitUsage {
		t.Errorf("exit %d for a damaged backup, want 2", code)
	}
	if !strings.Contains(stderr, "--deep") || !strings.Contains(stderr, "--backup-id") || strings.Contains(stderr, "check target.bootstrap_servers") {
		t.Errorf("the hint is not the damage hint:\n%s", stderr)
	}
}

// TestVerifyAgainstAnEmptyTarget: a topic the target lacks is named
// missing, exit 1, without a Go "<nil>" where no Kafka error was given
// (second new-user pass: "missing on the target (<nil>)").
func TestVerifyAgainstAnEmptyTarget(t *testing.T) {
	t.Parallel()
	r := newFaultyRepo(t)
	target := strings.Join(testkit.StartKfake(t, 1).Addrs(), ",")
	code, stdout, stderr := runBounded(t, "verify", "-c", r.cfg, "--against-cluster", "--target-bootstrap-servers", target)
	if code != exitError || !strings.Contains(stdout, "missing on the target") || strings.Contains(stdout+stderr, "<nil>") {
		t.Errorf("exit %d, want 1 naming the missing partitions without <nil>:\n%s\n%s", code, stdout, stderr)
	}
}
