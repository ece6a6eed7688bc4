package storage_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestNewS3NoCredentialsSaysSo is a second new-user fault of issue 12:
// with no AWS credentials anywhere the error began clearly, then dumped
// the SDK's credential chain ("...no EC2 IMDS role found, operation error
// ec2imds: GetMetadata, http response error StatusCode: 403..."). It says
// which sources were tried and the fix; the SDK's chain is logged at
// debug level only (as for a missing bucket). IMDS is disabled, so no
// request leaves loopback.
func TestNewS3NoCredentialsSaysSo(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true, Region: "us-east-1",
		RetryTimeout: time.Second, Logger: logger})
	if err == nil {
		t.Fatal("NewS3 without credentials succeeded")
	}
	msg := err.Error()
	t.Logf("error: %s\nlog:\n%s", msg, logged.String())
	for _, w := range []string{"no AWS credentials found", "environment", "shared config/credentials file", "web identity/IRSA", "ECS/EC2 role",
		"AWS_ACCESS_KEY_ID", srv.Bucket} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	for _, sdk := range []string{"operation error", "ec2imds", "GetMetadata", "StatusCode", "failed to refresh cached credentials"} {
		if strings.Contains(msg, sdk) {
			t.Errorf("error %q holds the SDK's text %q", msg, sdk)
		}
	}
	if storage.IsTransient(err) {
		t.Errorf("error %q is transient: no retry finds credentials", msg)
	}
	if !strings.Contains(logged.String(), "level=DEBUG") || !strings.Contains(logged.String(), "credentials") {
		t.Errorf("the debug log does not hold the SDK's credential chain:\n%s", logged.String())
	}
}
