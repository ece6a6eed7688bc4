package storage

import (
	"bytes"
	"io"
	"sync"
)

// CountDirSyncs counts the directory fsyncs of this package from now on:
// count returns them by directory; restore stops counting. Tests that call
// it do not run in parallel.
func CountDirSyncs() (count func() map[string]int, restore func()) {
	var mu sync.Mutex
	n := map[string]int{}
	dirSynced = func(dir string) {
		mu.Lock()
		n[dir]++
		mu.Unlock()
	}
	return func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			out := make(map[string]int, len(n))
			for k, v := range n {
				out[k] = v
			}
			return out
		}, func() {
			dirSynced = nil
		}
}

// PartBuffers reports the part buffers of s's pool: how many were ever
// made, their capacity in bytes, and the most in use at once.
func PartBuffers(s *S3) (made, bytes, peakInUse int64) {
	return s.parts.made.Load(), s.parts.bytes.Load(), s.parts.peakInUse.Load()
}

// OpenEnvelope is Encrypt's Get without a backend: data is the stored
// object under key (the envelope decoder's fuzz target).
func OpenEnvelope(ring *Keyring, key string, data []byte) (io.ReadCloser, error) {
	return openEnvelope(ring, key, io.NopCloser(bytes.NewReader(data)))
}
