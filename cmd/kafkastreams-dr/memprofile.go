package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// memProfileEvery is how often --memprofile samples the heap in use.
const memProfileEvery = 100 * time.Millisecond

// memProfiler writes the hidden --memprofile FILE: a Go heap profile
// (runtime/pprof "heap": inuse and alloc, space and objects) taken when
// the heap's objects (runtime/metrics /memory/classes/heap/objects:bytes,
// live and not yet swept) were at the largest seen, sampled every 100ms
// and once more at the end: what a process holds at its peak, not after
// the work is done. The in-use figures are pprof's: as of the last GC.
type memProfiler struct {
	file string
	stop chan struct{}
	done sync.WaitGroup

	mu   sync.Mutex
	peak uint64
	prof []byte // the profile at peak, written to file when the run ends
}

// startMemProfile starts --memprofile's sampler: a file that cannot be
// created is a usage error naming the flag.
func (g *globalOptions) startMemProfile() error {
	if g.MemProfile == "" || g.memProfile != nil {
		return nil
	}
	f, err := os.Create(g.MemProfile)
	if err != nil {
		return &usageError{fmt.Errorf("invalid --memprofile: %w", err)}
	}
	f.Close()
	m := &memProfiler{file: g.MemProfile, stop: make(chan struct{})}
	m.sample()
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		t := time.NewTicker(memProfileEvery)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
	g.memProfile = m
	return nil
}

// sample takes a heap profile when the heap in use is above the peak so far.
func (m *memProfiler) sample() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	m.mu.Lock()
	defer m.mu.Unlock()
	if live <= m.peak && m.prof != nil {
		return
	}
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		return
	}
	m.peak, m.prof = live, buf.Bytes()
}

// stopMemProfile writes --memprofile's profile at the peak, if one runs;
// a write that fails is reported on stderr (the command's own result
// stands).
func (g *globalOptions) stopMemProfile() {
	m := g.memProfile
	if m == nil {
		return
	}
	g.memProfile = nil
	close(m.stop)
	m.done.Wait()
	m.sample()
	if err := os.WriteFile(m.file, m.prof, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "kafkastreams-dr: --memprofile: %v\n", err)
	}
}
