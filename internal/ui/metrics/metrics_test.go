package metrics

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

var (
	_ backup.Observer   = (*BackupObserver)(nil)
	_ restorer.Observer = (*RestoreObserver)(nil)
)

// scrape GETs url and parses the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}

// value returns the value of the metric of family name whose labels
// include labels (name=value pairs); ok is false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// checkConventions: every family is ours, documented, counters end in
// _total and nothing else does, and a unit in the name is a base unit.
func checkConventions(t *testing.T, mfs map[string]*dto.MetricFamily) {
	t.Helper()
	for name, mf := range mfs {
		if !strings.HasPrefix(name, Namespace+"_") {
			t.Errorf("%s: not prefixed %s_", name, Namespace)
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s: no help", name)
		}
		counter := mf.GetType() == dto.MetricType_COUNTER
		if counter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: type %s; counters and only counters end in _total", name, mf.GetType())
		}
		for _, bad := range []string{"_ms", "_milliseconds", "_kb", "_mb", "_minutes"} {
			if strings.Contains(name, bad) {
				t.Errorf("%s: use base units (seconds, bytes)", name)
			}
		}
	}
}

func TestBackupMetricsServed(t *testing.T) {
	r := New("backup")
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	o := r.BackupObserver()
	o.Planned("orders", 0, 0, 100)
	o.Planned("orders", 1, 10, 50)
	o.Planned("totals", 0, 0, 0)
	o.PhaseDone("cut", 1500*time.Millisecond)
	o.Copied("orders", 0, 60, 6000, 60)
	o.Copied("orders", 1, 40, 4000, 50)
	o.SegmentStored("orders", 0, 1000, 6000)
	o.SegmentStored("orders", 1, 1000, 4000)
	o.Retried("fetch")
	o.Retried("fetch")
	now = now.Add(30 * time.Second)

	srv, err := r.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(t.Context()) })
	mfs := scrape(t, "http://"+srv.Addr()+"/metrics")
	checkConventions(t, mfs)

	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"kafkastreams_dr_backup_records_total", []string{"topic", "orders"}, 100},
		{"kafkastreams_dr_backup_records_total", []string{"topic", "totals"}, 0},
		{"kafkastreams_dr_backup_bytes_read_total", nil, 10000},
		{"kafkastreams_dr_backup_bytes_written_total", nil, 2000},
		{"kafkastreams_dr_backup_segments_total", nil, 2},
		{"kafkastreams_dr_backup_compression_ratio", nil, 5},
		{"kafkastreams_dr_backup_lag_records", []string{"topic", "orders", "partition", "0"}, 40},
		{"kafkastreams_dr_backup_lag_records", []string{"topic", "orders", "partition", "1"}, 0},
		{"kafkastreams_dr_backup_lag_seconds", nil, 30},
		{"kafkastreams_dr_backup_cut_timestamp_seconds", nil, 1_700_000_000},
		{"kafkastreams_dr_phase_duration_seconds", []string{"command", "backup", "phase", "cut"}, 1.5},
		{"kafkastreams_dr_retries_total", []string{"kind", "fetch"}, 2},
		{"kafkastreams_dr_errors_total", []string{"command", "backup"}, 0},
	}
	for _, w := range want {
		got, ok := value(mfs, w.name, w.labels...)
		if !ok || got != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
		}
	}
	if _, ok := mfs["kafkastreams_dr_last_success_timestamp_seconds"]; ok {
		t.Error("last_success before the run ended")
	}
	if _, ok := mfs["kafkastreams_dr_restore_rate_records_per_second"]; ok {
		t.Error("a backup exports the restore rate")
	}

	// The run ends: the lag in seconds freezes, the success is recorded.
	r.SetBackupCut(time.Unix(1_699_999_990, 0)) // the manifest's cut_at
	r.Finish(nil)
	now = now.Add(time.Hour)
	mfs = scrape(t, "http://"+srv.Addr()+"/metrics")
	for name, want := range map[string]float64{
		"kafkastreams_dr_backup_lag_seconds":             40,
		"kafkastreams_dr_last_success_timestamp_seconds": 1_700_000_030,
		"kafkastreams_dr_backup_cut_timestamp_seconds":   1_699_999_990,
		"kafkastreams_dr_errors_total":                   0,
	} {
		if got, _ := value(mfs, name); got != want {
			t.Errorf("after Finish: %s = %v, want %v", name, got, want)
		}
	}
	if err := srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + srv.Addr() + "/metrics"); err == nil {
		t.Error("the server still answers after Close")
	}
}

