package storage_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// startIMDS starts a fake EC2 instance metadata service that refuses
// IMDSv2 tokens (so the SDK logs "falling back to IMDSv1") and then hands
// out the S3 server's credentials as an instance role's.
func startIMDS(t *testing.T, srv testkit.S3Server) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			http.Error(w, "forbidden", http.StatusForbidden)
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			io.WriteString(w, "kdr-role")
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/kdr-role":
			json.NewEncoder(w).Encode(map[string]any{
				"Code": "Success", "Type": "AWS-HMAC", "LastUpdated": time.Now().UTC(),
				"AccessKeyId": srv.AccessKey, "SecretAccessKey": srv.SecretKey,
				"Expiration": time.Now().Add(time.Hour).UTC(),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// captureStderr runs fn with os.Stderr redirected and returns what was
// written to it.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	var out strings.Builder
	done := make(chan struct{})
	go func() { io.Copy(&out, r); close(done) }()
	func() {
		defer func() { os.Stderr = saved }()
		fn()
	}()
	w.Close()
	<-done
	r.Close()
	return out.String()
}

// recordHandler keeps every slog record.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// TestS3SDKLogsNeverReachStderr: the AWS SDK's own logger prints raw lines
// ("SDK 2026/01/02 15:04:05 WARN falling back to IMDSv1: ...") on stderr,
// which breaks JSON logs. They are dropped, or sent to S3Options.Logger at
// debug level.
func TestS3SDKLogsNeverReachStderr(t *testing.T) {
	srv := testkit.StartS3(t)
	tests := []struct {
		name   string
		logger bool
	}{
		{"without a logger the SDK logs are dropped", false},
		{"with a logger the SDK logs go to it at debug level", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Credentials from the (fake) instance role only.
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
				"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
				"AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_V1_DISABLED", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			dir := t.TempDir()
			t.Setenv("AWS_CONFIG_FILE", dir+"/no-config")
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/no-credentials")
			t.Setenv("AWS_REGION", srv.Region)
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", startIMDS(t, srv))

			h := &recordHandler{}
			opts := storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true, Prefix: "t-" + randomHex(t, 6)}
			if tt.logger {
				opts.Logger = slog.New(h)
			}
			var err error
			stderr := captureStderr(t, func() {
				var b *storage.S3
				if b, err = storage.NewS3(t.Context(), opts); err == nil {
					err = b.Put(t.Context(), "k", strings.NewReader("v"), 1)
				}
			})
			if err != nil {
				t.Fatalf("NewS3 and Put with instance-role credentials: %v", err)
			}
			if stderr != "" {
				t.Errorf("the SDK wrote to stderr:\n%s", stderr)
			}
			if !tt.logger {
				return
			}
			found := false
			for _, r := range h.records {
				if strings.Contains(r.Message, "falling back to IMDSv1") {
					found = true
					if r.Level != slog.LevelDebug {
						t.Errorf("SDK message %q logged at %s, want DEBUG", r.Message, r.Level)
					}
				}
			}
			if !found {
				t.Errorf("the SDK's IMDSv1 warning did not reach the logger; records: %d", len(h.records))
			}
		})
	}
}
