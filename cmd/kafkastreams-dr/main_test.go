package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
)

// testStreams returns streams writing to buffers.
func testStreams() (*iostreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

// runCLI runs the real command tree and returns the exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	s, out, errOut := testStreams()
	ctx := t.Context()
	err := run(ctx, args, s)
	return exitCode(ctx, err), out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConfig = `application_id: order-processor
source:
  bootstrap_servers: [kafka:9092]
  topics:
    include: [orders, "order-processor-*-changelog"]
    exclude: ["order-processor-*-repartition"]
storage:
  backend: filesystem
  path: /tmp/backups
`

// parseOnly executes cmd with args; runF stops before anything runs.
func parseOnly(t *testing.T, cmd *cobra.Command, args ...string) {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("execute %q: %v", args, err)
	}
}

func TestFlagParsing(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()

	t.Run("backup", func(t *testing.T) {
		var got *backupOptions
		cmd := newBackupCmd(g, s, func(_ context.Context, o *backupOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "-c", "app.yaml", "--json")
		if got == nil || got.ConfigFile != "app.yaml" || !got.JSON || got.Logger == nil {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("backup long flag", func(t *testing.T) {
		var got *backupOptions
		cmd := newBackupCmd(g, s, func(_ context.Context, o *backupOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "--config=app.yaml")
		want := &backupOptions{ConfigFile: "app.yaml", Out: "./kdr-quickstart", LockWait: 3 * time.Minute, shardFlags: shardFlags{wait: backup.DefaultShardWait}, Logger: got.Logger}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("options = %+v, want %+v", got, want)
		}
	})
	t.Run("topics", func(t *testing.T) {
		var got *topicsOptions
		cmd := newTopicsCmd(g, s, func(_ context.Context, o *topicsOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "-c", "app.yaml", "--json", "--timeout", "5s")
		if got == nil || got.ConfigFile != "app.yaml" || !got.JSON || got.Timeout != 5*time.Second {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("topics default timeout", func(t *testing.T) {
		var got *topicsOptions
		cmd := newTopicsCmd(g, s, func(_ context.Context, o *topicsOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "-c", "app.yaml")
		if got.JSON || got.Timeout != 0 { // no overall limit: source.retry_timeout bounds each call
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("config validate", func(t *testing.T) {
		var got *configValidateOptions
		cmd := newConfigCmd(g, s, func(_ context.Context, o *configValidateOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "validate", "-c", "app.yaml")
		if got == nil || got.ConfigFile != "app.yaml" {
			t.Errorf("options = %+v", got)
		}
	})
}

func TestExitCodes(t *testing.T) {
	good := writeFile(t, "good.yaml", goodConfig)
	bad := writeFile(t, "bad.yaml", strings.Replace(goodConfig, "  path: /tmp/backups\n", "  bukket: x\n", 1))
	noApp := writeFile(t, "noapp.yaml", strings.Replace(goodConfig, "application_id: order-processor\n", "", 1))
	badPassword := writeFile(t, "pw.yaml", strings.Replace(goodConfig, "  topics:",
		"  security:\n    sasl: {mechanism: SCRAM-SHA-512, username: u, password_file: /nonexistent/pw}\n  topics:", 1))
	registry := writeFile(t, "registry.yaml", goodConfig+"schema_registry: {}\n")
	badRegistry := writeFile(t, "badregistry.yaml", goodConfig+"schema_registry:\n  topic: __schemas\n")
	notPEM := writeFile(t, "ca.pem", "not a certificate")
	badFiles := writeFile(t, "files.yaml", strings.Replace(strings.Replace(goodConfig, "  topics:",
		"  security:\n    tls:\n      ca_file: "+notPEM+"\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password_file: /nonexistent/pw\n  topics:", 1),
		"[kafka:9092]", "[kafka]", 1))

	badCA := writeFile(t, "ca.yaml", strings.Replace(goodConfig, "  topics:",
		"  security:\n    tls:\n      ca_file: "+notPEM+"\n  topics:", 1))
	badTargetPassword := writeFile(t, "targetpw.yaml", strings.Replace(goodConfig, "/tmp/backups", t.TempDir(), 1)+
		"target:\n  bootstrap_servers: [kafka2:9092]\n  security:\n    sasl: {mechanism: PLAIN, username: u, password_file: /nonexistent/pw}\n")

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings
		stderr     []string
		usageShown bool
	}{
		{name: "validate good config", args: []string{"config", "validate", "-c", good}, code: 0,
			stdout: []string{"config OK", "order-processor", "/tmp/backups"}},
		{name: "validate names the schema registry topic, _schemas by default", args: []string{"config", "validate", "-c", registry}, code: 0,
			stdout: []string{"config OK", "schema registry topic _schemas (backed up, restored first)"}},
		{name: "validate refuses a broker-internal schema registry topic", args: []string{"config", "validate", "-c", badRegistry}, code: 2,
			stderr: []string{`schema_registry.topic "__schemas" is a broker-internal topic name`}},
		{name: "validate warns about missing application_id", args: []string{"config", "validate", "--config", noApp}, code: 0,
			stdout: []string{"config OK"}, stderr: []string{"warning: application_id is not set"}},
		{name: "validate bad config exits 2 naming key and line", args: []string{"config", "validate", "-c", bad}, code: 2,
			stderr: []string{"Error: ", "storage.path is required when storage.backend is filesystem", "unknown key storage.bukket", "line 9"}},
		{name: "validate unreadable password file exits 2 naming the file", args: []string{"config", "validate", "-c", badPassword}, code: 2,
			stderr: []string{"/nonexistent/pw", "source.security"}},
		{name: "validate reports every problem: bad server, CA file and password file", args: []string{"config", "validate", "-c", badFiles}, code: 2,
			stderr: []string{"3 problems", `source.bootstrap_servers[0]: "kafka" has no port: write host:port, e.g. kafka:9092 (line 3)`,
				"source.security.tls.ca_file: " + notPEM + " holds no PEM certificate (line 6)",
				"source.security.sasl.password_file: cannot read /nonexistent/pw: no such file or directory (line 10)"}},
		{name: "validate missing file exits 2", args: []string{"config", "validate", "-c", filepath.Join(t.TempDir(), "nope.yaml")}, code: 2,
			stderr: []string{"Error: read config", "nope.yaml"}},
		{name: "validate without -c is a usage error", args: []string{"config", "validate"}, code: 2,
			stderr: []string{"Error: no config file", "Usage:"}, usageShown: true},
		// backup said "source.security: TLS CA file: ..." without the key
		// and line that config validate names (new-user finding).
		{name: "backup with an unreadable CA file names its key and line", args: []string{"backup", "-c", badCA}, code: 2,
			stderr: []string{"source.security.tls.ca_file: " + notPEM + " holds no PEM certificate (line 6)"}},
		{name: "restore with an unreadable target password file names its key and line", args: []string{"restore", "-c", badTargetPassword, "--backup-id", "latest"}, code: 2,
			stderr: []string{"target.security.sasl.password_file: cannot read /nonexistent/pw: no such file or directory (line "}},
		{name: "backup with bad config exits 2", args: []string{"backup", "-c", bad}, code: 2,
			stderr: []string{"Error: ", "unknown key storage.bukket"}},
		{name: "topics with bad config exits 2", args: []string{"topics", "-c", bad}, code: 2,
			stderr: []string{"unknown key storage.bukket"}},
		{name: "unknown flag exits 2 with usage", args: []string{"backup", "--nope"}, code: 2,
			stderr: []string{"Error: unknown flag: --nope", "Usage:"}, usageShown: true},
		{name: "unknown command exits 2", args: []string{"bogus"}, code: 2,
			stderr: []string{`Error: unknown command "bogus"`, "Usage:"}, usageShown: true},
		{name: "unknown config subcommand exits 2", args: []string{"config", "bogus"}, code: 2,
			stderr: []string{`unknown command "bogus"`}, usageShown: true},
		{name: "extra argument exits 2", args: []string{"backup", "-c", good, "extra"}, code: 2,
			stderr: []string{"Error: unknown command", "Usage:"}, usageShown: true},
		{name: "bad log level exits 2", args: []string{"--log-level", "loud", "config", "validate", "-c", good}, code: 2,
			stderr: []string{"invalid --log-level"}, usageShown: true},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"kafkastreams-dr dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q does not contain %q", stdout, w)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			if got := strings.Count(stderr, "Error:"); tt.code != 0 && got != 1 {
				t.Errorf("stderr has %d \"Error:\" lines, want 1:\n%s", got, stderr)
			}
			if shown := strings.Contains(stderr, "Usage:"); shown != tt.usageShown {
				t.Errorf("usage shown = %v, want %v:\n%s", shown, tt.usageShown, stderr)
			}
		})
	}
}

func TestHelpListsExitStatus(t *testing.T) {
	for _, args := range [][]string{
		{"--help"},
		{"backup", "--help"},
		{"topics", "--help"},
		{"config", "--help"},
		{"config", "validate", "--help"},
		{"version", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, _ := runCLI(t, args...)
			if code != 0 {
				t.Errorf("exit code = %d", code)
			}
			for _, w := range []string{"EXIT STATUS", "130", "Usage:"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not contain %q:\n%s", w, stdout)
				}
			}
			if args[0] == "backup" || args[0] == "topics" || len(args) == 3 {
				for _, w := range []string{"--config", "storage", "source."} {
					if !strings.Contains(stdout, w) {
						t.Errorf("help does not contain %q:\n%s", w, stdout)
					}
				}
			}
		})
	}
}

func TestExitCodeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got := exitCode(ctx, context.Canceled); got != exitCancelled {
		t.Errorf("exitCode = %d, want %d", got, exitCancelled)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRepositoryCommandsPrintOnlyStorageWarnings: list, describe, prune
// and offsets read the repository only; list printed the config's warning
// about source.retry_timeout, a cluster it never contacts (new-user
// finding). They print the warnings about storage; backup prints both.
func TestRepositoryCommandsPrintOnlyStorageWarnings(t *testing.T) {
	cfg := writeFile(t, "app.yaml", strings.Replace(strings.Replace(goodConfig, "/tmp/backups", t.TempDir(), 1),
		"  topics:", "  retry_timeout: 5s\n  topics:", 1)+"  bucket: ignored\n")
	const clusterWarning, storageWarning = "source.retry_timeout 5s is not longer", "storage.bucket does not apply to the filesystem backend"
	for _, args := range [][]string{{"list", "-c", cfg}, {"prune", "-c", cfg, "--dry-run", "--keep-last", "1"}} {
		_, _, stderr := runCLI(t, args...)
		if strings.Contains(stderr, clusterWarning) || !strings.Contains(stderr, storageWarning) {
			t.Errorf("%v: stderr:\n%s\nwant the storage warning %q and not the cluster warning %q", args, stderr, storageWarning, clusterWarning)
		}
	}
	_, _, stderr := runCLI(t, "config", "validate", "-c", cfg)
	if !strings.Contains(stderr, clusterWarning) || !strings.Contains(stderr, storageWarning) {
		t.Errorf("config validate: stderr:\n%s\nwant both warnings", stderr)
	}
}
