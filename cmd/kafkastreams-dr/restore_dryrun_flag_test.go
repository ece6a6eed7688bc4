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

// TestSkipGroupConfigsFlag: restore and drill both offer
// --skip-group-configs (second new-user pass: a target refusing the
// backup's group configs had no restore-side way out), and restore's long
// help says when to use it.
func TestSkipGroupConfigsFlag(t *testing.T) {
	for _, cmd := range []string{"restore", "drill"} {
		code, stdout, stderr := runCLI(t, cmd, "--help")
		if code != exitOK || !strings.Contains(stdout, "--skip-group-configs") || !strings.Contains(stdout, "the offsets are still committed") {
			t.Errorf("%s --help: exit %d, want --skip-group-configs described\n%s\n%s", cmd, code, stdout, stderr)
		}
	}
	if _, stdout, _ := runCLI(t, "restore", "--help"); !strings.Contains(stdout, "group.streams.max.standby.replicas") {
		t.Errorf("restore --help does not say when --skip-group-configs is the way out:\n%s", stdout)
	}
}
