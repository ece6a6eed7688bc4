package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// sampleCluster starts a 3-broker kfake cluster seeded with the sample
// application and returns its brokers and a config backing it up into a
// new directory repository.
func sampleCluster(t *testing.T) (brokers []string, cfg, repo string) {
	t.Helper()
	kf := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, kf.Addrs())); err != nil {
		t.Fatal(err)
	}
	repo = t.TempDir()
	cfg = writeFile(t, "app.yaml", fmt.Sprintf(`application_id: %s
source_changelog_topics: [%s]
source:
  bootstrap_servers: [%s]
  topics:
    include: ["%s"]
storage:
  backend: filesystem
  path: %s
`, sample.AppID, strings.Join(sample.SourceChangelogs, ", "), strings.Join(kf.Addrs(), ", "), strings.Join(sample.Include, `", "`), repo))
	return kf.Addrs(), cfg, repo
}

// scrapeMetrics GETs a /metrics endpoint and parses it with the
// Prometheus text parser.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}

// metricValues returns the family's values keyed by their labels
// ("topic=orders" or "topic=orders,partition=0"; "" without labels).
func metricValues(mfs map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	mf := mfs[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Untyped != nil:
			v = m.Untyped.GetValue()
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

func sum(vs map[string]float64) float64 {
	var s float64
	for _, v := range vs {
		s += v
	}
	return s
}

// checkNames: our prefix, help text, counters (and only counters) end in
// _total, units in base units in the name.
func checkNames(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "kafkastreams_dr_") || mf.GetHelp() == "" {
			t.Errorf("%s: want the kafkastreams_dr_ prefix and help text", name)
		}
		if (mf.GetType() == dto.MetricType_COUNTER) != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %s: counters and only counters end in _total", name, mf.GetType())
		}
		if strings.Contains(name, "duration") || strings.Contains(name, "timestamp") || strings.Contains(name, "lag_seconds") {
			if !strings.HasSuffix(name, "_seconds") {
				t.Errorf("%s: a time without _seconds", name)
			}
		}
	}
}

// pushRecorder is a Pushgateway stand-in that records each push.
type pushRecorder struct {
	mu     sync.Mutex
	pushes []recordedPush
}

type recordedPush struct {
	Method, Path string
	Families     map[string]*dto.MetricFamily
}

func startPushRecorder(t *testing.T, status int) (*httptest.Server, *pushRecorder) {
	rec := &pushRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		p := recordedPush{Method: req.Method, Path: req.URL.Path, Families: map[string]*dto.MetricFamily{}}
		dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(req.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("decode the pushed body: %v", err)
				}
				break
			}
			p.Families[mf.GetName()] = mf
		}
		rec.mu.Lock()
		rec.pushes = append(rec.pushes, p)
		rec.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func (r *pushRecorder) all() []recordedPush {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedPush(nil), r.pushes...)
}

