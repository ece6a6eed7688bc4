package drill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCommand: the first word of a plain application command (after
// exec and variable assignments) must be an executable file, found on
// PATH when it has no slash, as /bin/sh would run it; a command with
// shell syntax is left to the shell. A new user's --app-command /tmp ran
// the backup, the restore and the verify before failing with exit 126.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "start.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, command, wantErr string
	}{
		{"a directory", dir, dir + " is a directory"},
		{"a directory after exec", "exec " + dir + " --x", dir + " is a directory"},
		{"not on PATH", "kdr-no-such-command --bootstrap-servers \"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS\"", "kdr-no-such-command is not found on PATH"},
		{"no such file", filepath.Join(dir, "nope") + " --x", filepath.Join(dir, "nope") + " does not exist"},
		{"not executable", notExec, notExec + " is not executable"},
		{"not executable after an assignment", "JAVA_OPTS=-Xmx1g " + notExec, notExec + " is not executable"},
		{"an executable file", script + " --x", ""},
		{"on PATH after exec", "exec sh -c true", ""},
		{"a builtin", "cd " + dir, ""},
		{"shell syntax is the shell's", "cd " + dir + " && kdr-no-such-command", ""},
		{"a variable is the shell's", "$APP_HOME/bin/start", ""},
		{"quotes are the shell's", "'" + dir + "' --x", ""},
		{"a subshell is the shell's", "(kdr-no-such-command)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCommand(tt.command)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckCommand(%q) = %v, want nil", tt.command, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckCommand(%q) = %v, want one containing %q", tt.command, err, tt.wantErr)
			}
		})
	}
}
