package drill

import (
	"sync"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// Sample is the restore's progress at one moment of the restore phase:
// the records and bytes acknowledged by the drill target so far.
type Sample struct {
	// AtMs is the time since the start of the restore phase, in
	// milliseconds.
	AtMs int64 `json:"at_ms"`
	// Records and Bytes are cumulative: the records the target
	// acknowledged, and their bytes as produced (keys, values, header
	// keys and values; not the stored, compressed segment bytes).
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// Sampling of the restore's progress: a sample at most every
// sampleInterval (at the first acknowledged batch after it, so a restore
// that produces nothing for a while has no samples there: a restore of a
// few thousand records produces them in well under a second), and never
// more than maxSamples: when they are reached every other sample is dropped
// and the interval doubles, so a long restore keeps an even spread over its
// whole time (an hour's restore: a sample every 15 to 30 s). A sample at
// the start (0, 0) and one at the end are always kept.
const (
	sampleInterval = 10 * time.Millisecond
	maxSamples     = 240
)

// sampler is the drill's restore observer: it counts what the restore
// acknowledged (in total and per partition) and samples it over time. It
// passes every call on to next, the caller's observer (metrics, progress
// bars). Safe for concurrent use, as restorer.Observer requires.
type sampler struct {
	next restorer.Observer // nil: none

	mu       sync.Mutex
	start    time.Time
	interval time.Duration
	last     time.Time
	records  int64
	bytes    int64
	samples  []Sample
	parts    map[topicPartition]int64 // bytes per partition
}

type topicPartition struct {
	topic     string
	partition int32
}

var _ restorer.BytesObserver = (*sampler)(nil)

func newSampler(next restorer.Observer, start time.Time) *sampler {
	return &sampler{next: next, start: start, last: start, interval: sampleInterval,
		samples: []Sample{{}}, parts: map[topicPartition]int64{}}
}

func (s *sampler) RestoreStart(topic string, partition int32, records int64) {
	if s.next != nil {
		s.next.RestoreStart(topic, partition, records)
	}
}

func (s *sampler) Restored(topic string, partition int32, n int64) {
	if s.next != nil {
		s.next.Restored(topic, partition, n)
	}
}

func (s *sampler) RestoreEnd(topic string, partition int32, total int64) {
	if s.next != nil {
		s.next.RestoreEnd(topic, partition, total)
	}
}

func (s *sampler) PhaseDone(phase string, d time.Duration) {
	if s.next != nil {
		s.next.PhaseDone(phase, d)
	}
}

// RestoredBytes counts one acknowledged batch and samples the totals when
// the interval has passed since the last sample.
func (s *sampler) RestoredBytes(topic string, partition int32, records, bytes int64) {
	if bo, ok := s.next.(restorer.BytesObserver); ok {
		bo.RestoredBytes(topic, partition, records, bytes)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records += records
	s.bytes += bytes
	s.parts[topicPartition{topic, partition}] += bytes
	if now.Sub(s.last) < s.interval {
		return
	}
	s.last = now
	s.add(now)
}

// add appends the totals at now; the caller holds mu.
func (s *sampler) add(now time.Time) {
	if len(s.samples) >= maxSamples {
		// Keep the first and every other one after it: half as many,
		// twice as far apart.
		kept := s.samples[:1]
		for i := 2; i < len(s.samples); i += 2 {
			kept = append(kept, s.samples[i])
		}
		s.samples = kept
		s.interval *= 2
	}
	s.samples = append(s.samples, Sample{AtMs: now.Sub(s.start).Milliseconds(), Records: s.records, Bytes: s.bytes})
}

// finish adds the sample at the end of the restore (unless the last one is
// of this very millisecond) and returns the samples and the bytes per
// partition.
func (s *sampler) finish(end time.Time) ([]Sample, map[topicPartition]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.samples[len(s.samples)-1]
	if at := end.Sub(s.start).Milliseconds(); at > last.AtMs || last.Records != s.records {
		s.add(end)
	}
	return s.samples, s.parts
}