// TestBackupMetricsScrapedAndPushed backs up the sample application with
// --metrics-addr and --push-gateway: the endpoint, scraped when the run is
// over and before it stops, parses and its counts are the backup's; the
// push arrives at the gateway under the job, command and application_id.
func TestBackupMetricsScrapedAndPushed(t *testing.T) {
	_, cfg, _ := sampleCluster(t)
	gw, rec := startPushRecorder(t, http.StatusOK)

	var scraped map[string]*dto.MetricFamily
	s, out, errOut := testStreams()
	g := &globalOptions{MetricsAddr: "127.0.0.1:0", PushGateway: gw.URL, PushJob: "kdr-test",
		logger:   newLogger(io.Discard, false, slog.LevelInfo),
		afterRun: func(addr string) { scraped = scrapeMetrics(t, "http://"+addr+"/metrics") }}
	cmd := newBackupCmd(g, s, nil)
	cmd.SetArgs([]string{"-c", cfg, "--json"})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("backup: %v\n%s", err, errOut)
	}
	var res backupJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if scraped == nil {
		t.Fatal("the metrics endpoint was not scraped")
	}
	checkNames(t, scraped)

	records := metricValues(scraped, "kafkastreams_dr_backup_records_total")
	if got := sum(records); got != float64(res.Records) || res.Records == 0 {
		t.Errorf("records_total sums to %v, the backup copied %d", got, res.Records)
	}
	var segments int
	for _, bt := range res.BackedUp {
		if got := records["topic="+bt.Topic]; got != float64(bt.Records) {
			t.Errorf("records_total{topic=%q} = %v, the backup holds %d", bt.Topic, got, bt.Records)
		}
		segments += bt.Segments
	}
	partitions := res.Partitions
	for _, bt := range res.InFlight { // in-flight tails are copied like other partitions
		if got := records["topic="+bt.Topic]; got != float64(bt.Records) {
			t.Errorf("records_total{topic=%q} = %v, the backup holds %d in flight", bt.Topic, got, bt.Records)
		}
		segments += bt.Segments
		partitions += bt.Partitions
	}
	if got := sum(metricValues(scraped, "kafkastreams_dr_backup_bytes_written_total")); got != float64(res.Bytes) {
		t.Errorf("bytes_written_total = %v, the backup wrote %d", got, res.Bytes)
	}
	if got := sum(metricValues(scraped, "kafkastreams_dr_backup_segments_total")); got != float64(segments) {
		t.Errorf("segments_total = %v, the manifest names %d", got, segments)
	}
	if got := sum(metricValues(scraped, "kafkastreams_dr_backup_bytes_read_total")); got <= 0 {
		t.Errorf("bytes_read_total = %v", got)
	}
	if got := sum(metricValues(scraped, "kafkastreams_dr_backup_compression_ratio")); got <= 0 {
		t.Errorf("compression_ratio = %v", got)
	}
	lag := metricValues(scraped, "kafkastreams_dr_backup_lag_records")
	if len(lag) == 0 || len(lag) > partitions { // a partition with nothing to copy is not planned
		t.Errorf("lag_records has %d partitions, the backup %d", len(lag), partitions)
	}
	if got := sum(lag); got != 0 {
		t.Errorf("lag_records sums to %v after the backup, want 0", got)
	}
	phases := metricValues(scraped, "kafkastreams_dr_phase_duration_seconds")
	for _, p := range []string{"cut", "copy", "manifest"} {
		if _, ok := phases["command=backup,phase="+p]; !ok {
			t.Errorf("no duration for phase %s: %v", p, phases)
		}
	}
	if v := metricValues(scraped, "kafkastreams_dr_last_success_timestamp_seconds")["command=backup"]; v <= 0 {
		t.Errorf("last_success_timestamp_seconds = %v", v)
	}
	if v, ok := metricValues(scraped, "kafkastreams_dr_errors_total")["command=backup"]; !ok || v != 0 {
		t.Errorf("errors_total = %v (%v), want 0", v, ok)
	}

	pushes := rec.all()
	if len(pushes) != 1 {
		t.Fatalf("%d pushes, want 1", len(pushes))
	}
	p := pushes[0]
	for _, w := range []string{"/metrics/job/kdr-test/", "/command/backup", "/application_id/" + sample.AppID} {
		if !strings.Contains(p.Path, w) {
			t.Errorf("pushed to %s %s: want %q in the path", p.Method, p.Path, w)
		}
	}
	checkNames(t, p.Families)
	if got := sum(metricValues(p.Families, "kafkastreams_dr_backup_records_total")); got != float64(res.Records) {
		t.Errorf("pushed records_total sums to %v, want %d", got, res.Records)
	}
	if _, ok := metricValues(p.Families, "kafkastreams_dr_last_success_timestamp_seconds")[""]; !ok {
		t.Errorf("last_success was not pushed (without its command label, which is the group's): %v", metricValues(p.Families, "kafkastreams_dr_last_success_timestamp_seconds"))
	}
}

