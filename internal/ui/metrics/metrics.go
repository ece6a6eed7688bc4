// Package metrics holds the Prometheus metrics of one run of kafkastreams-dr
// (a backup or a restore): records and bytes copied, segments, compression
// ratio, lag behind the captured end, phase durations, retries, errors and
// the last success, and for a restore the equivalents of Kafka Streams'
// restore metrics (KIP-869: restore-total, restore-remaining-records-total,
// restore-rate).
//
// A Run owns its own registry (never the global one): Serve exposes it on
// /metrics while the run lasts, and Push sends it to a Prometheus
// Pushgateway at the end, so that a Kubernetes CronJob's result outlives
// its pod. BackupObserver and RestoreObserver feed it from the backup and
// restorer packages' Observer hooks.
//
// Every metric is named kafkastreams_dr_*, with its unit in the name
// (_seconds, _bytes) and _total on counters.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Namespace prefixes every metric name.
const Namespace = "kafkastreams_dr"

// Run is the metrics of one command run. Its methods are safe for
// concurrent use.
type Run struct {
	command string
	reg     *prometheus.Registry
	now     func() time.Time

	backupRecords      *prometheus.CounterVec
	backupBytesRead    prometheus.Counter
	backupBytesWritten prometheus.Counter
	backupSegments     prometheus.Counter
	backupLagRecords   *prometheus.GaugeVec

	phaseDuration *prometheus.GaugeVec
	retries       *prometheus.CounterVec
	errors        *prometheus.CounterVec
	lastSuccess   *prometheus.GaugeVec

	restoreRecords   *prometheus.CounterVec
	restoreRemaining *prometheus.GaugeVec

	mu sync.Mutex
	// backup
	rawStored, stored int64        // segment bytes before and after compression
	ends              map[tp]int64 // captured end offset of each partition
	cutAt             time.Time    // when the end offsets were captured
	endedAt           time.Time    // when the run ended (freezes the lag in seconds)
	// restore
	restoreStarted  time.Time // first RestoreStart
	restoreEnded    time.Time // PhaseDone("records")
	restoredRecords int64
	failed          bool // Finish saw an error
}

type tp struct {
	topic     string
	partition int32
}

// New returns the metrics of one run of command ("backup", "restore",
// "drill"), in a registry of their own.
func New(command string) *Run {
	r := &Run{command: command, reg: prometheus.NewRegistry(), now: time.Now, ends: map[tp]int64{}}
	f := factory{r.reg}
	// Metrics of the other command go to a registry nobody gathers: a
	// restore exports no backup metric and the other way round.
	fb, fr := f, f
	switch command {
	case "backup":
		fr = factory{prometheus.NewRegistry()}
	case "restore":
		fb = factory{prometheus.NewRegistry()}
	}

	r.backupRecords = fb.counterVec("backup_records_total",
		"Records read from the source cluster and written to segments by this backup run, per topic. Mirrors the consumer's records-consumed-total.", "topic")
	r.backupBytesRead = fb.counter("backup_bytes_read_total",
		"Bytes of record keys and values read from the source cluster by this backup run (uncompressed). Mirrors the consumer's bytes-consumed-total.")
	r.backupBytesWritten = fb.counter("backup_bytes_written_total",
		"Bytes of segments made durable in the repository by this backup run (compressed, as stored).")
	r.backupSegments = fb.counter("backup_segments_total",
		"Segments made durable in the repository by this backup run.")
	fb.gaugeFunc("backup_compression_ratio",
		"Uncompressed bytes of the segments written by this backup run divided by their stored bytes (0 before the first segment).", r.compressionRatio)
	r.backupLagRecords = fb.gaugeVec("backup_lag_records",
		"Offsets left to copy before the end captured at the start of the backup (the cut), per partition; 0 when the partition is done. Mirrors the consumer's records-lag.", "topic", "partition")
	fb.gaugeFunc("backup_lag_seconds",
		"Seconds between the capture of the backup's end offsets (the cut) and now, or the end of the run once it ended: how far behind the cluster the backup's data is.", r.lagSeconds)
	fb.gaugeFunc("backup_cut_timestamp_seconds",
		"Unix time at which the backup captured its end offsets (the cut): the data of the backup is as of this time (0 before the cut).", r.cutTimestamp)

	r.phaseDuration = f.gaugeVec("phase_duration_seconds",
		"Duration of each phase of the run: backup cut, copy, manifest; restore preflight, topics, records, offsets.", "command", "phase")
	r.retries = f.counterVec("retries_total",
		"Requests retried by this run, per kind of request (fetch, ...).", "kind")
	r.errors = f.counterVec("errors_total",
		"Runs of the command that failed: 0 or 1 for one run (a Pushgateway keeps the last run's).", "command")
	r.lastSuccess = f.gaugeVec("last_success_timestamp_seconds",
		"Unix time of the command's last successful run; a failed run does not push it, so a Pushgateway keeps the last success's.", "command")

	r.restoreRecords = fr.counterVec("restore_records_restored_total",
		"Records produced to the target cluster by this restore run, per topic. Mirrors Kafka Streams' restore-total (stream-task-metrics, KIP-869).", "topic")
	r.restoreRemaining = fr.gaugeVec("restore_records_remaining",
		"Records left to produce to each partition by this restore run. Mirrors Kafka Streams' restore-remaining-records-total (stream-task-metrics, KIP-869).", "topic", "partition")
	fr.gaugeFunc("restore_rate_records_per_second",
		"Records produced per second by this restore run, averaged over its records phase (so far, while it runs). Mirrors Kafka Streams' restore-rate (stream-task-metrics, KIP-869).", r.restoreRate)

	r.errors.WithLabelValues(command) // exported as 0 until the run fails
	return r
}

