package main

import (
	"strings"
	"testing"
)

// TestRestoreDryRunFlagSaysWhatItChecks is a regression test (second
// new-user pass): the --dry-run flag text said "show the plan and run
// every check", but the dry run runs no segment pre-check (README and the
// long help say so). The flag text now says what it checks and what not.
func TestRestoreDryRunFlagSaysWhatItChecks(t *testing.T) {
	code, stdout, stderr := runCLI(t, "restore", "--help")
	if code != exitOK {
		t.Fatalf("restore --help: exit %d\n%s", code, stderr)
	}
	var line string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "--dry-run") && strings.HasPrefix(strings.TrimSpace(l), "--dry-run") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no --dry-run flag line in restore --help:\n%s", stdout)
	}
	if strings.Contains(line, "every check") {
		t.Errorf("--dry-run still claims every check: %q", line)
	}
	for _, want := range []string{"preflight", "no segment pre-check", "verify --deep", "write nothing"} {
		if !strings.Contains(line, want) {
			t.Errorf("--dry-run flag text %q does not say %q", line, want)
		}
	}
}
