package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
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
}