func TestRestoreMetrics(t *testing.T) {
	r := New("restore")
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	o := r.RestoreObserver()
	o.PhaseDone("preflight", 200*time.Millisecond)
	o.RestoreStart("orders", 0, 300)
	o.RestoreStart("orders", 1, 100)
	o.Restored("orders", 0, 100)
	o.Restored("orders", 1, 100)
	o.RestoreEnd("orders", 1, 100)
	now = now.Add(2 * time.Second)
	o.Restored("orders", 0, 200)
	o.RestoreEnd("orders", 0, 300)
	o.PhaseDone("records", 2*time.Second)
	now = now.Add(time.Minute) // the rate is of the records phase

	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	checkConventions(t, byName)
	for _, w := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"kafkastreams_dr_restore_records_restored_total", []string{"topic", "orders"}, 400},
		{"kafkastreams_dr_restore_records_remaining", []string{"topic", "orders", "partition", "0"}, 0},
		{"kafkastreams_dr_restore_rate_records_per_second", nil, 200},
		{"kafkastreams_dr_phase_duration_seconds", []string{"command", "restore", "phase", "preflight"}, 0.2},
	} {
		if got, ok := value(byName, w.name, w.labels...); !ok || got != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
		}
	}
	for name := range byName {
		if strings.HasPrefix(name, "kafkastreams_dr_backup_") {
			t.Errorf("a restore exports %s", name)
		}
	}
}

// TestRemainingDuringRestore: restore-remaining-records-total counts down
// as batches are acknowledged.
func TestRemainingDuringRestore(t *testing.T) {
	r := New("restore")
	o := r.RestoreObserver()
	o.RestoreStart("t", 3, 10)
	o.Restored("t", 3, 4)
	mfs, _ := r.Registry().Gather()
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	if got, _ := value(byName, "kafkastreams_dr_restore_records_remaining", "partition", "3"); got != 6 {
		t.Errorf("remaining = %v, want 6", got)
	}
}

type pushed struct {
	method, path, contentType, auth string
	families                        map[string]*dto.MetricFamily
}

// pushReceiver is a Pushgateway stand-in recording every push; it answers
// status.
func pushReceiver(t *testing.T, status int) (*httptest.Server, func() []pushed) {
	var mu sync.Mutex
	var got []pushed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		p := pushed{method: req.Method, path: req.URL.Path, contentType: req.Header.Get("Content-Type"), auth: req.Header.Get("Authorization"),
			families: map[string]*dto.MetricFamily{}}
		dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(req.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("decode pushed body: %v", err)
				}
				break
			}
			p.families[mf.GetName()] = mf
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []pushed { mu.Lock(); defer mu.Unlock(); return append([]pushed(nil), got...) }
}

func TestPush(t *testing.T) {
	srv, got := pushReceiver(t, http.StatusOK)
	r := New("backup")
	o := r.BackupObserver()
	o.Planned("orders", 0, 0, 10)
	o.Copied("orders", 0, 10, 100, 10)
	o.PhaseDone("copy", time.Second)
	r.Finish(nil)
	url := strings.Replace(srv.URL, "http://", "http://pusher:s3cret-push@", 1)
	if err := r.Push(t.Context(), url, "kafkastreams-dr", map[string]string{"command": "backup", "application_id": "order-processor", "empty": ""}); err != nil {
		t.Fatal(err)
	}
	ps := got()
	if len(ps) != 1 {
		t.Fatalf("%d pushes, want 1", len(ps))
	}
	p := ps[0]
	if p.method != http.MethodPost {
		t.Errorf("method %s, want POST (a failed run must not erase the last success)", p.method)
	}
	for _, w := range []string{"/metrics/job/kafkastreams-dr", "/command/backup", "/application_id/order-processor"} {
		if !strings.Contains(p.path, w) {
			t.Errorf("path %q does not contain %q", p.path, w)
		}
	}
	if strings.Contains(p.path, "empty") {
		t.Errorf("path %q has the empty grouping label", p.path)
	}
	if p.auth == "" {
		t.Error("the URL's user information was not sent as basic auth")
	}
	checkConventions(t, p.families)
	if v, ok := value(p.families, "kafkastreams_dr_backup_records_total", "topic", "orders"); !ok || v != 10 {
		t.Errorf("pushed records = %v (%v), want 10", v, ok)
	}
	if _, ok := value(p.families, "kafkastreams_dr_last_success_timestamp_seconds"); !ok {
		t.Error("last success not pushed")
	}
	for name, mf := range p.families {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "command" || l.GetName() == "job" {
					t.Errorf("%s carries the grouping label %s: the Pushgateway refuses it", name, l.GetName())
				}
			}
		}
	}
	// The registry itself keeps its command label (for /metrics).
	mfs, _ := r.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "kafkastreams_dr_errors_total" && mf.Metric[0].Label[0].GetName() != "command" {
			t.Errorf("pushing stripped the registry's labels: %v", mf)
		}
	}
}