// Registry returns the run's registry, for tests and other exporters.
func (r *Run) Registry() *prometheus.Registry { return r.reg }

// Command returns the command the run's metrics are labelled with.
func (r *Run) Command() string { return r.command }

// Finish records the outcome of the run: on success the last-success
// timestamp, otherwise one error. It also freezes the lag in seconds.
// Call it once, before the final Push.
func (r *Run) Finish(err error) {
	r.mu.Lock()
	r.endedAt = r.now()
	r.mu.Unlock()
	if err != nil {
		r.errors.WithLabelValues(r.command).Inc()
		r.mu.Lock()
		r.failed = true
		r.mu.Unlock()
		return
	}
	r.lastSuccess.WithLabelValues(r.command).Set(float64(r.now().UnixNano()) / 1e9)
}

// describeSuccess are the gauges that describe a backup that was made:
// a failed run does not push them, so a Pushgateway keeps the last
// successful backup's (an alert on the cut's age must not see a 0).
var describeSuccess = map[string]bool{
	"kafkastreams_dr_backup_cut_timestamp_seconds": true,
	"kafkastreams_dr_backup_lag_seconds":           true,
	"kafkastreams_dr_backup_compression_ratio":     true,
}

// withoutFamilies drops the named metric families from what g gathers.
func withoutFamilies(g prometheus.Gatherer, drop map[string]bool) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		kept := mfs[:0]
		for _, mf := range mfs {
			if !drop[mf.GetName()] {
				kept = append(kept, mf)
			}
		}
		return kept, err
	})
}

// SetBackupCut records when the backup's end offsets were captured (the
// manifest's cut_at): a resumed backup's cut was captured by an earlier run.
func (r *Run) SetBackupCut(t time.Time) {
	if t.IsZero() {
		return
	}
	r.mu.Lock()
	r.cutAt = t
	r.mu.Unlock()
}

func (r *Run) cutTimestamp() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cutAt.IsZero() {
		return 0
	}
	return float64(r.cutAt.UnixNano()) / 1e9
}

func (r *Run) compressionRatio() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stored == 0 {
		return 0
	}
	return float64(r.rawStored) / float64(r.stored)
}

func (r *Run) lagSeconds() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cutAt.IsZero() {
		return 0
	}
	end := r.endedAt
	if end.IsZero() {
		end = r.now()
	}
	return max(end.Sub(r.cutAt).Seconds(), 0)
}

func (r *Run) restoreRate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restoreStarted.IsZero() {
		return 0
	}
	end := r.restoreEnded
	if end.IsZero() {
		end = r.endedAt
	}
	if end.IsZero() {
		end = r.now()
	}
	d := end.Sub(r.restoreStarted).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(r.restoredRecords) / d
}

