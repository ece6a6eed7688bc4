package config

import (
	"strings"
	"testing"
	"time"
)

// TestDrillApp: drill.app.command is a shell string kept as written
// ($VAR without braces is left for the shell), timeout and stop_grace
// default to 10m and 30s, and a drill.app without a command or with a bad
// duration is an error naming the key and its line.
func TestDrillApp(t *testing.T) {
	const base = `application_id: app
source:
  bootstrap_servers: [kafka:9092]
  topics:
    include: [orders]
storage:
  backend: filesystem
  path: /tmp/backups
`
	tests := []struct {
		name           string
		drill          string
		command        string
		timeout, grace time.Duration
		wantErr        string
	}{
		{"absent", "", "", DefaultDrillAppTimeout, DefaultDrillAppStopGrace, ""},
		{"command only", "drill:\n  app:\n    command: exec java -jar app.jar --bootstrap-servers \"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS\"\n",
			`exec java -jar app.jar --bootstrap-servers "$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"`, DefaultDrillAppTimeout, DefaultDrillAppStopGrace, ""},
		{"all set", "drill:\n  app:\n    command: ./start.sh\n    timeout: 3m\n    stop_grace: 5s\n", "./start.sh", 3 * time.Minute, 5 * time.Second, ""},
		{"no command", "drill:\n  app:\n    timeout: 3m\n", "", 0, 0, "drill.app.command is required with drill.app"},
		{"stop grace without a command", "drill:\n  app:\n    stop_grace: 5s\n", "", 0, 0, "drill.app.command is required with drill.app"},
		{"empty command", "drill:\n  app:\n    command: \"  \"\n", "", 0, 0, "drill.app.command is required with drill.app"},
		{"bad timeout", "drill:\n  app:\n    command: ./start.sh\n    timeout: soon\n", "", 0, 0, "drill.app.timeout must be a duration"},
		{"unknown key", "drill:\n  app:\n    cmd: ./start.sh\n", "", 0, 0, "drill.app.cmd"},
		{"braced drill variable", "drill:\n  app:\n    command: run --bootstrap ${KAFKASTREAMS_DR_BOOTSTRAP_SERVERS}\n", "", 0, 0,
			"write $KAFKASTREAMS_DR_BOOTSTRAP_SERVERS without braces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(base+tt.drill), "t.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "line ") {
					t.Fatalf("err = %v, want %q with its line", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := c.Drill.App; a.Command != tt.command || a.Timeout != tt.timeout || a.StopGrace != tt.grace {
				t.Errorf("drill.app = %+v, want command %q, timeout %s, stop_grace %s", a, tt.command, tt.timeout, tt.grace)
			}
		})
	}
}
