package main

import (
	"strings"
	"testing"
)

// TestDrillAppTimeoutNeedsACommand is a second new-user fault of issue 12:
// drill --app-timeout 30s without --app-command (and without
// drill.app.command in the config) was silently ignored: the drill ended
// at restored and verified and measured no application. It is a usage
// error (exit 2) naming the missing flag and key, before anything is
// backed up or restored. (drill.app.timeout or drill.app.stop_grace
// without drill.app.command is a config error: TestDrillApp in
// internal/config.)
func TestDrillAppTimeoutNeedsACommand(t *testing.T) {
	repo := t.TempDir()
	// Loopback ports nobody listens on: the refusal comes before any
	// connection.
	cfg := writeFile(t, "app.yaml", `application_id: order-processor
source:
  bootstrap_servers: [127.0.0.1:1]
  topics:
    include: [orders]
target:
  bootstrap_servers: [127.0.0.1:2]
storage:
  backend: filesystem
  path: `+repo+`
`)
	code, stdout, stderr := runCLI(t, "drill", "-c", cfg, "--app-timeout", "30s")
	if code != 2 || !strings.Contains(stderr, "--app-timeout") || !strings.Contains(stderr, "--app-command") || !strings.Contains(stderr, "drill.app.command") {
		t.Fatalf("drill --app-timeout without a command: exit %d, want 2 naming --app-command and drill.app.command\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("stack trace:\n%s", stderr)
	}
}