func (r *Run) phaseDone(phase string, d time.Duration) {
	r.phaseDuration.WithLabelValues(r.command, phase).Set(d.Seconds())
}

// BackupObserver returns the backup.Observer that feeds the run's metrics.
func (r *Run) BackupObserver() *BackupObserver { return &BackupObserver{r} }

// RestoreObserver returns the restorer.Observer that feeds the run's
// metrics.
func (r *Run) RestoreObserver() *RestoreObserver { return &RestoreObserver{r} }

// BackupObserver implements backup.Observer for a Run.
type BackupObserver struct{ r *Run }

// Planned sets the partition's lag to its offset range and remembers its
// end.
func (o *BackupObserver) Planned(topic string, partition int32, from, end int64) {
	r := o.r
	r.mu.Lock()
	r.ends[tp{topic, partition}] = end
	r.mu.Unlock()
	r.backupLagRecords.WithLabelValues(topic, part(partition)).Set(float64(max(end-from, 0)))
	r.backupRecords.WithLabelValues(topic) // the topic appears with 0 before its first record
}

// Copied counts records and bytes read and updates the partition's lag.
func (o *BackupObserver) Copied(topic string, partition int32, n, rawBytes int64, next int64) {
	r := o.r
	r.backupRecords.WithLabelValues(topic).Add(float64(n))
	r.backupBytesRead.Add(float64(rawBytes))
	r.mu.Lock()
	end, ok := r.ends[tp{topic, partition}]
	r.mu.Unlock()
	if ok {
		r.backupLagRecords.WithLabelValues(topic, part(partition)).Set(float64(max(end-next, 0)))
	}
}

// SegmentStored counts a durable segment and its bytes.
func (o *BackupObserver) SegmentStored(_ string, _ int32, storedBytes, rawBytes int64) {
	r := o.r
	r.backupSegments.Inc()
	r.backupBytesWritten.Add(float64(storedBytes))
	r.mu.Lock()
	r.stored += storedBytes
	r.rawStored += rawBytes
	r.mu.Unlock()
}

// Retried counts a retried request.
func (o *BackupObserver) Retried(kind string) { o.r.retries.WithLabelValues(kind).Inc() }

// PhaseDone records a phase's duration; the end of the "cut" phase is
// taken as the time of the cut until SetBackupCut says otherwise.
func (o *BackupObserver) PhaseDone(phase string, d time.Duration) {
	r := o.r
	r.phaseDone(phase, d)
	if phase == "cut" {
		r.mu.Lock()
		if r.cutAt.IsZero() {
			r.cutAt = r.now()
		}
		r.mu.Unlock()
	}
}

// RestoreObserver implements restorer.Observer for a Run.
type RestoreObserver struct{ r *Run }

// RestoreStart sets the partition's remaining records.
func (o *RestoreObserver) RestoreStart(topic string, partition int32, records int64) {
	r := o.r
	r.mu.Lock()
	if r.restoreStarted.IsZero() {
		r.restoreStarted = r.now()
	}
	r.mu.Unlock()
	r.restoreRemaining.WithLabelValues(topic, part(partition)).Set(float64(max(records, 0)))
	r.restoreRecords.WithLabelValues(topic)
}

// Restored counts n restored records.
func (o *RestoreObserver) Restored(topic string, partition int32, n int64) {
	r := o.r
	r.restoreRecords.WithLabelValues(topic).Add(float64(n))
	r.restoreRemaining.WithLabelValues(topic, part(partition)).Sub(float64(n))
	r.mu.Lock()
	r.restoredRecords += n
	r.mu.Unlock()
}

// RestoreEnd sets the partition's remaining records to 0.
func (o *RestoreObserver) RestoreEnd(topic string, partition int32, _ int64) {
	o.r.restoreRemaining.WithLabelValues(topic, part(partition)).Set(0)
}

// PhaseDone records a phase's duration; the end of the "records" phase
// freezes the restore rate.
func (o *RestoreObserver) PhaseDone(phase string, d time.Duration) {
	r := o.r
	r.phaseDone(phase, d)
	if phase == "records" {
		r.mu.Lock()
		r.restoreEnded = r.now()
		r.mu.Unlock()
	}
}

