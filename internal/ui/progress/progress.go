// Package progress shows how far a backup or a restore has got: on a
// terminal, one bar per topic (offsets or records done of planned, records,
// bytes, rate, ETA) redrawn in place on stderr; when stderr is not a
// terminal nothing is drawn. Either way one summary line is printed at the
// end ("backup 20240501T120000.000Z-1a2b3c4d: 6 topics, 4321000 records,
// 1.2 GiB read, 310.4 MiB stored in 42s (28.6 MiB/s)").
//
// A Tracker is fed by the backup and restorer packages' Observer hooks
// (BackupObserver, RestoreObserver). Log lines written through a Writer
// while bars are drawn go above the bars instead of through them.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Writer is the writer for logs on stderr: it writes to the underlying
// writer, or, while a Tracker draws bars on it, above the bars. Safe for
// concurrent use.
type Writer struct {
	w  io.Writer
	mu sync.Mutex
	p  *mpb.Progress
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes b above the bars when they are drawn, to the underlying
// writer otherwise.
func (w *Writer) Write(b []byte) (int, error) {
	w.mu.Lock()
	p := w.p
	w.mu.Unlock()
	if p != nil {
		if n, err := p.Write(b); err == nil {
			return n, nil
		}
	}
	return w.w.Write(b)
}

func (w *Writer) route(p *mpb.Progress) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.p = p
	w.mu.Unlock()
}

// Tracker follows one run. Its methods and observers are safe for
// concurrent use.
type Tracker struct {
	verb  string // "backup" or "restore"
	out   io.Writer
	tty   bool
	logs  *Writer
	now   func() time.Time
	start time.Time

	mu         sync.Mutex
	p          *mpb.Progress // bars; nil until the first topic, and without a terminal
	topics     map[string]*topic
	order      []string
	partitions map[partKey]*partState
	records    int64 // records copied or restored
	bytesRead  int64 // backup: key and value bytes read
	stored     int64 // backup: segment bytes stored
	segments   int64
	finished   bool
}

type partKey struct {
	topic string
	part  int32
}

type partState struct{ pos, end int64 }

type topic struct {
	name    string
	planned int64 // offsets (backup) or records (restore) to do
	done    int64 // of planned
	records int64
	bytes   int64
	started time.Time
	bar     *mpb.Bar
}

// New returns a Tracker for a run of verb ("backup", "restore") writing
// its bars, when tty, and its summary line to out. logs, if not nil, is
// the Writer the run's logger writes to out through: while bars are drawn
// its lines go above them.
func New(out io.Writer, tty bool, verb string, logs *Writer) *Tracker {
	return &Tracker{verb: verb, out: out, tty: tty, logs: logs, now: time.Now, start: time.Now(),
		topics: map[string]*topic{}, partitions: map[partKey]*partState{}}
}

// topicLocked returns the topic, adding it; new reports that it was
// added: the caller calls addBar after unlocking.
func (t *Tracker) topicLocked(name string) (tp *topic, new bool) {
	if tp = t.topics[name]; tp != nil {
		return tp, false
	}
	tp = &topic{name: name, started: t.now()}
	t.topics[name] = tp
	t.order = append(t.order, name)
	return tp, true
}

// addBar adds the topic's bar on a terminal. mpb calls barText from its
// own goroutines: no bar method is called with t.mu held.
func (t *Tracker) addBar(tp *topic) {
	t.mu.Lock()
	if !t.tty || t.finished {
		t.mu.Unlock()
		return
	}
	if t.p == nil {
		t.p = mpb.New(mpb.WithOutput(t.out), mpb.ForceTTY(), mpb.WithAutoRefresh(), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithWidth(100))
		t.logs.route(t.p)
	}
	p := t.p
	t.mu.Unlock()
	unit := "offsets"
	if t.verb == "restore" {
		unit = "records"
	}
	bar := p.AddBar(0,
		mpb.PrependDecorators(decor.Name(tp.name, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return t.barText(tp, unit) })))
	t.mu.Lock()
	tp.bar = bar
	t.mu.Unlock()
}

