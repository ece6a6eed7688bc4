package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestVerifyDetectsDamage: a flipped byte, a missing segment and a
// truncated manifest each fail verify with a message naming the object,
// and exit 1.
func TestVerifyDetectsDamage(t *testing.T) {
	repo := embeddedRepository(t)
	cfg := restoreConfig(t, []string{"127.0.0.1:1"}, repo)
	for _, args := range [][]string{{"verify", "-c", cfg}, {"verify", "-c", cfg, "--deep"}} {
		if code, stdout, stderr := runCLI(t, args...); code != exitOK || !strings.Contains(stdout, "OK") {
			t.Fatalf("%q on an intact backup: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	store, _ := storage.NewFilesystem(repo)
	id, err := latestBackupID(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.LoadManifest(context.Background(), store, format.ManifestKey(id))
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
	flipped, missing := keys[0], keys[1]
	b, _ := os.ReadFile(filepath.Join(repo, flipped))
	b[len(b)/2] ^= 1
	os.WriteFile(filepath.Join(repo, flipped), b, 0o600)
	os.Remove(filepath.Join(repo, missing))

	code, stdout, _ := runCLI(t, "verify", "-c", cfg)
	if code != exitUsage || !strings.Contains(stdout, flipped+" topic") || !strings.Contains(stdout, "SHA-256") ||
		!strings.Contains(stdout, missing+" topic") || !strings.Contains(stdout, "missing") {
		t.Fatalf("damaged backup: exit %d\n%s", code, stdout)
	}

	manifest := filepath.Join(repo, format.ManifestKey(id))
	mb, _ := os.ReadFile(manifest)
	os.WriteFile(manifest, mb[:len(mb)/2], 0o600)
	code, _, stderr := runCLI(t, "verify", "-c", cfg)
	if code != exitUsage || !strings.Contains(stderr, format.ManifestKey(id)) || !strings.Contains(stderr, "damaged or truncated") {
		t.Fatalf("truncated manifest: exit %d\n%s", code, stderr)
	}
}

// TestVerifyAgainstCluster: after a restore, the target matches; a record
// changed or missing on the target is named with its partition and offset.
func TestVerifyAgainstCluster(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--against-cluster"); code != exitOK || !strings.Contains(stdout, "OK") {
		t.Fatalf("restored cluster: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cl := testkit.Client(t, target.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: sample.Payments, Partition: 0, Value: []byte("stray")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := runCLI(t, "verify", "-c", cfg, "--against-cluster")
	if code != exitError || !strings.Contains(stdout, `topic "payments" partition 0 offset 12: extra`) {
		t.Fatalf("extra record: exit %d\n%s", code, stdout)
	}
}

// TestReadCommandsRefuseAMissingRepository is a regression test (new-user
// test): prune on a mistyped storage.path created the directory and
// reported an empty repository.
func TestReadCommandsRefuseAMissingRepository(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo", "repo")
	cfg := restoreConfig(t, []string{"127.0.0.1:1"}, missing)
	for _, args := range [][]string{
		{"list", "-c", cfg}, {"describe", "-c", cfg}, {"prune", "-c", cfg, "--keep-last", "1"},
		{"verify", "-c", cfg}, {"estimate", "-c", cfg, "--no-cluster"}, {"offsets", "show", "-c", cfg},
		{"restore", "-c", cfg, "--dry-run"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "no such directory") {
			t.Errorf("%q: exit %d, stderr %s", args, code, stderr)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a read-only command created %s", missing)
	}
}

// TestVerifyDeepNamesADamagedZstdFrame is a regression test (third new-user
// pass): verify --deep on a segment with a byte flipped in its zstd frame
// said "does not decode before its first record: corrupt segment: reading
// header: maximum output size exceeded", the zstd library's text as the
// message. The problem names the segment, its topic and partition and says
// in our words that its zstd frame is damaged (the library's text may
// follow in parentheses); the error names the backup, the hint the way out.
func TestVerifyDeepNamesADamagedZstdFrame(t *testing.T) {
	repo := embeddedRepository(t)
	cfg := restoreConfig(t, []string{"127.0.0.1:1"}, repo)
	store, _ := storage.NewFilesystem(repo)
	id, err := latestBackupID(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.LoadManifest(context.Background(), store, format.ManifestKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var key, topic string
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			if len(p.Segments) > 0 && key == "" && p.Segments[0].Size > 64 {
				key, topic = p.Segments[0].Key, tp.Name
			}
		}
	}
	if key == "" {
		t.Fatal("the embedded backup has no segment of more than 64 bytes")
	}
	orig, err := os.ReadFile(filepath.Join(repo, key))
	if err != nil {
		t.Fatal(err)
	}
	// Byte 12 is in the first block's header (the user's "maximum output
	// size exceeded"), the middle in its data, the end in the frame's
	// checksum.
	for _, pos := range []int{12, len(orig) / 2, len(orig) - 2} {
		b := append([]byte{}, orig...)
		b[pos] ^= 0x20
		if err := os.WriteFile(filepath.Join(repo, key), b, 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "--log-level", "error", "verify", "-c", cfg, "--deep")
		t.Logf("byte %d flipped: exit %d\nstdout:\n%s\nstderr:\n%s", pos, code, stdout, stderr)
		var decode string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.Contains(l, "does not decode") {
				decode = l
			}
		}
		for _, w := range []string{key + ` topic "` + topic + `"`, "its zstd frame is damaged"} {
			if !strings.Contains(decode, w) {
				t.Errorf("byte %d flipped: the decode problem %q does not say %q\nstdout:\n%s", pos, decode, w, stdout)
			}
		}
		for _, lib := range []string{": reading header: ", "corrupt segment: "} {
			if strings.Contains(decode, lib) {
				t.Errorf("byte %d flipped: the decode problem leads with the library's text (%q): %s", pos, lib, decode)
			}
		}
		if code != exitUsage || !strings.Contains(stderr, "backup "+id) || !strings.Contains(stderr, "--backup-id") {
			t.Errorf("byte %d flipped: exit %d, want %d naming backup %s and the way out\nstderr:\n%s", pos, code, exitUsage, id, stderr)
		}
	}
}
