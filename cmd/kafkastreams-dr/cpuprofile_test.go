package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hidden --cpuprofile FILE (for make bench) writes a Go CPU profile
// (gzipped protobuf) of the command when it ends; a file that cannot be
// created is a usage error naming the flag; --help does not list it.
func TestCPUProfileFlag(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	if code, _, stderr := runCLI(t, "--cpuprofile", prof, "version"); code != 0 {
		t.Fatalf("version --cpuprofile: exit %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatalf("no profile written: %v", err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("profile starts % x, want gzip's 1f 8b (pprof's format)", b[:min(4, len(b))])
	}

	code, _, stderr := runCLI(t, "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof"), "version")
	if code != exitUsage || !strings.Contains(stderr, "--cpuprofile") {
		t.Errorf("--cpuprofile into a missing directory: exit %d, stderr %q; want %d naming --cpuprofile", code, stderr, exitUsage)
	}

	if _, stdout, _ := runCLI(t, "--help"); strings.Contains(stdout, "cpuprofile") {
		t.Errorf("--help lists the hidden --cpuprofile:\n%s", stdout)
	}
}
