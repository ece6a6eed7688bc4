package drill

import (
	"testing"
	"time"
)

// TestSamplerIsBounded: however many batches a restore acknowledges, the
// sampler keeps at most maxSamples, the first at 0, evenly thinned, in
// order, and the last one (at finish) holds every record and byte; the
// bytes per partition add up.
func TestSamplerIsBounded(t *testing.T) {
	for _, batches := range []int{1, maxSamples - 1, maxSamples, 10 * maxSamples, 10000} {
		start := time.Now()
		s := newSampler(nil, start)
		s.interval = 0 // a sample at every batch: the bound is what is tested
		for i := range batches {
			s.RestoredBytes("orders", int32(i%3), 2, 10)
		}
		samples, parts := s.finish(time.Now())
		if len(samples) > maxSamples || len(samples) < 2 {
			t.Errorf("%d batches: %d samples, want 2..%d", batches, len(samples), maxSamples)
		}
		if samples[0] != (Sample{}) {
			t.Errorf("%d batches: first sample %+v, want zero", batches, samples[0])
		}
		last := samples[len(samples)-1]
		if last.Records != int64(2*batches) || last.Bytes != int64(10*batches) {
			t.Errorf("%d batches: last sample %+v, want %d records, %d bytes", batches, last, 2*batches, 10*batches)
		}
		for i := 1; i < len(samples); i++ {
			if samples[i].AtMs < samples[i-1].AtMs || samples[i].Records <= samples[i-1].Records && i < len(samples)-1 {
				t.Errorf("%d batches: sample %d %+v after %+v", batches, i, samples[i], samples[i-1])
			}
		}
		var bytes int64
		for _, b := range parts {
			bytes += b
		}
		if bytes != int64(10*batches) || (batches >= 3 && len(parts) != 3) {
			t.Errorf("%d batches: bytes per partition %v", batches, parts)
		}
	}
}