func part(p int32) string { return strconv.FormatInt(int64(p), 10) }

// Server serves a run's metrics over HTTP; see Run.Serve.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve starts an HTTP server on addr (host:port; port 0 picks a free one)
// answering GET /metrics with the run's metrics in the Prometheus text
// format. It returns once the address is bound; an address that cannot be
// bound is an error. Close stops it.
func (r *Run) Serve(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics server: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// Addr returns the address the server listens on ("127.0.0.1:9464").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting scrapes in progress finish until ctx is
// done.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return err
}

// Push sends the run's metrics to the Prometheus Pushgateway at gateway
// (http[s]://host:port[/path]) under job and the grouping labels (e.g.
// command and application_id; empty values are left out). It uses POST
// (push.Pusher.Add): only the pushed metric names of the group are
// replaced, so a failed run, which pushes no last_success, leaves the last
// success's timestamp in place. The grouping labels are taken off the
// pushed metrics that carry them (the Pushgateway puts them back), so the
// series read from the gateway are the ones /metrics serves. User
// information in the URL is sent as basic auth and never appears in an
// error.
func (r *Run) Push(ctx context.Context, gateway, job string, grouping map[string]string) error {
	u, err := ParsePushURL(gateway)
	if err != nil {
		return err
	}
	var user, pass string
	hasAuth := u.User != nil
	if hasAuth {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	var names []string
	p := push.New(u.String(), job)
	for k, v := range grouping {
		if v == "" {
			continue
		}
		p = p.Grouping(k, v)
		names = append(names, k)
	}
	var g prometheus.Gatherer = r.reg
	r.mu.Lock()
	if r.failed {
		g = withoutFamilies(g, describeSuccess)
	}
	r.mu.Unlock()
	p = p.Gatherer(withoutLabels(g, names)).Client(&http.Client{Timeout: 30 * time.Second})
	if hasAuth {
		p = p.BasicAuth(user, pass)
	}
	if err := p.AddContext(ctx); err != nil {
		msg := err.Error()
		if hasAuth && pass != "" {
			msg = strings.ReplaceAll(msg, pass, "xxxxx")
		}
		return fmt.Errorf("push metrics to %s: %s", u.Redacted(), msg)
	}
	return nil
}

// ParsePushURL checks a Pushgateway URL: http or https with a host, no
// query or fragment. Its error quotes the URL as given, the password
// masked ("http://user:xxxxx@host"), also when the URL does not parse.
func ParsePushURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		shown := maskPassword(s)
		if err == nil {
			shown = u.Redacted()
		}
		return nil, fmt.Errorf("%q: not a Pushgateway URL: want http://host:port or https://host:port", shown)
	}
	return u, nil
}

// maskPassword is s, a URL that may not parse, with the password of its
// user information (between "://" and the last "@") replaced by "xxxxx",
// as url.URL.Redacted does for one that parses.
func maskPassword(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return s
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// withoutLabels gathers g and drops the labels named names from every
// metric.
func withoutLabels(g prometheus.Gatherer, names []string) prometheus.Gatherer {
	if len(names) == 0 {
		return g
	}
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for i, mf := range mfs {
			// A copy: the families Gather returns may be shared with a
			// concurrent scrape of --metrics-addr (the race detector saw
			// this write race the /metrics handler's read).
			mf = proto.Clone(mf).(*dto.MetricFamily)
			mfs[i] = mf
			for _, m := range mf.Metric {
				kept := m.Label[:0]
				for _, l := range m.Label {
					if !drop[l.GetName()] {
						kept = append(kept, l)
					}
				}
				m.Label = kept
			}
		}
		return mfs, err
	})
}

// ErrAddr is wrapped by the error of CheckAddr.
var ErrAddr = errors.New("not host:port")

// CheckAddr checks a listen address: host:port with a port from 0 to
// 65535 (0 picks a free port; an empty host listens on every interface).
func CheckAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is %w (e.g. :9464, 127.0.0.1:9464, [::1]:9464)", addr, ErrAddr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeFunc(name, help string, fn func() float64) {
	f.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, fn))
}
