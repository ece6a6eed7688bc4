package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// CreateLockedBucket creates another empty bucket on the server with S3
// Object Lock enabled (CreateBucket with x-amz-bucket-object-lock-enabled:
// true; versitygw's posix backend can enable Object Lock only when the
// bucket is created), and no default retention. Objects put there with
// Object Lock headers cannot be deleted or overwritten before their
// retain-until date, not even by the root user (versitygw answers 403
// AccessDenied; the server has no versioning, so there are no delete
// markers); t.TempDir's removal of the server's directory removes them.
func (s S3Server) CreateLockedBucket(t *testing.T, name string) {
	t.Helper()
	_, err := s.Client().CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(true)})
	if err != nil {
		t.Fatalf("create bucket %q with Object Lock on %s: %v", name, s.Endpoint, err)
	}
}

// awsHint tells a developer how to get the AWS CLI.
const awsHint = "install the AWS CLI (apt-get install awscli)"

// AWSTimeout bounds one AWS CLI run.
const AWSTimeout = 60 * time.Second

// AWSS3API runs the AWS CLI (`aws s3api <args>`, an S3 client independent
// of the AWS SDK for Go: botocore) against this server with its root
// credentials and no profile or config file, and decodes its JSON output
// into out (when out is not nil). It fails the test on a non-zero exit,
// showing stderr. The CLI is $KDR_AWS, else aws on $PATH; a missing one
// skips the test, or fails it if KDR_REQUIRE_TOOLS=1.
func (s S3Server) AWSS3API(t testing.TB, out any, args ...string) {
	t.Helper()
	stdout, stderr, err := s.awsRun(t, args...)
	if err != nil {
		t.Fatalf("aws s3api %q: %v\n%s", args, err, stderr)
	}
	if out != nil {
		if err := json.Unmarshal(stdout, out); err != nil {
			t.Fatalf("aws s3api %q: decode its output %q: %v", args, stdout, err)
		}
	}
}

// AWSS3APIFails runs the AWS CLI as AWSS3API does and expects it to fail;
// it returns its stderr (botocore's "An error occurred (<code>) ...").
func (s S3Server) AWSS3APIFails(t testing.TB, args ...string) string {
	t.Helper()
	stdout, stderr, err := s.awsRun(t, args...)
	if err == nil {
		t.Fatalf("aws s3api %q succeeded (%s), want a failure", args, stdout)
	}
	return string(stderr)
}

func (s S3Server) awsRun(t testing.TB, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	bin := requireTool(t, "aws", "KDR_AWS", "", awsHint)
	ctx, cancel := context.WithTimeout(context.Background(), AWSTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--endpoint-url", s.Endpoint, "--output", "json", "s3api"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	// The caller's environment (PATH: the CLI may be a script) without
	// any AWS setting of the developer's, then this server's.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, s.Env()...),
		"AWS_DEFAULT_REGION="+s.Region,
		"AWS_CONFIG_FILE="+filepath.Join(s.Dir, ".no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(s.Dir, ".no-aws-credentials"),
		"AWS_PAGER=",
	)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}
