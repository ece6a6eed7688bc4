package config

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const timeoutsBase = `source:
  bootstrap_servers: [kafka:9092]
%s  topics:
    include: [orders]
target:
  bootstrap_servers: [dr-kafka:9092]
storage:
  backend: filesystem
  path: /tmp/backups
`

func parseTimeouts(t *testing.T, source string) (*Config, error) {
	t.Helper()
	return Parse([]byte(strings.Replace(timeoutsBase, "%s", source, 1)), "t.yaml")
}

// TestClusterTimeouts: request_timeout and retry_timeout take Go durations,
// default to 30s and 2m (longer than a KRaft broker restart), and a bad
// value is an error naming the key, its line and the fix.
func TestClusterTimeouts(t *testing.T) {
	tests := []struct {
		name           string
		source         string
		request, retry time.Duration
		wantErr        string
		wantWarning    string
	}{
		{"defaults", "", DefaultRequestTimeout, DefaultRetryTimeout, "", ""},
		{"set", "  request_timeout: 45s\n  retry_timeout: 5m\n", 45 * time.Second, 5 * time.Minute, "", ""},
		{"composite and ms", "  request_timeout: 1500ms\n  retry_timeout: 1m30s\n", 1500 * time.Millisecond, 90 * time.Second, "", ""},
		{"from the environment", "  retry_timeout: ${KDR_TEST_RETRY}\n", DefaultRequestTimeout, 3 * time.Minute, "", ""},
		{"bare number has no unit", "  request_timeout: 30000\n", 0, 0, `source.request_timeout must be a duration (e.g. "30s", "2m") greater than zero, not "30000" (line 3)`, ""},
		{"not a duration", "  retry_timeout: soon\n", 0, 0, `source.retry_timeout must be a duration (e.g. "30s", "2m") greater than zero, not "soon" (line 3)`, ""},
		{"zero", "  request_timeout: 0s\n", 0, 0, `source.request_timeout must be a duration (e.g. "30s", "2m") greater than zero, not "0s"`, ""},
		{"negative", "  retry_timeout: -1m\n", 0, 0, `source.retry_timeout must be a duration (e.g. "30s", "2m") greater than zero, not "-1m"`, ""},
		{"shorter than a broker restart warns", "  retry_timeout: 5s\n", DefaultRequestTimeout, 5 * time.Second, "",
			"source.retry_timeout 5s is not longer than a KRaft broker's session timeout (broker.session.timeout.ms, 9s): a run fails when a broker restarts; the default is 2m0s (line 3)"},
	}
	t.Setenv("KDR_TEST_RETRY", "3m")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseTimeouts(t, tt.source)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "source.request_timeout", c.Source.RequestTimeout, tt.request)
			eq(t, "source.retry_timeout", c.Source.RetryTimeout, tt.retry)
			eq(t, "target.request_timeout", c.Target.RequestTimeout, DefaultRequestTimeout)
			eq(t, "target.retry_timeout", c.Target.RetryTimeout, DefaultRetryTimeout)
			if got := strings.Join(c.Warnings(), "\n"); tt.wantWarning != "" && !strings.Contains(got, tt.wantWarning) {
				t.Errorf("warnings %q, want %q", got, tt.wantWarning)
			} else if tt.wantWarning == "" && strings.Contains(got, "timeout") {
				t.Errorf("unexpected warning: %s", got)
			}
		})
	}
}

// TestClientOptionsSetTimeouts: every client built from a cluster section
// gets its request and retry timeouts (zero values take the defaults).
func TestClientOptionsSetTimeouts(t *testing.T) {
	tests := []struct {
		name                 string
		c                    Cluster
		request, dial, retry time.Duration
	}{
		{"defaults", Cluster{BootstrapServers: []string{"127.0.0.1:9092"}}, 30 * time.Second, 10 * time.Second, 2 * time.Minute},
		{"short", Cluster{BootstrapServers: []string{"127.0.0.1:9092"}, RequestTimeout: 2 * time.Second, RetryTimeout: 20 * time.Second}, 2 * time.Second, 2 * time.Second, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.c.ClientOptions()
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			eq(t, "RequestTimeoutOverhead", cl.OptValue(kgo.RequestTimeoutOverhead), any(tt.request))
			eq(t, "ProduceRequestTimeout", cl.OptValue(kgo.ProduceRequestTimeout), any(tt.request))
			eq(t, "DialTimeout", cl.OptValue(kgo.DialTimeout), any(tt.dial))
			// Not set: franz-go counts it from the record's timestamp,
			// which a restore keeps from the source (all in the past).
			eq(t, "RecordDeliveryTimeout", cl.OptValue(kgo.RecordDeliveryTimeout), any(time.Duration(0)))
			eq(t, "RequestRetries", cl.OptValue(kgo.RequestRetries), any(int64(math.MaxInt32)))
			fn, _ := cl.OptValue(kgo.RetryTimeoutFn).(func(int16) time.Duration)
			if fn == nil {
				t.Fatal("no RetryTimeoutFn")
			}
			eq(t, "RetryTimeout", fn(0), tt.retry)
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	for _, tt := range []struct {
		attempt  int
		min, max time.Duration
	}{{1, 200 * time.Millisecond, 250 * time.Millisecond}, {2, 400 * time.Millisecond, 500 * time.Millisecond},
		{5, 3200 * time.Millisecond, 4 * time.Second}, {6, 4 * time.Second, 5 * time.Second}, {100, 4 * time.Second, 5 * time.Second}} {
		for range 20 {
			if d := RetryBackoff(tt.attempt); d <= tt.min || d > tt.max {
				t.Fatalf("RetryBackoff(%d) = %s, want in (%s, %s]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
}