// TestPushFailedRun: a failed run pushes errors_total 1 and no
// last_success, so the gateway keeps the last success's timestamp; a
// refused push is an error that names the gateway without its password.
func TestPushFailedRun(t *testing.T) {
	srv, got := pushReceiver(t, http.StatusOK)
	r := New("restore")
	r.Finish(errors.New("boom"))
	if err := r.Push(t.Context(), srv.URL+"/", "job", map[string]string{"command": "restore"}); err != nil {
		t.Fatal(err)
	}
	p := got()[0]
	if v, ok := value(p.families, "kafkastreams_dr_errors_total"); !ok || v != 1 {
		t.Errorf("errors_total = %v (%v), want 1", v, ok)
	}
	if _, ok := p.families["kafkastreams_dr_last_success_timestamp_seconds"]; ok {
		t.Error("a failed run pushed last_success")
	}

	bad, _ := pushReceiver(t, http.StatusInternalServerError)
	err := r.Push(t.Context(), strings.Replace(bad.URL, "http://", "http://u:s3cret-push@", 1), "job", nil)
	if err == nil {
		t.Fatal("push to a failing gateway succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-push") || !strings.Contains(err.Error(), "500") {
		t.Errorf("error %q: want the status and no password", err)
	}
}

func TestCheckAddrAndPushURL(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{":9464", true}, {"127.0.0.1:0", true}, {"[::1]:9464", true}, {"0.0.0.0:65535", true},
		{"9464", false}, {"localhost", false}, {"host:port", false}, {"host:70000", false}, {"http://host:9464", false},
	} {
		if err := CheckAddr(tc.addr); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://pushgateway:9091", true}, {"https://u:p@pg.example.com/prefix", true},
		{"pushgateway:9091", false}, {"ftp://pg:9091", false}, {"http://", false}, {"http://pg:9091?x=1", false},
	} {
		_, err := ParsePushURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("ParsePushURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("ParsePushURL(%q) error shows the password: %v", tc.url, err)
		}
	}
	if _, err := New("backup").Serve("127.0.0.1:-1"); err == nil {
		t.Error("Serve on a bad port succeeded")
	}
}

// TestPushFailedBackupKeepsTheLastCut is a regression test (review): a
// failed backup pushed backup_cut_timestamp_seconds 0 over the last
// success's value, so an alert on the cut's age fired ~56 years.
func TestPushFailedBackupKeepsTheLastCut(t *testing.T) {
	srv, got := pushReceiver(t, http.StatusOK)
	r := New("backup")
	r.Finish(errors.New("boom"))
	if err := r.Push(t.Context(), srv.URL+"/", "job", map[string]string{"command": "backup"}); err != nil {
		t.Fatal(err)
	}
	p := got()[0]
	for _, name := range []string{"kafkastreams_dr_backup_cut_timestamp_seconds", "kafkastreams_dr_backup_lag_seconds", "kafkastreams_dr_backup_compression_ratio"} {
		if _, ok := p.families[name]; ok {
			t.Errorf("a failed backup pushed %s", name)
		}
	}
	if v, ok := value(p.families, "kafkastreams_dr_errors_total"); !ok || v != 1 {
		t.Errorf("errors_total = %v (%v), want 1", v, ok)
	}
}
