package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

var (
	_ backup.Observer   = (*BackupObserver)(nil)
	_ restorer.Observer = (*RestoreObserver)(nil)
)

// syncBuffer is a bytes.Buffer safe for mpb's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// hasControl reports whether s holds a control character other than a
// newline (\r, ESC, ...).
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f })
}

func feedBackup(t *Tracker) {
	o := t.BackupObserver()
	o.Planned("orders", 0, 0, 1000)
	o.Planned("orders", 1, 0, 1000)
	o.Planned("totals", 0, 5, 10)
	o.Copied("orders", 0, 500, 50_000, 500)
	o.Copied("orders", 1, 1000, 100_000, 1000)
	o.Copied("totals", 0, 4, 40, 10) // a hole: 5 offsets, 4 records
	o.SegmentStored("orders", 0, 10_000, 50_000)
	o.SegmentStored("orders", 1, 20_000, 100_000)
	o.SegmentStored("totals", 0, 100, 40)
	o.Retried("fetch")
	o.PhaseDone("copy", time.Second)
}

func TestNoTerminalOneSummaryLine(t *testing.T) {
	var out syncBuffer
	tr := New(&out, false, "backup", nil)
	tr.start = tr.start.Add(-2 * time.Second)
	feedBackup(tr)
	if out.String() != "" {
		t.Fatalf("without a terminal the tracker wrote before the end: %q", out.String())
	}
	o := tr.BackupObserver()
	o.Copied("orders", 0, 500, 50_000, 1000)
	tr.Finish("20240501T120000.000Z-1a2b3c4d", Done)
	tr.Finish("again", Failed) // ignored
	got := out.String()
	if hasControl(got) || strings.Count(got, "\n") != 1 {
		t.Fatalf("want one line without control characters, got %q", got)
	}
	for _, w := range []string{"backup 20240501T120000.000Z-1a2b3c4d: 2 topics, 3 partitions with new records (in-flight tails included), 2004 records, 195.4 KiB read, 29.4 KiB stored in 3 segments in 2s (97.7 KiB/s)"} {
		if !strings.Contains(got, w) {
			t.Errorf("summary %q does not contain %q", got, w)
		}
	}
}

func TestSummaryOutcomes(t *testing.T) {
	for _, tc := range []struct {
		verb    string
		outcome Outcome
		want    string
	}{
		{"backup", Failed, "backup failed after 1.5s: 2 topics, 3 partitions with new records (in-flight tails included), 1504 records, 146.5 KiB read, 29.4 KiB stored in 3 segments"},
		{"backup", Interrupted, "backup interrupted after 1.5s: 2 topics"},
		{"backup", Partial, "backup B partial: 2 topics"},
		{"restore", Refused, "restore refused after 1.5s: 0 topics, 0 partitions, 0 records"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			tr := New(new(bytes.Buffer), false, tc.verb, nil)
			now := tr.start.Add(1500 * time.Millisecond)
			tr.now = func() time.Time { return now }
			if tc.verb == "backup" {
				feedBackup(tr)
			}
			got := tr.Summary("B", tc.outcome)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("summary %q, want it to start with %q", got, tc.want)
			}
			if tc.outcome != Done && tc.outcome != Partial && strings.Contains(got, "/s)") {
				t.Errorf("a run that did not finish shows a rate: %q", got)
			}
		})
	}
}

func TestRestoreSummary(t *testing.T) {
	var out bytes.Buffer
	tr := New(&out, false, "restore", nil)
	now := tr.start.Add(2 * time.Second)
	tr.now = func() time.Time { return now }
	o := tr.RestoreObserver()
	o.RestoreStart("orders", 0, 100)
	o.Restored("orders", 0, 60)
	o.RestoreStart("orders", 1, 40)
	o.Restored("orders", 0, 40)
	o.Restored("orders", 1, 40)
	o.RestoreEnd("orders", 0, 100)
	o.RestoreEnd("orders", 1, 40)
	tr.Finish("r-1", Done)
	if got, want := out.String(), "restore r-1: 1 topic, 2 partitions, 140 records in 2s (70 records/s)\n"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// TestTerminalBars: on a terminal every topic gets a bar with its counts,
// log lines written meanwhile are kept, and the summary comes last.
func TestTerminalBars(t *testing.T) {
	var out syncBuffer
	logs := NewWriter(&out)
	tr := New(&out, true, "backup", logs)
	feedBackup(tr)
	logs.Write([]byte("level=INFO msg=\"a log line\"\n"))
	time.Sleep(300 * time.Millisecond) // one refresh
	tr.Finish("B", Done)
	got := out.String()
	for _, w := range []string{"orders", "totals", "1500/2000 offsets", "1500 records", "5/5 offsets", "ETA", "a log line"} {
		if !strings.Contains(got, w) {
			t.Errorf("terminal output does not contain %q:\n%q", w, got)
		}
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "backup B: 2 topics") {
		t.Errorf("last line %q is not the summary", last)
	}
	// After the bars, logs go straight to the writer again.
	logs.Write([]byte("after\n"))
	if !strings.HasSuffix(out.String(), "after\n") {
		t.Errorf("a log line after Finish was not written through")
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
