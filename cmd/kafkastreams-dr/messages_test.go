package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refusedConfig is a config whose source cluster refuses connections
// (127.0.0.1:1) and gives up after 1s, so that a command that should have
// been refused before reaching it fails fast instead of passing unnoticed.
func refusedConfig(t *testing.T) string {
	t.Helper()
	return writeFile(t, "app.yaml", `application_id: order-processor
source:
  bootstrap_servers: [127.0.0.1:1]
  retry_timeout: 1s
  topics:
    include: [events]
storage:
  backend: filesystem
  path: `+t.TempDir()+`
`)
}

// TestNewUserMessages: what a new user typed wrong is named in words of
// the tool (the flag, the value, a valid example), exit 2, without Go's
// own error text.
func TestNewUserMessages(t *testing.T) {
	cfg := refusedConfig(t)
	silent := silentListener(t)
	silentCfg := faultConfig(t, []string{silent}, "")
	notDir := writeFile(t, "repo.txt", "a file, not a directory")
	locked := t.TempDir()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	writeFileIn(t, locked, "lock", fmt.Sprintf(`{"owner":"backup 20261201T120000.000Z-0a0b0c0d","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, now, now))
	lockedCfg := restoreConfig(t, []string{"127.0.0.1:1"}, locked)
	excludesAll := writeFile(t, "excludes.yaml", strings.Replace(goodConfig, "    include: [orders, \"order-processor-*-changelog\"]\n    exclude: [\"order-processor-*-repartition\"]",
		"    include: [clicks]\n    exclude: [clicks]", 1))
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  []string // substrings
		without []string // substrings stderr must not hold
	}{
		{name: "backup negative lock-wait", args: []string{"backup", "-c", cfg, "--lock-wait", "-5s"}, code: 2,
			stderr: []string{`Error: --lock-wait "-5s": a duration cannot be negative`, "like 30s", "0 refuses at once"}},
		{name: "restore negative lock-wait", args: []string{"restore", "-c", cfg, "--lock-wait", "-5s", "--dry-run"}, code: 2,
			stderr: []string{`Error: --lock-wait "-5s": a duration cannot be negative`, "like 30s"}},
		{name: "restore unknown compression", args: []string{"restore", "-c", cfg, "--compression", "brotli", "--dry-run"}, code: 2,
			stderr: []string{`invalid --compression: unknown restore compression "brotli": use none, gzip, snappy, lz4, zstd or source`}},
		{name: "topics negative timeout", args: []string{"topics", "-c", cfg, "--timeout", "-1s"}, code: 2,
			stderr: []string{`Error: --timeout "-1s": a duration cannot be negative`, "like 30s"}},
		{name: "topics zero timeout", args: []string{"topics", "-c", cfg, "--timeout", "0s"}, code: 2,
			stderr: []string{`Error: --timeout "0s": zero leaves no time at all`, "like 30s"}},
		{name: "topics timeout not a duration", args: []string{"topics", "-c", cfg, "--timeout", "abc"}, code: 2,
			stderr:  []string{`Error: --timeout "abc": not a duration (like 30s, 2m)`},
			without: []string{"time: invalid duration", "invalid argument"}},
		{name: "topics timeout says what timed out and the fix", args: []string{"topics", "-c", silentCfg, "--timeout", "1s"}, code: 1,
			stderr:  []string{"Error: source cluster " + silent + " did not answer within --timeout 1s (while reaching it)", "raise --timeout", "check source.bootstrap_servers"},
			without: []string{"context deadline exceeded"}},
		{name: "offsets with flags and no command points to its commands", args: []string{"offsets", "-c", cfg}, code: 2,
			stderr: []string{`Error: "offsets" needs a command before its flags`,
				"kafkastreams-dr offsets show -c " + cfg, "kafkastreams-dr offsets translate -c " + cfg},
			without: []string{"unknown shorthand flag"}},
		{name: "config with flags and no command points to validate", args: []string{"config", "--config", cfg}, code: 2,
			stderr:  []string{`Error: "config" needs a command before its flags`, "kafkastreams-dr config validate --config " + cfg},
			without: []string{"unknown flag"}},
		{name: "state with flags and no command points to its commands", args: []string{"state", "-c", cfg}, code: 2,
			stderr: []string{`Error: "state" needs a command before its flags`, "run kafkastreams-dr state check -c " + cfg},
			// state wipe has no -c: a hint naming it with -c would not run.
			without: []string{"unknown shorthand flag", "state wipe -c"}},
		// Regression (second new-user pass): the hint was "state check -c
		// FILE", which fails: --state-dir is required too.
		{name: "state hint adds the required flags not given", args: []string{"state", "-c", cfg}, code: 2,
			stderr: []string{"run kafkastreams-dr state check -c " + cfg + " --state-dir DIR", "DIR: the instance's state.dir"}},
		// Regression: "state" alone hinted "state wipe -c FILE", which has no -c.
		{name: "state alone names each command's required flags", args: []string{"state"}, code: 2,
			stderr:  []string{"kafkastreams-dr state check -c FILE --state-dir DIR", "kafkastreams-dr state wipe --application-id APP --state-dir DIR"},
			without: []string{"state wipe -c"}},
		{name: "offsets alone hints -c FILE", args: []string{"offsets"}, code: 2,
			stderr: []string{"run kafkastreams-dr offsets show -c FILE, or kafkastreams-dr offsets translate -c FILE"}},
		{name: "state hint with --state-dir names what each command still needs", args: []string{"state", "--state-dir", "instance-state"}, code: 2,
			stderr: []string{"kafkastreams-dr state check --state-dir instance-state -c FILE", "kafkastreams-dr state wipe --state-dir instance-state --application-id APP",
				"APP: the application.id"}},
		{name: "push-gateway that does not parse is echoed", args: []string{"--push-gateway", "http://push gateway:9091", "config", "validate", "-c", cfg}, code: 2,
			stderr:  []string{`invalid --push-gateway "http://push gateway:9091": not a Pushgateway URL`},
			without: []string{"(unparsable URL)"}},
		{name: "push-gateway that does not parse keeps its password out", args: []string{"--push-gateway", "http://ops:s3cret@push gateway:9091", "config", "validate", "-c", cfg}, code: 2,
			stderr:  []string{`invalid --push-gateway "http://ops:xxxxx@push gateway:9091"`},
			without: []string{"s3cret", "(unparsable URL)"}},
		{name: "backup --embedded --out a file", args: []string{"backup", "--embedded", "--out", notDir}, code: 2,
			stderr:  []string{"Error: --out " + notDir + " is a file, not a directory", "--out DIR"},
			without: []string{"open "}},
		{name: "backup --embedded --out under a file", args: []string{"backup", "--embedded", "--out", filepath.Join(notDir, "repo")}, code: 2,
			stderr:  []string{"Error: --out " + filepath.Join(notDir, "repo") + ": " + notDir + " is a file, not a directory", "--out DIR"},
			without: []string{"open "}},
		{name: "a held lock names its holder and the lock's path", args: []string{"prune", "-c", lockedCfg, "--keep-last", "1"}, code: 11,
			stderr:  []string{"repository is locked: " + filepath.Join(locked, "lock") + " is held by backup 20261201T120000.000Z-0a0b0c0d (host other-host, pid 1"},
			without: []string{"(lock)"}},
		{name: "config validate refuses an exclude that removes every include", args: []string{"config", "validate", "-c", excludesAll}, code: 2,
			stderr: []string{`source.topics.exclude[0] "clicks" removes every included topic (source.topics.include [clicks])`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runBounded(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.without {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr contains %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestDurationFlagsKeepTheirZero: 0 stays valid where it means something
// (--lock-wait 0 refuses at once), and a flag left out keeps its default.
func TestDurationFlagsKeepTheirZero(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()
	var b *backupOptions
	parseOnly(t, newBackupCmd(g, s, func(_ context.Context, o *backupOptions, _ *iostreams) error { b = o; return nil }), "-c", "app.yaml", "--lock-wait", "0")
	if b.LockWait != 0 {
		t.Errorf("backup --lock-wait 0: LockWait = %v, want 0", b.LockWait)
	}
	var r *restoreOptions
	parseOnly(t, newRestoreCmd(g, s, func(_ context.Context, o *restoreOptions, _ *iostreams) error { r = o; return nil }), "-c", "app.yaml", "--lock-wait", "90s")
	if r.LockWait != 90*time.Second {
		t.Errorf("restore --lock-wait 90s: LockWait = %v, want 1m30s", r.LockWait)
	}
	b = nil
	parseOnly(t, newBackupCmd(g, s, func(_ context.Context, o *backupOptions, _ *iostreams) error { b = o; return nil }), "-c", "app.yaml")
	if b.LockWait != 3*time.Minute {
		t.Errorf("backup without --lock-wait: LockWait = %v, want 3m", b.LockWait)
	}
}

// TestInterruptedCommandsSayWhatNext: a backup interrupted (SIGINT,
// SIGTERM: the root context cancelled) says, as an interrupted restore
// does, that running it again resumes it; not just "Error: interrupted".
func TestInterruptedCommandsSayWhatNext(t *testing.T) {
	cfg := refusedConfig(t)
	out := filepath.Join(t.TempDir(), "kdr-quickstart")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "-c", cfg}, "run the same command again: the backup resumes where it stopped"},
		{[]string{"restore", "-c", cfg, "--target-bootstrap-servers", "127.0.0.1:1", "--yes"}, "run the same command again: the restore resumes where it stopped"},
		{[]string{"backup", "--embedded", "--out", out}, "the embedded cluster ended with the run: remove " + out + " and run the same command again"},
	} {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			s, _, errOut := testStreams()
			err := run(ctx, tt.args, s)
			if code := exitCode(ctx, err); code != exitCancelled {
				t.Errorf("exit %d, want %d", code, exitCancelled)
			}
			if !strings.Contains(errOut.String(), "Error: interrupted\n"+tt.want) {
				t.Errorf("stderr does not say %q after the error:\n%s", tt.want, errOut.String())
			}
		})
	}
}

// TestExcludeThatRemovesEveryMatchIsNamed: when the include patterns
// match topics and the excludes remove all of them, backup and topics say
// so, naming the exclude pattern, instead of "the include patterns match
// no topic that can be backed up" (config validate refuses what the file
// alone shows: TestExcludeThatRemovesEveryInclude).
func TestExcludeThatRemovesEveryMatchIsNamed(t *testing.T) {
	addrs := startCluster(t, map[string]string{"clicks": ""})
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: ["click*"]
    exclude: ["clicks"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(addrs, ", "), t.TempDir()))
	for _, args := range [][]string{{"backup", "-c", cfg}, {"topics", "-c", cfg}} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := runBounded(t, append([]string{"--log-level", "error"}, args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, `; in source.topics.exclude, pattern "clicks" removes clicks`) {
				t.Errorf("stderr does not name the exclude pattern:\n%s", stderr)
			}
		})
	}
}

// TestOffsetsTranslateRefusalIsNotARestore: offsets translate --to-time
// of a backup with changelogs said "restore refused: ...", but it restores
// nothing: the refusal names offsets translate, and the hint is a command
// that runs as printed.
func TestOffsetsTranslateRefusalIsNotARestore(t *testing.T) {
	cfg := restoreConfig(t, startCluster(t, nil), embeddedRepository(t))
	const at = "2024-05-01T12:00:00Z"
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"changelog strategy", []string{"offsets", "translate", "-c", cfg, "--to-time", at},
			[]string{"Error: offsets translate refused, as a restore with the same flags would be: point-in-time restore (--to-time)", "kafkastreams-dr restore -c " + cfg + " --dry-run --strategy rebuild --to-time " + at + "\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runBounded(t, append([]string{"--log-level", "error"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "restore refused") {
				t.Errorf("stderr calls it a restore:\n%s", stderr)
			}
			// The hint runs as printed (no argument in it needs quoting).
			_, hint, _ := strings.Cut(stderr, "kafkastreams-dr ")
			hint, _, _ = strings.Cut(hint, "\n")
			if code, stdout, stderr := runBounded(t, append([]string{"--log-level", "error"}, strings.Fields(hint)...)...); code != exitOK {
				t.Errorf("the hint %q: exit %d\n%s\n%s", hint, code, stdout, stderr)
			}
		})
	}
	// Under rebuild the sample's source-topic changelog (customers) is an
	// input and is cut like one (issue 12; it was refused).
	if code, stdout, stderr := runBounded(t, "--log-level", "error", "offsets", "translate", "-c", cfg, "--strategy", "rebuild", "--to-time", at); code != exitOK {
		t.Errorf("offsets translate --strategy rebuild --to-time: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