// update adds the topic's bar if it is new and moves it.
func (t *Tracker) update(tp *topic, new bool) {
	if new {
		t.addBar(tp)
	}
	t.mu.Lock()
	bar, planned, done := tp.bar, tp.planned, tp.done
	t.mu.Unlock()
	if bar != nil {
		bar.SetTotal(planned, false)
		bar.SetCurrent(done)
	}
}

// barText is what follows a topic's bar: "1200/5000 offsets  1180 records
// 1.2 MiB  300 records/s  ETA 13s".
func (t *Tracker) barText(tp *topic, unit string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := t.now().Sub(tp.started).Seconds()
	s := fmt.Sprintf("%d/%d %s", tp.done, tp.planned, unit)
	if unit != "records" {
		s += fmt.Sprintf("  %d records", tp.records)
	}
	if t.verb == "backup" {
		s += "  " + Bytes(tp.bytes)
	}
	if el > 0 && tp.records > 0 {
		rate := float64(tp.records) / el
		s += fmt.Sprintf("  %.0f records/s", rate)
		if t.verb == "backup" {
			s += "  " + Bytes(int64(float64(tp.bytes)/el)) + "/s"
		}
		if tp.done > 0 && tp.done < tp.planned {
			eta := time.Duration(float64(tp.planned-tp.done) / (float64(tp.done) / el) * float64(time.Second))
			s += "  ETA " + eta.Round(time.Second).String()
		}
	}
	return s
}

// BackupObserver returns the backup.Observer that feeds the tracker.
func (t *Tracker) BackupObserver() *BackupObserver { return &BackupObserver{t} }

// RestoreObserver returns the restorer.Observer that feeds the tracker.
func (t *Tracker) RestoreObserver() *RestoreObserver { return &RestoreObserver{t} }

// BackupObserver implements backup.Observer for a Tracker.
type BackupObserver struct{ t *Tracker }

// Planned adds the partition's offsets to its topic's total.
func (o *BackupObserver) Planned(topic string, partition int32, from, end int64) {
	t := o.t
	t.mu.Lock()
	tp, isNew := t.topicLocked(topic)
	tp.planned += max(end-from, 0)
	t.partitions[partKey{topic, partition}] = &partState{pos: from, end: end}
	t.mu.Unlock()
	t.update(tp, isNew)
}

// Copied advances the partition to next.
func (o *BackupObserver) Copied(topic string, partition int32, n, rawBytes int64, next int64) {
	t := o.t
	t.mu.Lock()
	tp, isNew := t.topicLocked(topic)
	if p := t.partitions[partKey{topic, partition}]; p != nil {
		next = min(next, p.end)
		if next > p.pos {
			tp.done += next - p.pos
			p.pos = next
		}
	}
	tp.records += n
	tp.bytes += rawBytes
	t.records += n
	t.bytesRead += rawBytes
	t.mu.Unlock()
	t.update(tp, isNew)
}

// SegmentStored counts the segment and its stored bytes.
func (o *BackupObserver) SegmentStored(_ string, _ int32, storedBytes, _ int64) {
	t := o.t
	t.mu.Lock()
	t.segments++
	t.stored += storedBytes
	t.mu.Unlock()
}

// Retried does nothing: retries show in the logs and metrics.
func (o *BackupObserver) Retried(string) {}

// PhaseDone does nothing.
func (o *BackupObserver) PhaseDone(string, time.Duration) {}

// RestoreObserver implements restorer.Observer for a Tracker.
type RestoreObserver struct{ t *Tracker }

// RestoreStart adds the partition's records to its topic's total.
func (o *RestoreObserver) RestoreStart(topic string, partition int32, records int64) {
	t := o.t
	t.mu.Lock()
	tp, isNew := t.topicLocked(topic)
	tp.planned += max(records, 0)
	t.partitions[partKey{topic, partition}] = &partState{end: records}
	t.mu.Unlock()
	t.update(tp, isNew)
}

