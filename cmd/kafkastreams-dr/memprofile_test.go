package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hidden --memprofile FILE (for profiling a run's memory) writes a Go
// heap profile (gzipped protobuf) of the command's largest heap in use
// when it ends; a file that cannot be created is a usage error naming the
// flag; --help does not list it.
func TestMemProfileFlag(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "mem.pprof")
	if code, _, stderr := runCLI(t, "--memprofile", prof, "version"); code != 0 {
		t.Fatalf("version --memprofile: exit %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatalf("no profile written: %v", err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("profile starts % x, want gzip's 1f 8b (pprof's format)", b[:min(4, len(b))])
	}

	code, _, stderr := runCLI(t, "--memprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "mem.pprof"), "version")
	if code != exitUsage || !strings.Contains(stderr, "--memprofile") {
		t.Errorf("--memprofile into a missing directory: exit %d, stderr %q; want %d naming --memprofile", code, stderr, exitUsage)
	}

	if _, stdout, _ := runCLI(t, "--help"); strings.Contains(stdout, "memprofile") {
		t.Errorf("--help lists the hidden --memprofile:\n%s", stdout)
	}
}
