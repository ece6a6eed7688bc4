package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// repoKey is a repository key written to a file of its own, as
// `openssl rand -base64 32 > FILE` writes it.
type repoKey struct {
	file, text, id string
	raw            []byte
}

func newRepoKey(t *testing.T) repoKey {
	t.Helper()
	raw := make([]byte, storage.KeySize)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	text := base64.StdEncoding.EncodeToString(raw)
	return repoKey{file: writeFile(t, "repo.key", text+"\n"), text: text, id: storage.KeyID(raw), raw: raw}
}

// encryptionYAML is the storage.encryption section of primary and the
// previous keys; none with no primary.
func encryptionYAML(primary *repoKey, previous ...repoKey) string {
	if primary == nil {
		return ""
	}
	s := "  encryption:\n    key_file: " + primary.file + "\n"
	if len(previous) > 0 {
		s += "    previous_keys:\n"
		for _, k := range previous {
			s += "      - key_file: " + k.file + "\n"
		}
	}
	return s
}

// encRepo is where an encryption test's repository lives: the storage
// section of its config and the raw store (no decryption) to read the
// stored bytes with.
type encRepo struct {
	storageYAML string
	raw         storage.Backend
}

func encFilesystemRepo(t *testing.T) encRepo {
	dir := filepath.Join(t.TempDir(), "repo")
	raw, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	return encRepo{storageYAML: "storage:\n  backend: filesystem\n  path: " + dir + "\n", raw: raw}
}

func encS3Repo(t *testing.T) encRepo {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	const prefix = "enc/repo"
	raw, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return encRepo{raw: raw, storageYAML: fmt.Sprintf("storage:\n  backend: s3\n  bucket: %s\n  prefix: %s\n  region: %s\n  endpoint: %s\n  path_style: true\n",
		srv.Bucket, prefix, srv.Region, srv.Endpoint)}
}

// encConfig writes the config of the sample application backed up from
// src (and restored to target, when given) into repo, encrypted with
// primary (plaintext when nil) and the previous keys.
func encConfig(t *testing.T, src, target []string, repo encRepo, primary *repoKey, previous ...repoKey) string {
	t.Helper()
	return sampleConfig(t, "enc.yaml", src, target, repo.storageYAML+encryptionYAML(primary, previous...)+"backup:\n  segment_max_bytes: 16KiB\n")
}

