package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestMissingBucketIsAConfigurationError is a regression test (third
// new-user pass): a storage.bucket that does not exist exited 1 (a storage
// failure) with the whole AWS SDK error appended ("operation error S3:
// HeadBucket, https response error StatusCode: 404, RequestID: ...,
// NotFound: "), while a storage.path that does not exist exits 2. A missing
// bucket is a configuration error like a missing path: exit 2, "bucket X
// does not exist (S3 ListObjectsV2: 404 NoSuchBucket) at endpoint E" and the fix;
// the request id only with --log-level debug. Tested on versitygw.
func TestMissingBucketIsAConfigurationError(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	source := testkit.StartKfake(t, 1)
	// The backup's selection holds topics, so that it gets as far as the
	// storage.
	if err := sample.Seed(t.Context(), testkit.Client(t, source.Addrs())); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders]
target:
  bootstrap_servers: [127.0.0.1:1]
storage:
  backend: s3
  bucket: no-such-bucket
  region: %s
  endpoint: %s
  path_style: true
`, strings.Join(source.Addrs(), ", "), srv.Region, srv.Endpoint))
	want := `bucket "no-such-bucket" does not exist (S3 ListObjectsV2: 404 NoSuchBucket) at endpoint ` + srv.Endpoint
	for _, args := range [][]string{
		{"verify", "-c", cfg},
		{"list", "-c", cfg},
		{"backup", "-c", cfg},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error"}, args...)...)
			if code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "storage.bucket") {
				t.Errorf("exit %d, want %d, stderr saying %q and naming storage.bucket\nstdout:\n%s\nstderr:\n%s", code, exitUsage, want, stdout, stderr)
			}
			for _, sdk := range []string{"operation error", "RequestID", "https response error"} {
				if strings.Contains(stderr, sdk) {
					t.Errorf("stderr holds the SDK's text %q at --log-level error:\n%s", sdk, stderr)
				}
			}
		})
	}
	t.Run("debug log", func(t *testing.T) {
		code, _, stderr := runCLI(t, "--log-level", "debug", "verify", "-c", cfg)
		if code != exitUsage || !strings.Contains(stderr, "RequestID") {
			t.Errorf("exit %d, want %d with the SDK's request id in the debug log:\n%s", code, exitUsage, stderr)
		}
	})
}