// Restored counts n records.
func (o *RestoreObserver) Restored(topic string, partition int32, n int64) {
	t := o.t
	t.mu.Lock()
	tp, isNew := t.topicLocked(topic)
	tp.done += n
	tp.records += n
	t.records += n
	if p := t.partitions[partKey{topic, partition}]; p != nil {
		p.pos += n
	}
	t.mu.Unlock()
	t.update(tp, isNew)
}

// RestoreEnd does nothing: Restored counted the records.
func (o *RestoreObserver) RestoreEnd(string, int32, int64) {}

// PhaseDone does nothing.
func (o *RestoreObserver) PhaseDone(string, time.Duration) {}

// Outcome is how a run ended, for the summary line.
type Outcome int

const (
	Done        Outcome = iota // "backup <id>: ... in 42s (28.6 MiB/s)"
	Partial                    // "backup <id> partial: ..."
	Failed                     // "backup failed after 3.2s: ..."
	Refused                    // "restore refused after 0.4s: ..."
	Interrupted                // "backup interrupted after 3.2s: ..."
)

// Finish stops the bars, completing them when the run is Done or Partial,
// and prints the summary line. Only the first call of Finish or FinishLine
// does anything.
func (t *Tracker) Finish(id string, o Outcome) {
	if t.stop(o == Done || o == Partial) {
		fmt.Fprintln(t.out, t.Summary(id, o))
	}
}

// FinishLine stops the bars and prints line as the summary line.
func (t *Tracker) FinishLine(line string) {
	if t.stop(true) {
		fmt.Fprintln(t.out, line)
	}
}

// stop stops the bars; it reports false when the tracker was stopped
// already.
func (t *Tracker) stop(complete bool) bool {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return false
	}
	t.finished = true
	p := t.p
	var bars []*mpb.Bar
	for _, name := range t.order {
		if b := t.topics[name].bar; b != nil {
			bars = append(bars, b)
		}
	}
	t.mu.Unlock()
	if p == nil {
		return true
	}
	for _, b := range bars {
		if complete {
			b.SetTotal(-1, true)
		} else {
			b.Abort(false)
		}
	}
	p.Wait()
	t.logs.route(nil)
	return true
}

// Summary returns the summary line of a run that ended with o.
func (t *Tracker) Summary(id string, o Outcome) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := t.now().Sub(t.start)
	var head string
	switch o {
	case Done, Partial:
		head = t.verb
		if id != "" {
			head += " " + id
		}
		if o == Partial {
			head += " partial"
		}
		head += ":"
	case Refused:
		head = fmt.Sprintf("%s refused after %s:", t.verb, round(el))
	case Interrupted:
		head = fmt.Sprintf("%s interrupted after %s:", t.verb, round(el))
	default:
		head = fmt.Sprintf("%s failed after %s:", t.verb, round(el))
	}
	parts := []string{plural(int64(len(t.topics)), "topic", "topics"), plural(int64(len(t.partitions)), "partition", "partitions"), plural(t.records, "record", "records")}
	if t.verb == "backup" {
		// Only partitions with records to copy are counted: an incremental
		// run's stdout summary counts every partition of the backup. The
		// in-flight tails are copied like the topics: counted, and said so.
		parts[1] += " with new records (in-flight tails included)"
	}
	if t.verb == "backup" {
		parts = append(parts, Bytes(t.bytesRead)+" read", fmt.Sprintf("%s stored in %s", Bytes(t.stored), plural(t.segments, "segment", "segments")))
	}
	line := head + " " + strings.Join(parts, ", ")
	if o == Done || o == Partial {
		line += " in " + round(el).String()
		if s := el.Seconds(); s > 0 {
			if t.verb == "backup" {
				line += fmt.Sprintf(" (%s/s)", Bytes(int64(float64(t.bytesRead)/s)))
			} else {
				line += fmt.Sprintf(" (%.0f records/s)", float64(t.records)/s)
			}
		}
	}
	return line
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Bytes formats n bytes with binary units: "512 B", "1.5 KiB", "1.2 GiB".
func Bytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= 1024
		if f < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return ""
}
