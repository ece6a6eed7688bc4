package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/ui/metrics"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/ui/progress"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// telemetry is what a backup or a restore reports besides its result: the
// run's metrics (served on --metrics-addr while it runs, pushed to
// --push-gateway at the end), the progress bars on a terminal and the
// summary line on stderr.
type telemetry struct {
	g        *globalOptions
	log      *slog.Logger
	metrics  *metrics.Run
	server   *metrics.Server
	tracker  *progress.Tracker
	grouping map[string]string // Pushgateway grouping labels besides the job
	noPush   bool              // a dry run pushes nothing
	id       string            // the backup or restore id, once known
	line     string            // replaces the tracker's summary line when set (a dry run's)
	done     bool
}

// startTelemetry starts the telemetry of one run of command for the
// application: the metrics server when --metrics-addr is set (an address
// that cannot be bound fails the run before it starts) and the progress
// tracker. finish ends it.
func startTelemetry(g *globalOptions, s *iostreams, command, applicationID string) (*telemetry, error) {
	if g == nil {
		g = &globalOptions{}
	}
	t := &telemetry{
		g:        g,
		log:      g.Logger(),
		metrics:  metrics.New(command),
		tracker:  progress.New(s.ErrOut, s.ErrTTY, command, g.logWriter),
		grouping: map[string]string{"command": command, "application_id": applicationID},
	}
	if g.MetricsAddr != "" {
		srv, err := t.metrics.Serve(g.MetricsAddr)
		if err != nil {
			return nil, withCode(exitError, fmt.Errorf("--metrics-addr %s: %w", g.MetricsAddr, err), "pick a free port, or :0 for any")
		}
		t.server = srv
		t.log.Info("serving metrics", "url", "http://"+srv.Addr()+"/metrics")
	}
	return t, nil
}

// backupObserver is the backup.Observer feeding the metrics and the bars.
func (t *telemetry) backupObserver() backup.Observer {
	return backupObservers{t.metrics.BackupObserver(), t.tracker.BackupObserver()}
}

// restoreObserver is the restorer.Observer feeding the metrics and the
// bars.
func (t *telemetry) restoreObserver() restorer.Observer {
	return restoreObservers{t.metrics.RestoreObserver(), t.tracker.RestoreObserver()}
}

// finish ends the run's telemetry once the run returned err (the error the
// command returns, nil on success): the summary line, the outcome in the metrics, the push to
// the Pushgateway and the end of the metrics server. A failed push is
// logged: it does not change the exit code, since the run itself is done.
// It runs even when ctx is cancelled (SIGINT/SIGTERM) so that an
// interrupted run still reports.
func (t *telemetry) finish(ctx context.Context, err error) {
	if t == nil || t.done {
		return
	}
	t.done = true
	if t.line != "" && err == nil {
		t.tracker.FinishLine(t.line)
	} else {
		t.tracker.Finish(t.id, outcome(ctx, err))
	}
	t.metrics.Finish(err)
	if t.server != nil && t.g.afterRun != nil {
		t.g.afterRun(t.server.Addr())
	}
	bg := context.WithoutCancel(ctx)
	if t.g.PushGateway != "" && !t.noPush {
		pctx, cancel := context.WithTimeout(bg, 30*time.Second)
		if perr := t.metrics.Push(pctx, t.g.PushGateway, t.g.PushJob, t.grouping); perr != nil {
			t.log.Error("could not push the run's metrics", "err", perr)
		} else {
			t.log.Debug("pushed the run's metrics", "job", t.g.PushJob)
		}
		cancel()
	}
	if t.server != nil {
		sctx, cancel := context.WithTimeout(bg, 5*time.Second)
		t.server.Close(sctx)
		cancel()
	}
}

// outcome maps the command's error to the summary line's outcome, like
// exitCode maps it to the exit code.
func outcome(ctx context.Context, err error) progress.Outcome {
	if err == nil {
		return progress.Done
	}
	switch exitCode(ctx, err) {
	case exitCancelled:
		return progress.Interrupted
	case exitPartial:
		return progress.Partial
	case exitUsage, exitLocked: // a held lock: the run did not start its work
		return progress.Refused
	}
	return progress.Failed
}

// backupObservers calls every observer in turn.
type backupObservers []backup.Observer

func (os backupObservers) Planned(topic string, partition int32, from, end int64) {
	for _, o := range os {
		o.Planned(topic, partition, from, end)
	}
}

func (os backupObservers) Copied(topic string, partition int32, n, rawBytes, next int64) {
	for _, o := range os {
		o.Copied(topic, partition, n, rawBytes, next)
	}
}

func (os backupObservers) SegmentStored(topic string, partition int32, storedBytes, rawBytes int64) {
	for _, o := range os {
		o.SegmentStored(topic, partition, storedBytes, rawBytes)
	}
}

func (os backupObservers) Retried(kind string) {
	for _, o := range os {
		o.Retried(kind)
	}
}

func (os backupObservers) PhaseDone(phase string, d time.Duration) {
	for _, o := range os {
		o.PhaseDone(phase, d)
	}
}

// restoreObservers calls every observer in turn.
type restoreObservers []restorer.Observer

func (os restoreObservers) RestoreStart(topic string, partition int32, records int64) {
	for _, o := range os {
		o.RestoreStart(topic, partition, records)
	}
}

func (os restoreObservers) Restored(topic string, partition int32, n int64) {
	for _, o := range os {
		o.Restored(topic, partition, n)
	}
}

func (os restoreObservers) RestoreEnd(topic string, partition int32, total int64) {
	for _, o := range os {
		o.RestoreEnd(topic, partition, total)
	}
}

func (os restoreObservers) PhaseDone(phase string, d time.Duration) {
	for _, o := range os {
		o.PhaseDone(phase, d)
	}
}