// TestPushGatewayFromTheCommandLine: the global flags reach the run
// through the real command tree; a failing backup pushes errors_total 1
// and no last success.
func TestPushGatewayFromTheCommandLine(t *testing.T) {
	gw, rec := startPushRecorder(t, http.StatusAccepted)
	// retry_timeout 1s: the backup fails as it does after the default 2m.
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [127.0.0.1:1]
  retry_timeout: 1s
  topics:
    include: [orders]
storage:
  backend: filesystem
  path: %s
`, t.TempDir()))
	code, _, stderr := runCLI(t, "--push-gateway", gw.URL, "--metrics-addr", "127.0.0.1:0", "backup", "-c", cfg)
	if code != exitError {
		t.Fatalf("backup of an unreachable cluster: exit %d\n%s", code, stderr)
	}
	pushes := rec.all()
	if len(pushes) != 1 || !strings.Contains(pushes[0].Path, "/job/kafkastreams-dr/") {
		t.Fatalf("pushes %+v, want one under the default job", pushes)
	}
	if v := metricValues(pushes[0].Families, "kafkastreams_dr_errors_total")[""]; v != 1 {
		t.Errorf("errors_total = %v, want 1", v)
	}
	if _, ok := pushes[0].Families["kafkastreams_dr_last_success_timestamp_seconds"]; ok {
		t.Error("a failed run pushed last_success")
	}
	if !strings.Contains(stderr, "backup failed after") {
		t.Errorf("no summary line:\n%s", stderr)
	}
}

func TestTelemetryFlagErrors(t *testing.T) {
	good := writeFile(t, "good.yaml", goodConfig)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"metrics address without port", []string{"--metrics-addr", "localhost", "backup", "-c", good}, "invalid --metrics-addr"},
		{"metrics address with a bad port", []string{"--metrics-addr", ":99999", "restore", "-c", good}, "invalid --metrics-addr"},
		{"push gateway without scheme", []string{"--push-gateway", "pushgateway:9091", "backup", "-c", good}, "invalid --push-gateway"},
		{"empty push job", []string{"--push-gateway", "http://pg:9091", "--push-job", " ", "backup", "-c", good}, "invalid --push-job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "Usage:") {
				t.Errorf("exit %d, want %d with %q and the usage:\n%s", code, exitUsage, tc.want, stderr)
			}
		})
	}
	t.Run("help lists the flags", func(t *testing.T) {
		_, stdout, _ := runCLI(t, "backup", "--help")
		for _, w := range []string{"--metrics-addr", "--push-gateway", "--push-job", "EXIT STATUS", "130"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("backup --help does not mention %s", w)
			}
		}
	})
	t.Run("address in use", func(t *testing.T) {
		ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		cfg := writeFile(t, "app.yaml", strings.Replace(goodConfig, "/tmp/backups", t.TempDir(), 1))
		code, _, stderr := runCLI(t, "--metrics-addr", ln.Addr().String(), "backup", "-c", cfg)
		if code != exitError || !strings.Contains(stderr, "--metrics-addr "+ln.Addr().String()) {
			t.Errorf("exit %d, want %d naming the flag:\n%s", code, exitError, stderr)
		}
	})
}

// hasControl reports whether s holds a control character other than a
// newline: a carriage return, an escape sequence, a backspace.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f })
}

// checkPlainStderr: every line of a non-terminal stderr is a JSON log
// record, a config warning, or the one summary line starting with prefix.
func checkPlainStderr(t *testing.T, what, stderr, prefix string) {
	t.Helper()
	if hasControl(stderr) {
		t.Errorf("%s: stderr holds control characters: %q", what, stderr)
	}
	var summaries []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case json.Valid([]byte(line)) && strings.HasPrefix(line, "{"):
		case strings.HasPrefix(line, "warning: "):
		case strings.HasPrefix(line, prefix):
			summaries = append(summaries, line)
		default:
			t.Errorf("%s: stderr line is neither a JSON log record nor the summary: %q", what, line)
		}
	}
	if len(summaries) != 1 {
		t.Errorf("%s: %d summary lines, want 1:\n%s", what, len(summaries), stderr)
	}
}

// TestOutputWithoutTerminal: when stderr is not a terminal a backup and a
// restore draw nothing: JSON logs and one summary line, no control
// characters anywhere.
func TestOutputWithoutTerminal(t *testing.T) {
	_, cfg, repo := sampleCluster(t)
	code, stdout, stderr := runCLI(t, "--log-level", "debug", "backup", "-c", cfg)
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if hasControl(stdout) {
		t.Errorf("backup: stdout holds control characters: %q", stdout)
	}
	checkPlainStderr(t, "backup", stderr, "backup 2")

	target := testkit.StartKfake(t, 3)
	rcfg := restoreConfig(t, target.Addrs(), repo)
	code, stdout, stderr = runCLI(t, "--log-level", "info", "restore", "-c", rcfg, "--yes")
	if code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if hasControl(stdout) {
		t.Errorf("restore: stdout holds control characters: %q", stdout)
	}
	checkPlainStderr(t, "restore", stderr, "restore ")
	if !strings.Contains(stderr, " records in ") {
		t.Errorf("restore summary without its records:\n%s", stderr)
	}

	code, stdout, stderr = runCLI(t, "--log-level", "info", "restore", "-c", rcfg, "--dry-run")
	if code != exitOK {
		t.Fatalf("restore --dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	checkPlainStderr(t, "restore --dry-run", stderr, "restore dry run of backup ")
}

// TestNoSecretInOutput runs backups with a SASL PLAIN password and AWS
// keys set to distinctive values, at --log-level debug (franz-go's and the
// AWS SDK's own logs included): a success, a wrong password, an
// unreachable S3 endpoint and a Pushgateway that refuses the push (with a
// password in its URL). No secret may appear on stdout or stderr (which
// holds the error).
func TestNoSecretInOutput(t *testing.T) {
	const (
		password      = "kdr-Sasl-Pa55-7f3a9c"
		wrongPassword = "kdr-Wrong-Pa55-1b2c4d"
		awsKeyID      = "AKIAKDRSECRETTEST42Q"
		awsSecret     = "kdrAwsSecret9Qx7Zk2LmN0pQrStUvWxYzAbCd"
		pushPassword  = "kdr-Push-Pa55-e5f6"
	)
	secrets := []string{password, wrongPassword, awsKeyID, awsSecret, pushPassword}
	kf := testkit.StartKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "backup", password))
	cl := testkit.Client(t, kf.Addrs(), kgo.SASL(plain.Auth{User: "backup", Pass: password}.AsMechanism()), kgo.DefaultProduceTopic("orders"))
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", awsKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsSecret)
	t.Setenv("KDR_TEST_SASL_PASSWORD", password)
	t.Setenv("KDR_TEST_WRONG_PASSWORD", wrongPassword)

	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()
	gw, _ := startPushRecorder(t, http.StatusInternalServerError)
	gwURL := strings.Replace(gw.URL, "http://", "http://pusher:"+pushPassword+"@", 1)

	filesystem := "  backend: filesystem\n  path: " + t.TempDir() + "\n"
	s3 := "  backend: s3\n  bucket: kdr-secrets\n  region: us-east-1\n  endpoint: http://" + closedPort + "\n  path_style: true\n  retry_timeout: 1s\n"
	for _, tc := range []struct {
		name     string
		password string
		storage  string
		args     []string
		code     int
	}{
		{"success", "${KDR_TEST_SASL_PASSWORD}", filesystem, nil, exitOK},
		{"wrong password", "${KDR_TEST_WRONG_PASSWORD}", filesystem, nil, exitError},
		{"unreachable S3 endpoint", "${KDR_TEST_SASL_PASSWORD}", s3, nil, exitError},
		{"push refused", "${KDR_TEST_SASL_PASSWORD}", filesystem, []string{"--push-gateway", gwURL}, exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// retry_timeout: kfake answers a wrong SASL password by closing
			// the connection, an EOF that is retried like a broker dropping
			// connections (Apache Kafka answers SASL_AUTHENTICATION_FAILED).
			cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  retry_timeout: 3s
  security:
    sasl:
      mechanism: PLAIN
      username: backup
      password: %s
  topics:
    include: [orders]
storage:
%s`, strings.Join(kf.Addrs(), ", "), tc.password, tc.storage))
			args := append(append([]string{"--log-level", "debug"}, tc.args...), "backup", "-c", cfg)
			code, stdout, stderr := runCLI(t, args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, secret := range secrets {
				for what, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
					if strings.Contains(out, secret) {
						t.Errorf("%s holds the secret %q:\n%s", what, secret, out)
					}
				}
			}
			// franz-go's own debug lines go through the same logger (the S3
			// case fails before any client exists).
			if tc.storage != s3 && !strings.Contains(stderr, `"msg":"opening connection to broker"`) {
				t.Errorf("no franz-go debug log: the test shows nothing\n%s", stderr)
			}
			if tc.name == "push refused" && !strings.Contains(stderr, "could not push") {
				t.Errorf("the refused push was not logged:\n%s", stderr)
			}
		})
	}
}
