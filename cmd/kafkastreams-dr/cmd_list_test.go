package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// catalogRepos are the repositories the list, describe and prune commands
// are tested on: each returns a backend and the storage: section of a
// config naming the same repository.
var catalogRepos = []struct {
	name string
	open func(t *testing.T) (storage.Backend, string)
}{
	{"filesystem", func(t *testing.T) (storage.Backend, string) {
		dir := t.TempDir()
		st, err := storage.NewFilesystem(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st, fmt.Sprintf("storage:\n  backend: filesystem\n  path: %s\n", dir)
	}},
	{"s3", func(t *testing.T) (storage.Backend, string) {
		srv := testkit.StartS3(t)
		srv.SetEnv(t)
		st, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: "apps/order-processor",
			Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		return st, fmt.Sprintf("storage:\n  backend: s3\n  bucket: %s\n  prefix: apps/order-processor\n  region: %s\n  endpoint: %s\n  path_style: true\n",
			srv.Bucket, srv.Region, srv.Endpoint)
	}},
}

// threeBackups backs the sample up three times into store, with records
// produced in between (an incremental chain), and returns the backup ids
// oldest first and a config file naming the repository.
func threeBackups(t *testing.T, store storage.Backend, storageYAML string) ([]string, string) {
	t.Helper()
	kf := testkit.StartKfake(t, 3)
	ctx := t.Context()
	if err := sample.Seed(ctx, testkit.Client(t, kf.Addrs())); err != nil {
		t.Fatal(err)
	}
	cl := testkit.Client(t, kf.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var ids []string
	for i := range 3 {
		if i > 0 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: sample.Orders, Partition: int32(i), Value: []byte("more")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		r, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
			ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include,
			SourceClusterID: "prod", SegmentMaxBytes: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.BackupID)
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
%s`, kf.Addrs()[0], storageYAML))
	return ids, cfg
}

// TestListDescribePrune runs the three commands on a local directory and
// on S3: list shows the chain newest first, describe one backup, prune
// --dry-run deletes nothing, prune --keep-last 2 forgets the oldest.
func TestListDescribePrune(t *testing.T) {
	for _, repo := range catalogRepos {
		t.Run(repo.name, func(t *testing.T) {
			store, storageYAML := repo.open(t)
			ids, cfg := threeBackups(t, store, storageYAML)

			code, stdout, stderr := runCLI(t, "list", "-c", cfg)
			if code != exitOK {
				t.Fatalf("list: exit %d\n%s\n%s", code, stdout, stderr)
			}
			t.Logf("list:\n%s", stdout)
			i3, i2, i1 := strings.Index(stdout, ids[2]), strings.Index(stdout, ids[1]), strings.Index(stdout, ids[0])
			if i3 < 0 || !(i3 < i2 && i2 < i1) || !strings.Contains(stdout, "BACKUP ID") ||
				!strings.Contains(stdout, "3 backups in "+store.Location()+": 3 complete; latest complete: "+ids[2]) {
				t.Fatalf("list: want the 3 backups newest first and a summary:\n%s", stdout)
			}

			code, stdout, _ = runCLI(t, "list", "-c", cfg, "--json")
			var lj struct {
				Repository string `json:"repository"`
				Backups    []struct {
					catalog.Summary
					CutAgeSeconds int64 `json:"cut_age_seconds"`
				} `json:"backups"`
			}
			if code != exitOK || json.Unmarshal([]byte(stdout), &lj) != nil || len(lj.Backups) != 3 {
				t.Fatalf("list --json: exit %d\n%s", code, stdout)
			}
			if b := lj.Backups[0]; b.BackupID != ids[2] || b.ParentBackupID != ids[1] || b.State != catalog.StateComplete ||
				b.Records == 0 || b.StoredBytes == 0 || b.CompressionRatio <= 1 || b.CutAgeSeconds < 0 || b.CutAgeSeconds > 600 {
				t.Fatalf("list --json: newest %+v", b)
			}

			code, stdout, stderr = runCLI(t, "describe", "-c", cfg)
			if code != exitOK {
				t.Fatalf("describe: exit %d\n%s\n%s", code, stdout, stderr)
			}
			t.Logf("describe:\n%s", stdout)
			for _, want := range []string{"backup " + ids[2] + " (complete)", "parent          " + ids[1], sample.Payments,
				"cleanup.policy=compact", "group order-processor", "HIGH WATERMARK"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("describe: no %q in\n%s", want, stdout)
				}
			}
			code, stdout, _ = runCLI(t, "describe", "-c", cfg, "--backup-id", ids[0], "--json")
			var d catalog.Detail
			if code != exitOK || json.Unmarshal([]byte(stdout), &d) != nil || d.Summary.BackupID != ids[0] || len(d.Topics) == 0 || d.Group == nil {
				t.Fatalf("describe --json: exit %d\n%s", code, stdout)
			}
			missing := format.NewBackupID(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), [4]byte{})
			if code, _, stderr = runCLI(t, "describe", "-c", cfg, "--backup-id", missing); code != exitUsage || !strings.Contains(stderr, missing) {
				t.Fatalf("describe of a missing backup: exit %d\n%s", code, stderr)
			}

			before := objectCount(t, store)
			code, stdout, stderr = runCLI(t, "prune", "-c", cfg, "--keep-last", "1", "--dry-run")
			if code != exitOK || !strings.Contains(stdout, "dry run: would delete") || !strings.Contains(stdout, "2 backup manifests") ||
				!strings.Contains(stdout, "nothing was deleted") {
				t.Fatalf("prune --dry-run: exit %d\n%s\n%s", code, stdout, stderr)
			}
			t.Logf("prune --dry-run:\n%s", stdout)
			if after := objectCount(t, store); after != before {
				t.Fatalf("prune --dry-run: %d objects before, %d after", before, after)
			}

			code, stdout, stderr = runCLI(t, "prune", "-c", cfg, "--keep-last", "2", "--json")
			var res catalog.PruneResult
			if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || res.DryRun || res.Forgotten != 1 ||
				len(res.Backups) != 3 || res.Backups[2].BackupID != ids[0] || res.Backups[2].Keep {
				t.Fatalf("prune --keep-last 2: exit %d\n%s\n%s", code, stdout, stderr)
			}
			code, stdout, _ = runCLI(t, "list", "-c", cfg)
			if code != exitOK || strings.Contains(stdout, "\n"+ids[0]) || !strings.Contains(stdout, "2 backups") {
				t.Fatalf("list after prune: exit %d\n%s", code, stdout)
			}
			for _, id := range ids[1:] {
				if code, stdout, _ := runCLI(t, "verify", "-c", cfg, "--backup-id", id); code != exitOK {
					t.Fatalf("verify %s after prune: exit %d\n%s", id, code, stdout)
				}
			}
		})
	}
}

func objectCount(t *testing.T, store storage.Backend) int {
	t.Helper()
	n := 0
	if err := store.List(t.Context(), "", func(storage.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListUnreadableManifestExitsOne: list shows every backup it can read
// and the unreadable one with its error, and exits 1 (issue 9: it exited
// 0, so a scheduled check never saw the damage); --json too.
func TestListUnreadableManifestExitsOne(t *testing.T) {
	store, storageYAML := catalogRepos[0].open(t)
	good := craftBackup(t, store, time.Date(2026, 6, 14, 12, 0, 0, 0, time.UTC), 1)
	bad := craftBackup(t, store, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), 2)
	broken := `{"format":"kafkastreams-dr/backup","form`
	if err := store.Put(t.Context(), format.ManifestKey(bad), strings.NewReader(broken), int64(len(broken))); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", "source:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\n"+storageYAML)
	for _, args := range [][]string{{"list", "-c", cfg}, {"list", "-c", cfg, "--json"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stdout, good) || !strings.Contains(stdout, bad) ||
			!strings.Contains(stderr, format.ManifestKey(bad)) || !strings.Contains(stderr, "verify -c "+cfg+" --backup-id "+bad) {
			t.Errorf("%v: exit %d, want 2 naming %s and the verify command\n%s\n%s", args, code, format.ManifestKey(bad), stdout, stderr)
		}
	}
}