// listKeyIDs runs list --json and returns each backup's key ids by id.
func listKeyIDs(t *testing.T, cfg string) map[string][]string {
	t.Helper()
	code, stdout, stderr := runCLI(t, "list", "-c", cfg, "--json")
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s", code, stderr)
	}
	var out struct {
		Backups []struct {
			BackupID string   `json:"backup_id"`
			KeyIDs   []string `json:"key_ids"`
		} `json:"backups"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("list --json: %v\n%s", err, stdout)
	}
	ids := map[string][]string{}
	for _, b := range out.Backups {
		ids[b.BackupID] = b.KeyIDs
	}
	return ids
}

// TestEncryptedRepository is issue 14's client-side encryption, on a local
// directory and on S3 (versitygw): a backup under key k1 stores no object
// holding a record key, a record value, a topic name or the
// application.id in its raw bytes (the lock excepted: it is plaintext and
// gone after the run); the key is rotated (k2 primary, k1 previous) and an
// incremental backup taken; both backups restore exactly (record for
// record, group offsets committed) and verify --deep; list shows each
// backup's key ids. With k1 dropped, without a key and with another key
// only, restore is refused through the real binary, exit 2, naming the key
// id it needs and the ids configured, and writes nothing to the target; no
// output (at debug level) holds a key.
func TestEncryptedRepository(t *testing.T) {
	for _, backend := range []struct {
		name string
		repo func(t *testing.T) encRepo
	}{{"filesystem", encFilesystemRepo}, {"s3", encS3Repo}} {
		t.Run(backend.name, func(t *testing.T) {
			repo := backend.repo(t)
			src := testkit.StartKfake(t, 3)
			cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err := sample.Seed(t.Context(), cl); err != nil {
				t.Fatal(err)
			}
			produceOrders(t, cl, 0, 300)
			k1, k2, other := newRepoKey(t), newRepoKey(t), newRepoKey(t)

			// Backup 1 under k1.
			cfg1 := encConfig(t, src.Addrs(), nil, repo, &k1)
			if code, _, stderr := runCLI(t, "--log-level", "debug", "backup", "-c", cfg1); code != exitOK {
				t.Fatalf("backup under k1: exit %d\n%s", code, stderr)
			} else if strings.Contains(stderr, k1.text) {
				t.Fatal("the debug log of the backup holds the key")
			}
			assertSealed(t, repo.raw, k1)

			// Rotation: k2 primary, k1 previous; backup 2 continues the chain.
			produceOrders(t, cl, 300, 200)
			cfg2 := encConfig(t, src.Addrs(), nil, repo, &k2, k1)
			if code, _, stderr := runCLI(t, "backup", "-c", cfg2); code != exitOK {
				t.Fatalf("backup under k2: exit %d\n%s", code, stderr)
			}
			assertSealed(t, repo.raw, k1, k2)
			ids := listKeyIDs(t, cfg2)
			ring := &storage.Keyring{}
			for _, k := range []repoKey{k2, k1} {
				if err := ring.Add(k.raw); err != nil {
					t.Fatal(err)
				}
			}
			store := storage.Encrypt(repo.raw, ring, nil)
			backups := completeIDs(t, store)
			if len(backups) != 2 {
				t.Fatalf("complete backups %v, want 2", backups)
			}
			b2, b1 := backups[0], backups[1]
			want1, want2 := []string{k1.id}, []string{k1.id, k2.id}
			slices.Sort(want2)
			if !slices.Equal(ids[b1], want1) || !slices.Equal(ids[b2], want2) {
				t.Errorf("list key ids %v, want %s: %v and %s: %v", ids, b1, want1, b2, want2)
			}
			if code, stdout, _ := runCLI(t, "list", "-c", cfg2); code != exitOK || !strings.Contains(stdout, "KEY IDS") || !strings.Contains(stdout, k1.id+","+k2.id) && !strings.Contains(stdout, k2.id+","+k1.id) {
				t.Errorf("list: exit %d, want a KEY IDS column naming both keys:\n%s", code, stdout)
			}

			if code, stdout, stderr := runCLI(t, "describe", "-c", cfg2, "--backup-id", b2); code != exitOK || !strings.Contains(stdout, "key ids "+strings.Join(want2, ", ")) {
				t.Errorf("describe %s: exit %d, want the key ids %v:\n%s\n%s", b2, code, want2, stdout, stderr)
			}
			for _, id := range []string{b1, b2} {
				m := backupcheck.Latest(t, store, id)
				target := testkit.StartKfake(t, 3)
				cfg := encConfig(t, src.Addrs(), target.Addrs(), repo, &k2, k1)
				if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--backup-id", id, "--deep"); code != exitOK {
					t.Fatalf("verify --deep %s: exit %d\n%s\n%s", id, code, stdout, stderr)
				}
				if code, _, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--backup-id", id, "--yes"); code != exitOK {
					t.Fatalf("restore %s: exit %d\n%s", id, code, stderr)
				}
				restoredExactly(t, store, m, target.Addrs())
			}
			// The restores' reports and journals are sealed too.
			var reports int
			if err := repo.raw.List(t.Context(), "restores/", func(storage.ObjectInfo) error { reports++; return nil }); err != nil || reports < 4 {
				t.Fatalf("%d objects under restores/ after two restores (%v), want reports and journals", reports, err)
			}
			assertSealed(t, repo.raw, k1, k2)

			// The readers and prune with k1 dropped: exit 2 naming k1's id,
			// and prune deletes nothing.
			only2 := encConfig(t, src.Addrs(), nil, repo, &k2)
			before := countObjects(t, repo.raw)
			for _, args := range [][]string{{"list"}, {"describe", "--backup-id", b1}, {"verify", "--backup-id", b2}, {"prune", "--keep-last", "1"}} {
				code, stdout, stderr := runCLI(t, append(args, "-c", only2)...)
				if code != exitUsage || !strings.Contains(stdout+stderr, "key id "+k1.id) {
					t.Errorf("%s with k1 dropped: exit %d, want %d naming key id %s:\n%s\n%s", args[0], code, exitUsage, k1.id, stdout, stderr)
				}
			}
			if after := countObjects(t, repo.raw); after != before {
				t.Errorf("the refused commands changed the repository: %d objects, then %d", before, after)
			}

			// Refusals: nothing is written to the target.
			for _, tc := range []struct {
				name    string
				keys    []repoKey // primary first; none: no storage.encryption
				id      string
				want    []string
				wantNot string
			}{
				{"k1 dropped: backup 1", []repoKey{k2}, b1, []string{"key id " + k1.id, "configured key ids: " + k2.id, "storage.encryption.previous_keys"}, ""},
				{"k1 dropped: backup 2 (its parent's segments)", []repoKey{k2}, b2, []string{"key id " + k1.id, "configured key ids: " + k2.id}, ""},
				{"no key", nil, b2, []string{"encrypted with key id " + k2.id, "no encryption key is configured", "storage.encryption.key_file"}, "damaged"},
				{"another key only", []repoKey{other}, b1, []string{"key id " + k1.id, "configured key ids: " + other.id}, "damaged"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					target := testkit.StartKfake(t, 3)
					var cfg string
					if len(tc.keys) == 0 {
						cfg = encConfig(t, src.Addrs(), target.Addrs(), repo, nil)
					} else {
						cfg = encConfig(t, src.Addrs(), target.Addrs(), repo, &tc.keys[0], tc.keys[1:]...)
					}
					p := startShard(t, "--log-level", "debug", "restore", "-c", cfg, "--backup-id", tc.id, "--yes")
					code := p.wait(t)
					stderr := p.stderr.String()
					t.Logf("restore: exit %d\n%s", code, stderr)
					if code != exitUsage {
						t.Errorf("restore: exit %d, want %d", code, exitUsage)
					}
					for _, w := range tc.want {
						if !strings.Contains(stderr, w) {
							t.Errorf("restore does not say %q", w)
						}
					}
					if tc.wantNot != "" && strings.Contains(stderr, tc.wantNot) {
						t.Errorf("restore says %q of a backup it has no key for", tc.wantNot)
					}
					for _, k := range []repoKey{k1, k2, other} {
						if strings.Contains(stderr+p.stdout.String(), k.text) {
							t.Error("the output holds key material")
						}
					}
					if topics, err := testkit.Admin(t, target.Addrs()).ListTopics(t.Context()); err != nil || len(topics) != 0 {
						t.Fatalf("after the refused restore the target has topics %v (%v)", topics.Names(), err)
					}
				})
			}
		})
	}
}

// assertSealed reads every object of the repository raw: each but the
// lock begins with the envelope magic and the id of one of keys, and none
// holds a record key or value of the sample, a topic name or the
// application.id.
func assertSealed(t *testing.T, raw storage.Backend, keys ...repoKey) {
	t.Helper()
	secrets := [][]byte{[]byte("crash-00"), []byte(`{"order":`), []byte(sample.AppID), []byte(sample.Customers), []byte(sample.Payments)}
	var n int
	err := raw.List(t.Context(), "", func(oi storage.ObjectInfo) error {
		if format.IsLockKey(oi.Key) {
			return nil // plaintext, and gone after a run
		}
		rc, err := raw.Get(t.Context(), oi.Key)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		n++
		if !bytes.HasPrefix(b, []byte(storage.EnvelopeMagic)) {
			t.Errorf("%s is stored in plaintext", oi.Key)
			return nil
		}
		if !slices.ContainsFunc(keys, func(k repoKey) bool {
			return bytes.Equal(b[len(storage.EnvelopeMagic)+2:len(storage.EnvelopeMagic)+10], mustDecodeHex(t, k.id))
		}) {
			t.Errorf("%s is encrypted with none of the configured keys", oi.Key)
		}
		for _, s := range secrets {
			if bytes.Contains(b, s) {
				t.Errorf("%s holds %q in its stored bytes", oi.Key, s)
			}
		}
		for _, k := range keys {
			if bytes.Contains(b, k.raw) || bytes.Contains(b, []byte(k.text)) {
				t.Errorf("%s holds key material", oi.Key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d objects in the repository", n)
	}
}

func countObjects(t *testing.T, b storage.Backend) int {
	t.Helper()
	n := 0
	if err := b.List(t.Context(), "", func(storage.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustDecodeHex(t *testing.T, s string) []byte {
	t.Helper()
	var b []byte
	if _, err := fmt.Sscanf(s, "%x", &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// restoredExactly compares what the target holds with backup m: every
// partition's records (read back by an independent client) with the
// backup's, field for field and offset for offset, and the group's
// committed offsets with the manifest's.
func restoredExactly(t *testing.T, store storage.Backend, m *format.Manifest, addrs []string) {
	t.Helper()
	got, offsets := restored(t, m, addrs)
	total := 0
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			want := backupcheck.Records(t, store, m, tp.Name, p.Partition)
			restorecheck.SameRecords(t, fmt.Sprintf("%s/%d", tp.Name, p.Partition), got[tp.Name][p.Partition], want, false)
			total += len(want)
		}
	}
	if total == 0 {
		t.Fatal("the backup holds no records")
	}
	// The committed offset of each partition is translated: it is the
	// target offset of the first record at or after the source's
	// committed offset (after the last record: past it).
	n := 0
	for _, o := range m.Group.Offsets {
		if !slices.ContainsFunc(m.Topics, func(tp format.Topic) bool { return tp.Name == o.Topic }) {
			continue // a repartition topic's: its tail is restored elsewhere
		}
		want := backupcheck.Records(t, store, m, o.Topic, o.Partition)
		g := got[o.Topic][o.Partition]
		i := slices.IndexFunc(want, func(r format.Record) bool { return r.Offset >= o.Offset })
		committed := offsets[o.Topic][o.Partition]
		switch {
		case i >= 0 && committed != g[i].Offset:
			t.Errorf("group offset %s/%d: restored %d, want %d (the target offset of source offset %d)", o.Topic, o.Partition, committed, g[i].Offset, want[i].Offset)
		case i < 0 && len(g) > 0 && committed <= g[len(g)-1].Offset:
			t.Errorf("group offset %s/%d: restored %d, want past the last record (%d)", o.Topic, o.Partition, committed, g[len(g)-1].Offset)
		}
		n++
	}
	if n == 0 {
		t.Error("the backup has no group offsets to compare")
	}
}

// TestEncryptedCorruptionIsRefusedBeforeTheFirstWrite is the corruption
// matrix (TestCorruptionIsRefusedBeforeTheFirstWrite) on an encrypted
// repository: a ciphertext byte flipped, a chunk truncated or extended,
// two segments swapped (each is sealed to its own key), a manifest
// flipped, cut inside its envelope header or replaced by a segment's
// envelope. verify --deep exits 2 naming the object; restore exits 2
// before its first write (the target has no topic after it).
func TestEncryptedCorruptionIsRefusedBeforeTheFirstWrite(t *testing.T) {
	src := testkit.StartKfake(t, 3)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, 300)
	k1 := newRepoKey(t)
	base := encFilesystemRepo(t)
	if code, _, stderr := runCLI(t, "backup", "-c", encConfig(t, src.Addrs(), nil, base, &k1)); code != exitOK {
		t.Fatalf("backup: exit %d\n%s", code, stderr)
	}
	baseDir := strings.TrimSuffix(strings.TrimPrefix(base.storageYAML, "storage:\n  backend: filesystem\n  path: "), "\n")
	ring := &storage.Keyring{}
	if err := ring.Add(k1.raw); err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), storage.Encrypt(base.raw, ring, nil))
	if err != nil || m == nil {
		t.Fatalf("latest: %v", err)
	}
	var segs []format.Segment
	for _, tp := range m.Topics {
		for _, p := range tp.PartitionCuts {
			segs = append(segs, p.Segments...)
		}
	}
	if len(segs) < 2 {
		t.Fatalf("%d segments, want at least 2", len(segs))
	}
	a, b, manifest := segs[0].Key, segs[1].Key, format.ManifestKey(m.BackupID)
	for _, tc := range []struct {
		name   string
		damage func(r *corruptRepo) string
	}{
		{"segment: a ciphertext byte flipped", func(r *corruptRepo) string {
			x := r.read(t, a)
			x[len(x)/2] ^= 1
			r.write(t, a, x)
			return a
		}},
		{"segment: its last bytes cut off", func(r *corruptRepo) string {
			x := r.read(t, a)
			r.write(t, a, x[:len(x)-7])
			return a
		}},
		{"segment: bytes appended", func(r *corruptRepo) string {
			r.write(t, a, append(r.read(t, a), make([]byte, 32)...))
			return a
		}},
		{"segment: cut inside its envelope header", func(r *corruptRepo) string {
			r.write(t, a, r.read(t, a)[:storage.EnvelopeHeaderSize-1])
			return a
		}},
		{"segment: envelope version changed", func(r *corruptRepo) string {
			x := r.read(t, a)
			x[len(storage.EnvelopeMagic)] = 9
			r.write(t, a, x)
			return a
		}},
		{"segment: swapped with another partition's", func(r *corruptRepo) string {
			x, y := r.read(t, a), r.read(t, b)
			r.write(t, a, y)
			r.write(t, b, x)
			return a
		}},
		{"manifest: a ciphertext byte flipped", func(r *corruptRepo) string {
			x := r.read(t, manifest)
			x[len(x)-100] ^= 0x20
			r.write(t, manifest, x)
			return manifest
		}},
		{"manifest: cut inside its envelope header", func(r *corruptRepo) string {
			r.write(t, manifest, r.read(t, manifest)[:storage.EnvelopeHeaderSize-5])
			return manifest
		}},
		{"manifest: replaced by a segment's envelope", func(r *corruptRepo) string {
			r.write(t, manifest, r.read(t, a))
			return manifest
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			copyTree(t, baseDir, dir)
			r := &corruptRepo{dir: dir}
			key := tc.damage(r)
			raw, err := storage.NewFilesystem(dir)
			if err != nil {
				t.Fatal(err)
			}
			target := testkit.StartKfake(t, 3)
			cfg := encConfig(t, src.Addrs(), target.Addrs(), encRepo{storageYAML: "storage:\n  backend: filesystem\n  path: " + dir + "\n", raw: raw}, &k1)
			code, stdout, stderr := runBounded(t, "--log-level", "error", "verify", "-c", cfg, "--deep")
			t.Logf("verify --deep: exit %d\n%s\n%s", code, stdout, stderr)
			if code != damageExitCode {
				t.Errorf("verify --deep: exit %d, want %d (damage)", code, damageExitCode)
			}
			if !strings.Contains(stdout+stderr, key) {
				t.Errorf("verify --deep does not name %s", key)
			}
			code, _, stderr = runBounded(t, "--log-level", "error", "restore", "-c", cfg, "--yes")
			t.Logf("restore: exit %d\n%s", code, stderr)
			if code != damageExitCode {
				t.Errorf("restore: exit %d, want %d (refused before the first write)", code, damageExitCode)
			}
			if !strings.Contains(stderr, key) {
				t.Errorf("restore does not name %s", key)
			}
			if topics, err := testkit.Admin(t, target.Addrs()).ListTopics(t.Context()); err != nil || len(topics) != 0 {
				t.Fatalf("after the refused restore the target has topics %v (%v)", topics.Names(), err)
			}
		})
	}
}

// TestEncryptionTurnedOnLater: a repository of plaintext backups stays
// readable once storage.encryption is set (encryption may be turned on
// after the first backups): list shows the old backup as plaintext, the
// next backup continues its chain with encrypted objects of its own, both
// restore exactly with the key configured, and prune forgets the old one
// keeping what the new one names (verify --deep passes after it). A key that cannot be read
// (a file missing, a key of 16 bytes) refuses backup and config validate
// with exit 2 naming the setting and its line, and the backup writes
// nothing.
func TestEncryptionTurnedOnLater(t *testing.T) {
	src := testkit.StartKfake(t, 3)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, 100)
	repo := encFilesystemRepo(t)
	if code, _, stderr := runCLI(t, "backup", "-c", encConfig(t, src.Addrs(), nil, repo, nil)); code != exitOK {
		t.Fatalf("plaintext backup: exit %d\n%s", code, stderr)
	}
	k1 := newRepoKey(t)
	produceOrders(t, cl, 100, 100)
	cfg := encConfig(t, src.Addrs(), nil, repo, &k1)
	if code, _, stderr := runCLI(t, "backup", "-c", cfg); code != exitOK {
		t.Fatalf("encrypted backup after a plaintext one: exit %d\n%s", code, stderr)
	}
	ring := &storage.Keyring{}
	if err := ring.Add(k1.raw); err != nil {
		t.Fatal(err)
	}
	store := storage.Encrypt(repo.raw, ring, nil)
	ids := completeIDs(t, store)
	if len(ids) != 2 {
		t.Fatalf("complete backups %v, want 2", ids)
	}
	keyIDs := listKeyIDs(t, cfg)
	if len(keyIDs[ids[1]]) != 0 || !slices.Equal(keyIDs[ids[0]], []string{k1.id}) {
		t.Errorf("list key ids %v: want none for the plaintext %s, [%s] for %s", keyIDs, ids[1], k1.id, ids[0])
	}
	if code, stdout, _ := runCLI(t, "list", "-c", cfg); !strings.Contains(stdout, "plaintext") {
		t.Errorf("list (exit %d) does not show the plaintext backup as such:\n%s", code, stdout)
	}
	for _, id := range ids {
		target := testkit.StartKfake(t, 3)
		rcfg := encConfig(t, src.Addrs(), target.Addrs(), repo, &k1)
		if code, _, stderr := runCLI(t, "--log-level", "error", "restore", "-c", rcfg, "--backup-id", id, "--yes"); code != exitOK {
			t.Fatalf("restore %s: exit %d\n%s", id, code, stderr)
		}
		restoredExactly(t, store, backupcheck.Latest(t, store, id), target.Addrs())
	}

	// Prune with the key: forgets the plaintext backup, keeps the
	// segments the encrypted one still names, and what is left verifies.
	if code, stdout, stderr := runCLI(t, "prune", "-c", cfg, "--keep-last", "1"); code != exitOK {
		t.Fatalf("prune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if left := completeIDs(t, store); !slices.Equal(left, ids[:1]) {
		t.Errorf("after prune --keep-last 1: %v, want %v", left, ids[:1])
	}
	if code, stdout, stderr := runCLI(t, "verify", "-c", cfg, "--deep"); code != exitOK {
		t.Errorf("verify --deep after prune: exit %d\n%s\n%s", code, stdout, stderr)
	}

	short := writeFile(t, "short.key", base64.StdEncoding.EncodeToString(make([]byte, 16))+"\n")
	for _, tc := range []struct {
		name, keyFile, want string
	}{
		{"missing key file", filepath.Join(t.TempDir(), "absent.key"), "storage.encryption.key_file"},
		{"16-byte key", short, "decodes to 16 bytes, not 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			empty := encFilesystemRepo(t)
			dir := strings.TrimSuffix(strings.TrimPrefix(empty.storageYAML, "storage:\n  backend: filesystem\n  path: "), "\n")
			bad := encConfig(t, src.Addrs(), nil, empty, &repoKey{file: tc.keyFile})
			code, _, stderr := runCLI(t, "config", "validate", "-c", bad)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "line 11") {
				t.Errorf("config validate: exit %d, want %d naming %q at line 11:\n%s", code, exitUsage, tc.want, stderr)
			}
			code, _, stderr = runCLI(t, "backup", "-c", bad)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("backup: exit %d, want %d naming %q:\n%s", code, exitUsage, tc.want, stderr)
			}
			var n int
			if err := empty.raw.List(t.Context(), "", func(storage.ObjectInfo) error { n++; return nil }); err != nil || n != 0 {
				t.Errorf("the refused backup wrote %d objects under %s (%v)", n, dir, err)
			}
		})
	}
}

// TestEncryptedShardedBackup: a backup taken by two shards (two processes,
// backup --shard I/2) into an encrypted directory: every object sealed
// under the key (the cut, each shard's progress, the merged manifest, the
// segments), the manifest records the key, and the backup verifies and
// restores exactly.
func TestEncryptedShardedBackup(t *testing.T) {
	src := testkit.StartKfake(t, 3)
	cl := testkit.Client(t, src.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := sample.Seed(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, cl, 0, 200)
	k1 := newRepoKey(t)
	repo := encFilesystemRepo(t)
	cfg := encConfig(t, src.Addrs(), nil, repo, &k1)
	var procs []*shardProc
	for i := range 2 {
		procs = append(procs, startShard(t, "backup", "-c", cfg, "--shard", fmt.Sprintf("%d/2", i), "--shard-run", "enc-run"))
	}
	for i, p := range procs {
		if code := p.wait(t); code != exitOK {
			t.Fatalf("shard %d: exit %d\n%s", i, code, p.stderr.String())
		}
	}
	assertSealed(t, repo.raw, k1)
	ring := &storage.Keyring{}
	if err := ring.Add(k1.raw); err != nil {
		t.Fatal(err)
	}
	store := storage.Encrypt(repo.raw, ring, nil)
	ids := completeIDs(t, store)
	if len(ids) != 1 {
		t.Fatalf("complete backups %v, want 1", ids)
	}
	m := backupcheck.Latest(t, store, ids[0])
	if m.Encryption == nil || m.Encryption.KeyID != k1.id || !slices.Equal(m.KeyIDs(), []string{k1.id}) {
		t.Errorf("the sharded manifest's encryption %+v, key ids %v: want %s", m.Encryption, m.KeyIDs(), k1.id)
	}
	target := testkit.StartKfake(t, 3)
	rcfg := encConfig(t, src.Addrs(), target.Addrs(), repo, &k1)
	if code, stdout, stderr := runCLI(t, "verify", "-c", rcfg, "--deep"); code != exitOK {
		t.Fatalf("verify --deep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "--log-level", "error", "restore", "-c", rcfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s", code, stderr)
	}
	restoredExactly(t, store, m, target.Addrs())
}
