package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnsAboutAReadableConfigWithAPlaintextPassword: a config file of
// mode 0644 holding a SASL password literal draws, on stderr, a warning
// naming the file, the key and chmod 600, from config validate and from
// a command that loads the config (backup, which then fails to reach a
// closed port); the password itself is printed nowhere. At mode 0600 the
// warning is gone.
func TestWarnsAboutAReadableConfigWithAPlaintextPassword(t *testing.T) {
	const password = "kdr-Perm-Pa55-0c9d"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	path := filepath.Join(t.TempDir(), "app.yaml")
	cfg := fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  retry_timeout: 1s
  security:
    sasl:
      mechanism: SCRAM-SHA-256
      username: backup
      password: %s
  topics:
    include: [orders]
storage:
  backend: filesystem
  path: %s
`, closed, password, t.TempDir())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	warning := "warning: " + path + " can be read by group and others (mode 0644) and holds source.security.sasl.password in plain text: run chmod 600 " + path
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o600, false}} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"config", "validate", "-c", path}, {"--log-level", "debug", "backup", "-c", path}} {
			code, stdout, stderr := runCLI(t, args...)
			if args[0] == "config" && code != exitOK || args[0] != "config" && code != exitError {
				t.Errorf("mode %04o %q: exit %d\nstdout:\n%s\nstderr:\n%s", tc.mode, args, code, stdout, stderr)
			}
			if got := strings.Contains(stderr, warning); got != tc.warn || strings.Count(stderr, "chmod 600") != strings.Count(stderr, warning) {
				t.Errorf("mode %04o %q: stderr holds %q: %v, want %v\n%s", tc.mode, args, warning, got, tc.warn, stderr)
			}
			if strings.Contains(stdout+stderr, password) {
				t.Errorf("mode %04o %q: the output holds the password:\n%s\n%s", tc.mode, args, stdout, stderr)
			}
		}
	}
}
