package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestObjectLockAndEncryptionSettings: storage.object_lock on a bucket
// without Object Lock refuses the backup with exit 2 before it writes
// anything (the bucket stays empty), naming the bucket and the fix; a bad
// storage.server_side_encryption or object_lock value is a config error
// naming the key and its line (exit 2); and a backup with SSE-S3 and a
// retention on a bucket with Object Lock succeeds. On versitygw.
func TestObjectLockAndEncryptionSettings(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	srv.CreateLockedBucket(t, "kdr-locked-cli")
	source := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, source.Addrs())); err != nil {
		t.Fatal(err)
	}
	config := func(bucket, extra string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
storage:
  backend: s3
  bucket: %s
  region: %s
  endpoint: %s
  path_style: true
%s`, strings.Join(source.Addrs(), ", "), bucket, srv.Region, srv.Endpoint, extra))
	}
	lock := "  object_lock:\n    mode: COMPLIANCE\n    retention: 2h\n"
	tests := []struct {
		name   string
		bucket string
		extra  string
		code   int
		want   []string
	}{
		{"object lock on a bucket without it", srv.Bucket, lock, exitUsage, []string{
			"bucket does not have Object Lock enabled", `bucket "` + srv.Bucket + `"`, "--object-lock-enabled-for-bucket", "nothing was written"}},
		{"an unknown algorithm", srv.Bucket, "  server_side_encryption:\n    algorithm: kms\n", exitUsage, []string{
			`storage.server_side_encryption.algorithm "kms" is not AES256 (SSE-S3) or aws:kms (SSE-KMS) (did you mean aws:kms?)`, "(line 13)"}},
		{"a KMS key without aws:kms", srv.Bucket, "  server_side_encryption:\n    algorithm: AES256\n    kms_key_id: alias/backups\n", exitUsage, []string{
			"storage.server_side_encryption.kms_key_id applies to algorithm aws:kms (SSE-KMS) only", "(line 14)"}},
		{"a retention in minutes", "kdr-locked-cli", "  object_lock:\n    mode: COMPLIANCE\n    retention: 90m\n", exitUsage, []string{
			`storage.object_lock.retention "90m" is neither whole days (30d) nor whole hours (36h)`, "(line 14)"}},
		{"SSE-S3 and a retention on a bucket with Object Lock", "kdr-locked-cli", "  server_side_encryption:\n    algorithm: AES256\n" + lock, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(tt.bucket, tt.extra)
			code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "goroutine ") {
				t.Errorf("stack trace on stderr:\n%s", stderr)
			}
			out, err := srv.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(tt.bucket)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.code == 0 {
				// The backup's objects: each retained in COMPLIANCE
				// mode (the lock and progress file are gone).
				manifests := 0
				for _, o := range out.Contents {
					key := aws.ToString(o.Key)
					r, err := srv.Client().GetObjectRetention(t.Context(), &s3.GetObjectRetentionInput{Bucket: aws.String(tt.bucket), Key: o.Key})
					if err != nil || r.Retention.Mode != "COMPLIANCE" {
						t.Errorf("%s: retention %v, %v; want COMPLIANCE", key, r, err)
					}
					if strings.HasSuffix(key, "/manifest.json") {
						manifests++
					}
				}
				if manifests != 1 {
					t.Errorf("bucket holds %d manifests, want 1: %d objects", manifests, len(out.Contents))
				}
				return
			}
			if tt.bucket == srv.Bucket && len(out.Contents) != 0 {
				t.Errorf("the refused backup left %d objects in %s", len(out.Contents), tt.bucket)
			}
		})
	}
}

// TestPruneUnderObjectLockKeepsRetained: on a bucket with Object Lock and
// storage.object_lock COMPLIANCE 2h, three backups and prune --keep-last 1
// (through the CLI, with its always-on encrypting wrapper) read each
// manifest's retention before forgetting anything: --dry-run and the real
// run mark the two older backups "keep ... under S3 Object Lock retention
// (COMPLIANCE) until ...", exit 0, and delete no manifest; --json says the
// same with retain_until. On versitygw.
func TestPruneUnderObjectLockKeepsRetained(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	srv.CreateLockedBucket(t, "kdr-locked-prune")
	source := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, source.Addrs())); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
storage:
  backend: s3
  bucket: kdr-locked-prune
  region: %s
  endpoint: %s
  path_style: true
  object_lock:
    mode: COMPLIANCE
    retention: 2h
`, strings.Join(source.Addrs(), ", "), srv.Region, srv.Endpoint))
	for i := range 3 {
		if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != 0 {
			t.Fatalf("backup %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, stdout, stderr)
		}
	}
	manifests := func() int {
		t.Helper()
		out, err := srv.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("kdr-locked-prune")})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range out.Contents {
			if strings.HasSuffix(aws.ToString(o.Key), "/manifest.json") {
				n++
			}
		}
		return n
	}
	if n := manifests(); n != 3 {
		t.Fatalf("bucket holds %d manifests after three backups, want 3", n)
	}
	for _, args := range [][]string{
		{"prune", "-c", cfg, "--keep-last", "1", "--dry-run"},
		{"prune", "-c", cfg, "--keep-last", "1"},
		{"prune", "-c", cfg, "--keep-last", "1", "--json"},
	} {
		t.Run(strings.Join(args[3:], " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error"}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if slices.Contains(args, "--json") {
				if got := strings.Count(stdout, `"retain_until"`); got != 2 {
					t.Errorf("--json names retain_until %d times, want 2:\n%s", got, stdout)
				}
			} else {
				if got := strings.Count(stdout, "under S3 Object Lock retention (COMPLIANCE) until "); got != 2 {
					t.Errorf("prune keeps %d backups under retention, want 2:\n%s", got, stdout)
				}
				if strings.Contains(stdout, "forget ") {
					t.Errorf("prune forgets a retained backup:\n%s", stdout)
				}
			}
			if n := manifests(); n != 3 {
				t.Errorf("bucket holds %d manifests, want 3 (all retained)", n)
			}
		})
	}
}

// TestServerSideEncryptionUnconfirmed is a new user's fault (issue 14):
// with storage.server_side_encryption set, versitygw answers PutObject
// without x-amz-server-side-encryption (and stores plaintext), and the
// backup said nothing. It now warns once on stderr and lists the warning
// in the backup's warnings. On versitygw.
func TestServerSideEncryptionUnconfirmed(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	source := testkit.StartKfake(t, 1)
	if err := sample.Seed(t.Context(), testkit.Client(t, source.Addrs())); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
storage:
  backend: s3
  bucket: %s
  region: %s
  endpoint: %s
  path_style: true
  server_side_encryption:
    algorithm: AES256
`, strings.Join(source.Addrs(), ", "), srv.Bucket, srv.Region, srv.Endpoint))
	code, stdout, stderr := runCLI(t, "backup", "-c", cfg)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	const want = "the store did not confirm server-side encryption"
	if n := strings.Count(stderr, want); n != 1 {
		t.Errorf("stderr says %q %d times, want once:\n%s", want, n, stderr)
	}
	if !strings.Contains(stdout, want) || !strings.Contains(stdout, "may not be encrypted at rest") {
		t.Errorf("the backup's warnings do not say %q:\n%s", want, stdout)
	}
}
