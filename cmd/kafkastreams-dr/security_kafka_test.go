package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// Distinctive SASL passwords of TestSecurityOnKafka: none may appear in
// any output.
const (
	secPlainPassword = "kdr-Plain-Pa55-3e1d7a"
	secScram256Pass  = "kdr-Scram256-Pa55-9b8c"
	secScram512Pass  = "kdr-Scram512-Pa55-4f2e"
	secWrongPassword = "kdr-Wrong-Pa55-77aa01"
)

// TestSecurityOnKafka runs the CLI against one real Apache Kafka 4.4 broker
// (testkit.KafkaSecure) with mutual TLS, SASL PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 over TLS, configured with the product's own keys
// (source.security.tls.*, source.security.sasl.*): a backup through each,
// and a restore through SCRAM-SHA-512 of the topic deleted after the
// backup, record for record. The bad cases each exit 1 quickly with an
// error naming the cause and the key to fix: wrong password (PLAIN and
// SCRAM), a CA that did not sign the broker's certificate, no client
// certificate where the listener requires one, and a mechanism the
// listener or user does not have. Every run is at --log-level debug with
// --json and a metrics push; no password, and no line of a private key's
// PEM body, may appear on stdout, stderr, in the pushed metrics or in any
// object of the repository.
func TestSecurityOnKafka(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t, testkit.KafkaSecure(
		testkit.SCRAMUser{Mechanism: "PLAIN", Name: "plainuser", Password: secPlainPassword},
		testkit.SCRAMUser{Mechanism: "SCRAM-SHA-256", Name: "scram256", Password: secScram256Pass},
		testkit.SCRAMUser{Mechanism: "SCRAM-SHA-512", Name: "scram512", Password: secScram512Pass},
	))
	sec := k.Security()
	secrets := append([]string{secPlainPassword, secScram256Pass, secScram512Pass, secWrongPassword}, sec.Secrets...)

	const topic, records = "orders", 60
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := testkit.Client(t, k.Addrs(), kgo.DefaultProduceTopic(topic))
	want := map[string]bool{}
	for i := range records {
		key, value := fmt.Sprintf("k%02d", i), fmt.Sprintf("v%02d", i)
		want[key+"="+value] = true
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The passwords are in password files (t.Setenv cannot be used in a
	// parallel test); the file's content is the secret looked for.
	pwDir := t.TempDir()
	pwFile := map[string]string{}
	for name, pw := range map[string]string{"KDR_TEST_PLAIN_PASSWORD": secPlainPassword, "KDR_TEST_SCRAM256_PASSWORD": secScram256Pass,
		"KDR_TEST_SCRAM512_PASSWORD": secScram512Pass, "KDR_TEST_WRONG_PASSWORD": secWrongPassword} {
		pwFile[name] = filepath.Join(pwDir, name)
		if err := os.WriteFile(pwFile[name], []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pushes := startRawPushRecorder(t)

	mtls := fmt.Sprintf("    tls:\n      ca_file: %s\n      cert_file: %s\n      key_file: %s\n", sec.CAFile, sec.ClientCertFile, sec.ClientKeyFile)
	tlsOnly := func(ca string) string { return fmt.Sprintf("    tls:\n      ca_file: %s\n", ca) }
	sasl := func(mech, user, pw string) string {
		return fmt.Sprintf("    sasl:\n      mechanism: %s\n      username: %s\n      password_file: %s\n", mech, user, pwFile[pw])
	}
	// config writes a config for bootstrap with the security block; the
	// repository is shared by the good cases (one chain).
	repo := t.TempDir()
	config := func(t *testing.T, bootstrap, security, repo string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  retry_timeout: 20s
  security:
%s  topics:
    include: [%s]
target:
  bootstrap_servers: [%s]
  retry_timeout: 20s
  security:
%sstorage:
  backend: filesystem
  path: %s
`, bootstrap, security, topic, bootstrap, security, repo))
	}
	var outputs []string // every stdout and stderr, checked for secrets at the end
	var outputsMu sync.Mutex
	runSecure := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		full := append([]string{"--log-level", "debug", "--push-gateway", pushes.url}, args...)
		start := time.Now()
		code, stdout, stderr := runCLI(t, full...)
		// Generous: a failure must not wait out retry_timeout (20s) twice;
		// a hang would be minutes.
		if d := time.Since(start); d > 90*time.Second {
			t.Errorf("%q took %v", args, d)
		}
		outputsMu.Lock()
		outputs = append(outputs, stdout, stderr)
		outputsMu.Unlock()
		if !strings.Contains(stderr, `"msg":"opening connection to broker"`) {
			t.Errorf("no franz-go debug log: the secret check sees nothing\n%s", stderr)
		}
		return code, stdout, stderr
	}

	t.Run("good", func(t *testing.T) {
		for _, tc := range []struct {
			name, bootstrap, security string
		}{
			{"mutual TLS", sec.MTLS, mtls},
			{"SASL PLAIN over TLS", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("PLAIN", "plainuser", "KDR_TEST_PLAIN_PASSWORD")},
			{"SCRAM-SHA-256 over TLS", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-256", "scram256", "KDR_TEST_SCRAM256_PASSWORD")},
			{"SCRAM-SHA-256 on the SCRAM-SHA-256-only listener", sec.SCRAM256Only, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-256", "scram256", "KDR_TEST_SCRAM256_PASSWORD")},
			{"SCRAM-SHA-512 over TLS", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-512", "scram512", "KDR_TEST_SCRAM512_PASSWORD")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := config(t, tc.bootstrap, tc.security, repo)
				code, stdout, stderr := runSecure(t, "backup", "-c", cfg, "--json")
				if code != exitOK {
					t.Fatalf("backup: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				if !strings.Contains(stdout, `"records"`) {
					t.Errorf("no JSON result on stdout:\n%s", stdout)
				}
			})
		}
		// The round trip: the first backup holds all the records; delete
		// the topic and restore it through SCRAM-SHA-512 over TLS.
		if _, err := adm.DeleteTopic(t.Context(), topic); err != nil {
			t.Fatal(err)
		}
		waitTopicGone(t, adm, topic)
		cfg := config(t, sec.SASLSSL, tlsOnly(sec.CAFile)+sasl("SCRAM-SHA-512", "scram512", "KDR_TEST_SCRAM512_PASSWORD"), repo)
		if code, stdout, stderr := runSecure(t, "restore", "-c", cfg, "--yes", "--json"); code != exitOK {
			t.Fatalf("restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		got := consumeAll(t, k.Addrs(), topic, records)
		for kv := range want {
			if !got[kv] {
				t.Errorf("record %s not restored", kv)
			}
		}
		if len(got) != len(want) {
			t.Errorf("restored %d distinct records, want %d", len(got), len(want))
		}
	})

	t.Run("bad", func(t *testing.T) {
		for _, tc := range []struct {
			name, bootstrap, security string
			want                      []string // in stderr
		}{
			{"PLAIN wrong password", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("PLAIN", "plainuser", "KDR_TEST_WRONG_PASSWORD"),
				[]string{"SASL_AUTHENTICATION_FAILED", "refused the PLAIN credentials", "source.security.sasl.username", "source.security.sasl.password"}},
			{"SCRAM-SHA-512 wrong password", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-512", "scram512", "KDR_TEST_WRONG_PASSWORD"),
				[]string{"SASL_AUTHENTICATION_FAILED", "refused the SCRAM-SHA-512 credentials", "source.security.sasl.username", "source.security.sasl.password"}},
			{"wrong CA", sec.SASLSSL, tlsOnly(sec.OtherCAFile) + sasl("SCRAM-SHA-512", "scram512", "KDR_TEST_SCRAM512_PASSWORD"),
				[]string{"certificate signed by unknown authority", "not signed by a CA this client trusts", "source.security.tls.ca_file"}},
			{"no client certificate under client auth", sec.MTLS, tlsOnly(sec.CAFile),
				[]string{"tls: bad certificate", "refused this client's certificate", "source.security.tls.cert_file", "source.security.tls.key_file"}},
			{"PLAIN against a SCRAM-SHA-256-only listener", sec.SCRAM256Only, tlsOnly(sec.CAFile) + sasl("PLAIN", "plainuser", "KDR_TEST_PLAIN_PASSWORD"),
				[]string{"UNSUPPORTED_SASL_MECHANISM", "does not enable SASL mechanism PLAIN", "source.security.sasl.mechanism"}},
			{"SCRAM-SHA-512 against a SCRAM-SHA-256-only listener", sec.SCRAM256Only, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-512", "scram512", "KDR_TEST_SCRAM512_PASSWORD"),
				[]string{"UNSUPPORTED_SASL_MECHANISM", "does not enable SASL mechanism SCRAM-SHA-512", "source.security.sasl.mechanism"}},
			{"SCRAM-SHA-512 for a user with only SCRAM-SHA-256 credentials", sec.SASLSSL, tlsOnly(sec.CAFile) + sasl("SCRAM-SHA-512", "scram256", "KDR_TEST_SCRAM256_PASSWORD"),
				[]string{"SASL_AUTHENTICATION_FAILED", "has SCRAM-SHA-512 credentials", "source.security.sasl.mechanism"}},
			// Both said "did not answer": Kafka's SSL listener answers a
			// plaintext request with a TLS alert, its SASL_SSL listener
			// closes the connection of a client without SASL.
			{"plaintext against an SSL listener", sec.MTLS, "",
				[]string{"answered, but not in the Kafka protocol (1 try)", "tls alert record", "the listener speaks TLS: set source.security.tls.enabled: true"}},
			{"TLS without SASL against a SASL_SSL listener", sec.SASLSSL, tlsOnly(sec.CAFile),
				[]string{"closed the connection at the first request (1 try)", "source.security.sasl.mechanism"}},
			// The hint said to set the mechanism already set (new-user pass).
			{"SASL against the PLAINTEXT listener", k.Bootstrap(), sasl("PLAIN", "plainuser", "KDR_TEST_PLAIN_PASSWORD"),
				[]string{"ILLEGAL_SASL_STATE", "does not use SASL: remove source.security.sasl", "source.bootstrap_servers"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				badRepo := t.TempDir()
				cfg := config(t, tc.bootstrap, tc.security, badRepo)
				code, stdout, stderr := runSecure(t, "backup", "-c", cfg)
				if code != exitError {
					t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
				}
				errLines := errorLines(stderr)
				// Refused at the first try: no retrying for retry_timeout.
				if !strings.Contains(strings.Join(tc.want, " "), "(1 try)") {
					tc.want = append(tc.want, "refused the connection (1 try)")
				}
				for _, w := range tc.want {
					if !strings.Contains(errLines, w) {
						t.Errorf("the error lacks %q:\n%s", w, errLines)
					}
				}
				checkNoSecretInTree(t, badRepo, secrets)
			})
		}
	})

	checkNoSecretInTree(t, repo, secrets)
	for _, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("an output holds the secret %q:\n%s", s, out)
			}
		}
	}
	bodies := pushes.all()
	if len(bodies) == 0 {
		t.Error("no metrics were pushed: the metrics check sees nothing")
	}
	for _, b := range bodies {
		for _, s := range secrets {
			if strings.Contains(b, s) {
				t.Errorf("pushed metrics hold the secret %q", s)
			}
		}
	}
}

// errorLines returns the lines of stderr that are not JSON log lines: the
// error and its hint.
func errorLines(stderr string) string {
	var b strings.Builder
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "{") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// checkNoSecretInTree fails the test if any file under dir holds one of
// secrets, and if dir holds no file at all when it should not be empty.
func checkNoSecretInTree(t *testing.T, dir string, secrets []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawPushRecorder is a Pushgateway that keeps each pushed body as text.
type rawPushRecorder struct {
	url    string
	mu     sync.Mutex
	bodies []string
}

func startRawPushRecorder(t *testing.T) *rawPushRecorder {
	r := &rawPushRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, req.URL.String()+"\n"+string(body))
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *rawPushRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// waitTopicGone waits until metadata no longer lists topic.
func waitTopicGone(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		td, err := adm.ListTopics(t.Context())
		if err == nil && !td.Has(topic) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("topic %s still listed a minute after its deletion", topic)
}

// consumeAll reads n records of topic from the start and returns them as
// key=value.
func consumeAll(t *testing.T, addrs []string, topic string, n int) map[string]bool {
	t.Helper()
	cl := testkit.Client(t, addrs, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	count := 0
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for count < n && ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1000)
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)+"="+string(r.Value)] = true
			count++
		})
	}
	if count != n {
		t.Errorf("read %d records of %s, want %d", count, topic, n)
	}
	return got
}
