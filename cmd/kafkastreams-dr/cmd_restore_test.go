package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

func TestRestoreFlagParsing(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()
	toTime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		args []string
		want restoreOptions // Logger is not compared
	}{
		{"defaults", []string{"-c", "app.yaml"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, From: "./kdr-quickstart"}},
		{"every flag", []string{"--config=app.yaml", "--backup-id", "20240501T120000.000Z-1a2b3c4d", "--strategy", "rebuild",
			"--to-time", "2024-05-01T14:00:00+02:00", "--topics", "orders,customers", "--topics", "~pay.{1,3}", "--replication-factor", "3",
			"--target-bootstrap-servers", "dr-1:9092,dr-2:9092", "--dry-run", "--yes", "--json", "--compression", "ZSTD"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "20240501T120000.000Z-1a2b3c4d", Strategy: restorer.StrategyRebuild, Compression: "zstd",
				ToTime: &toTime, Topics: []string{"orders", "customers", "~pay.{1,3}"}, ReplicationFactor: 3,
				TargetBootstrap: []string{"dr-1:9092", "dr-2:9092"}, DryRun: true, Yes: true, JSON: true, From: "./kdr-quickstart"}},
		{"epoch milliseconds and -y", []string{"-c", "app.yaml", "--to-time", "1714564800000", "-y"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, ToTime: &toTime, Yes: true, From: "./kdr-quickstart"}},
		{"--retention keep", []string{"-c", "app.yaml", "--retention", "keep"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, Retention: restorer.RetentionKeep, From: "./kdr-quickstart"}},
		{"--retention accept-loss", []string{"-c", "app.yaml", "--retention=ACCEPT-LOSS"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, Retention: restorer.RetentionAcceptLoss, From: "./kdr-quickstart"}},
		{"--allow-kafka-4-2", []string{"-c", "app.yaml", "--allow-kafka-4-2"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, AllowKafka42: true, From: "./kdr-quickstart"}},
		{"--precheck deep", []string{"-c", "app.yaml", "--precheck", "DEEP"},
			restoreOptions{ConfigFile: "app.yaml", BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, Precheck: restorer.PrecheckDeep, precheckGiven: true, From: "./kdr-quickstart"}},
		{"embedded", []string{"--embedded", "--from", "/tmp/repo", "--json"},
			restoreOptions{BackupID: "latest", Strategy: restorer.StrategyChangelog, Compression: restorer.CompressionSource, Embedded: true, From: "/tmp/repo", JSON: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *restoreOptions
			cmd := newRestoreCmd(g, s, func(_ context.Context, o *restoreOptions, _ *iostreams) error { got = o; return nil })
			parseOnly(t, cmd, tt.args...)
			if got == nil || got.Logger == nil {
				t.Fatalf("options = %+v, want a logger", got)
			}
			got.Logger = nil
			if got.ToTime != nil && tt.want.ToTime != nil && got.ToTime.Equal(*tt.want.ToTime) {
				got.ToTime = tt.want.ToTime
			}
			want := tt.want
			want.shardFlags.wait = backup.DefaultShardWait                 // --shard-wait's default, in every row
			want.Precheck = cmp.Or(want.Precheck, restorer.PrecheckDigest) // --precheck's default
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("options:\n got %+v\nwant %+v", *got, want)
			}
		})
	}
}

func TestOffsetsFlagParsing(t *testing.T) {
	g := &globalOptions{}
	s, _, _ := testStreams()
	t.Run("show", func(t *testing.T) {
		var got *offsetsShowOptions
		cmd := newOffsetsCmd(g, s, func(_ context.Context, o *offsetsShowOptions, _ *iostreams) error { got = o; return nil }, nil)
		parseOnly(t, cmd, "show", "-c", "app.yaml", "--backup-id", "20240501T120000.000Z-1a2b3c4d", "--json")
		if got == nil || got.ConfigFile != "app.yaml" || got.BackupID != "20240501T120000.000Z-1a2b3c4d" || !got.JSON {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("translate", func(t *testing.T) {
		var got *offsetsTranslateOptions
		cmd := newOffsetsCmd(g, s, nil, func(_ context.Context, o *offsetsTranslateOptions, _ *iostreams) error { got = o; return nil })
		parseOnly(t, cmd, "translate", "-c", "app.yaml", "--strategy", "rebuild", "--to-time", "1714564800000")
		if got == nil || got.BackupID != "latest" || got.Strategy != restorer.StrategyRebuild || got.ToTime == nil ||
			got.ToTime.UnixMilli() != 1714564800000 || got.JSON {
			t.Errorf("options = %+v", got)
		}
	})
}

func TestParseToTime(t *testing.T) {
	tests := []struct {
		in      string
		want    string // RFC 3339 in UTC; "" for no cut
		wantErr string
	}{
		{in: ""},
		{in: "2024-05-01T12:00:00Z", want: "2024-05-01T12:00:00Z"},
		{in: "2024-05-01T14:00:00+02:00", want: "2024-05-01T12:00:00Z"},
		{in: "2024-05-01T12:00:00.250Z", want: "2024-05-01T12:00:00.25Z"},
		{in: "1714564800000", want: "2024-05-01T12:00:00Z"},
		{in: "1714564800", wantErr: "looks like epoch seconds"},
		{in: "2024-05-01", wantErr: "want RFC 3339"},
		{in: "yesterday", wantErr: `invalid --to-time "yesterday"`},
		{in: "2024-05-01 12:00:00", wantErr: "epoch milliseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseToTime(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--to-time") {
					t.Fatalf("parseToTime(%q) = %v, %v; want an error naming --to-time with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := formatTime(got); s != tt.want {
				t.Errorf("parseToTime(%q) = %s, want %s", tt.in, s, tt.want)
			}
		})
	}
}

func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// TestRestoreUsageErrors: every bad flag or missing setting exits 2 before
// anything connects, naming the flag or key.
func TestRestoreUsageErrors(t *testing.T) {
	noTarget := writeFile(t, "app.yaml", goodConfig)
	tests := []struct {
		name       string
		args       []string
		stderr     []string
		usageShown bool
	}{
		{"no config", []string{"restore"}, []string{"no config file", "--embedded"}, true},
		{"bad --to-time", []string{"restore", "-c", noTarget, "--to-time", "tomorrow"}, []string{`invalid --to-time "tomorrow"`, "RFC 3339"}, true},
		{"bad --strategy", []string{"restore", "-c", noTarget, "--strategy", "standby"}, []string{`invalid --strategy "standby"`}, true},
		{"bad --backup-id", []string{"restore", "-c", noTarget, "--backup-id", "yesterday"}, []string{`invalid --backup-id "yesterday"`}, true},
		{"bad --replication-factor", []string{"restore", "-c", noTarget, "--replication-factor", "-1"}, []string{"invalid --replication-factor -1"}, true},
		{"bad --target-bootstrap-servers", []string{"restore", "-c", noTarget, "--target-bootstrap-servers", "kafka"}, []string{"--target-bootstrap-servers", `"kafka" is not host:port`}, true},
		{"bad --topics", []string{"restore", "-c", noTarget, "--topics", "~("}, []string{"--topics"}, true},
		{"bad --retention", []string{"restore", "-c", noTarget, "--retention", "forever"}, []string{`invalid argument "forever" for "--retention"`, "keep", "accept-loss"}, true},
		{"empty --retention", []string{"restore", "-c", noTarget, "--retention", ""}, []string{`"--retention"`, "want keep or accept-loss"}, true},
		{"--embedded with --config", []string{"restore", "--embedded", "-c", noTarget}, []string{"drop --config"}, true},
		{"--embedded with --strategy", []string{"restore", "--embedded", "--strategy", "rebuild"}, []string{"--strategy does not go with --embedded"}, true},
		{"--embedded with --compression", []string{"restore", "--embedded", "--compression", "zstd"}, []string{"--compression does not go with --embedded"}, true},
		{"bad --compression", []string{"restore", "-c", noTarget, "--compression", "brotli"}, []string{`invalid --compression: unknown restore compression "brotli"`, "none, gzip, snappy, lz4, zstd or source"}, true},
		{"bad --precheck", []string{"restore", "-c", noTarget, "--precheck", "full"}, []string{`invalid --precheck: unknown pre-check "full"`, "use digest", "or deep"}, true},
		{"empty --precheck", []string{"restore", "-c", noTarget, "--precheck", ""}, []string{`invalid --precheck`, "use digest", "or deep"}, true},
		{"--from without --embedded", []string{"restore", "-c", noTarget, "--from", "x"}, []string{"--from goes with --embedded"}, true},
		{"no target cluster", []string{"restore", "-c", noTarget, "--yes"},
			[]string{"no target cluster", "target.bootstrap_servers", noTarget, "--target-bootstrap-servers"}, false},
		{"not a terminal and no --yes", []string{"restore", "-c", noTarget, "--target-bootstrap-servers", "127.0.0.1:1"},
			[]string{"needs a confirmation", "stdin is not a terminal", "pass --yes", "--dry-run"}, false},
		{"offsets without subcommand", []string{"offsets"}, []string{"missing command"}, true},
		{"offsets translate bad --to-time", []string{"offsets", "translate", "-c", noTarget, "--to-time", "x"}, []string{"invalid --to-time"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want 2\nstderr: %s", code, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			if shown := strings.Contains(stderr, "Usage:"); shown != tt.usageShown {
				t.Errorf("usage shown = %v, want %v:\n%s", shown, tt.usageShown, stderr)
			}
		})
	}
}

// restoreConfig writes a config whose target is target and whose
// repository is repo.
func restoreConfig(t *testing.T, target []string, repo string) string {
	t.Helper()
	return writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [lost-kafka:9092]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, strings.Join(target, ", "), repo))
}

// fakeRestorer records the restorer.Options of every call and returns the
// report (with DryRun, its plan only) or err.
type fakeRestorer struct {
	calls []restorer.Options
	rep   *restorer.Report
	err   error
}

func (f *fakeRestorer) run(_ context.Context, o restorer.Options) (*restorer.Report, error) {
	f.calls = append(f.calls, o)
	if f.err != nil {
		return nil, f.err
	}
	if o.DryRun {
		return &restorer.Report{Plan: f.rep.Plan}, nil
	}
	return f.rep, nil
}

// TestRestoreConfirmation: without --yes and --dry-run the restore asks on
// a terminal and refuses without one; the restorer is not called before
// the answer, and only planned until it is yes.
func TestRestoreConfirmation(t *testing.T) {
	cfg := restoreConfig(t, []string{"dr-kafka:9092"}, t.TempDir())
	tests := []struct {
		name      string
		tty       bool
		answer    string
		yes       bool
		dryRun    bool
		code      int
		calls     []bool // DryRun of each restorer call
		stdout    []string
		stderr    []string
		errSubstr string
	}{
		{name: "no terminal: refused, restorer never called", code: exitUsage, errSubstr: "stdin is not a terminal"},
		{name: "terminal, no answer", tty: true, answer: "", code: exitUsage, calls: []bool{true},
			stderr: []string{"restore plan for backup", "restore into dr-kafka:9092? [y/N]"}, errSubstr: "not confirmed"},
		{name: "terminal, answer n", tty: true, answer: "n\n", code: exitUsage, calls: []bool{true}, errSubstr: "nothing was written"},
		{name: "terminal, answer yes", tty: true, answer: "Yes\n", code: exitOK, calls: []bool{true, false},
			stdout: []string{"restore r-1 complete"}, stderr: []string{"TOPIC"}},
		{name: "--yes without terminal", yes: true, code: exitOK, calls: []bool{false}, stdout: []string{"restore r-1 complete"}},
		{name: "--dry-run without terminal", dryRun: true, code: exitOK, calls: []bool{true},
			stdout: []string{"restore plan for backup b-1", "dry run: nothing was written to dr-kafka:9092"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out, errOut := testStreams()
			s.InTTY = tt.tty
			s.In = strings.NewReader(tt.answer)
			fake := &fakeRestorer{rep: sampleReport()}
			o := &restoreOptions{ConfigFile: cfg, BackupID: "latest", Strategy: restorer.StrategyChangelog,
				Yes: tt.yes, DryRun: tt.dryRun, Logger: g0.Logger(), restore: fake.run}
			err := runRestore(t.Context(), o, s)
			if code := exitCode(t.Context(), err); code != tt.code {
				t.Fatalf("exit code %d, want %d: %v\nstdout: %s\nstderr: %s", code, tt.code, err, out, errOut)
			}
			if tt.errSubstr != "" && !strings.Contains(err.Error(), tt.errSubstr) {
				t.Errorf("error %q does not contain %q", err, tt.errSubstr)
			}
			var calls []bool
			for _, c := range fake.calls {
				calls = append(calls, c.DryRun)
				if c.ApplicationID != "order-processor" || len(c.SourceChangelogTopics) != 1 || c.Store == nil || len(c.Target) == 0 {
					t.Errorf("restorer options = %+v", c)
				}
			}
			if !reflect.DeepEqual(calls, tt.calls) {
				t.Errorf("restorer calls (DryRun of each) = %v, want %v", calls, tt.calls)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errOut)
				}
			}
		})
	}
}

var g0 = &globalOptions{}

// TestRestoreRetentionReachesTheRestorer: --retention is what the restore
// is run with (the choice preflight requires for records past retention.ms).
func TestRestoreRetentionReachesTheRestorer(t *testing.T) {
	cfg := restoreConfig(t, []string{"dr-kafka:9092"}, t.TempDir())
	s, _, _ := testStreams()
	fake := &fakeRestorer{rep: sampleReport()}
	o := &restoreOptions{ConfigFile: cfg, BackupID: "latest", Strategy: restorer.StrategyChangelog, DryRun: true, Retention: restorer.RetentionKeep, Logger: g0.Logger(), restore: fake.run}
	if err := runRestore(t.Context(), o, s); err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 1 || fake.calls[0].Retention != restorer.RetentionKeep {
		t.Fatalf("restorer calls %+v, want one with Retention keep", fake.calls)
	}
}

func TestRestoreWarnsWhenTargetIsSource(t *testing.T) {
	cfg := restoreConfig(t, []string{"lost-kafka:9092"}, t.TempDir())
	s, _, errOut := testStreams()
	fake := &fakeRestorer{rep: sampleReport()}
	o := &restoreOptions{ConfigFile: cfg, BackupID: "latest", Strategy: restorer.StrategyChangelog, DryRun: true, Logger: g0.Logger(), restore: fake.run}
	if err := runRestore(t.Context(), o, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: the target bootstrap servers are the source's (lost-kafka:9092)") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestNullDeviceIsNotATerminal: "restore -c F </dev/null" (a CI or
// Kubernetes job) must refuse rather than ask a question nobody can answer.
func TestNullDeviceIsNotATerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
}

// TestRestoreErrors: each kind of failure gets its exit code, its message
// (every reason of a refusal) and its next step.
func TestRestoreErrors(t *testing.T) {
	repo := t.TempDir()
	cfg := restoreConfig(t, []string{"dr-kafka:9092"}, repo)
	refused := &restorer.RefusedError{
		Reasons: []string{`topic "orders" exists on the target with 5 partitions, the backup has 3`, `--to-time cuts changelog topic "customers"`},
		Hint:    "kafkastreams-dr restore -c app.yaml --strategy rebuild --to-time T",
	}
	tests := []struct {
		name      string
		err       error
		dryRun    bool
		code      int
		msg       []string
		hint      string
		hintHasnt string
	}{
		{"refused, every reason and the hint", refused, false, exitUsage,
			[]string{"2 reasons", `topic "orders" exists`, `changelog topic "customers"`}, "--strategy rebuild", "resume"},
		{"refused in a dry run", fmt.Errorf("preflight: %w", refused), true, exitUsage, []string{`topic "orders" exists`}, "--strategy rebuild", "resume"},
		{"no backup", fmt.Errorf("%w: %s holds no complete backup", restorer.ErrNoBackup, repo), false, exitUsage,
			[]string{"no such backup", "holds no complete backup"}, "ls " + repo + "/backups/", "resume"},
		{"failed restore resumes", errors.New("produce to orders/1: broker gone"), false, exitError,
			[]string{"restore: produce to orders/1"}, "run the same command again: the restore resumes", ""},
		{"failed dry run wrote nothing", errors.New("connect to the target cluster: refused"), true, exitError,
			[]string{"connect to the target cluster"}, "nothing was written", "resume"},
		{"cancelled", fmt.Errorf("produce: %w", context.Canceled), false, exitCancelled, []string{"produce"}, "", "resume"},
		{"another restore holds the target's lock: exit 11", fmt.Errorf("take lock: %w (restores/locks/c1) by r-1", restorer.ErrLocked), false, 11,
			[]string{"restores/locks/c1"}, "another restore into this target cluster is running", "resume"},
		// Regression (issue 9): a damaged backup got the resume hint, a loop.
		{"damaged backup found before the first write", fmt.Errorf("check: %w (%w)", damaged(false), restorer.ErrNothingWritten), false, exitUsage,
			[]string{"segments/b/orders/0/1.kseg", "SHA-256"}, "verify -c " + cfg + " --deep --backup-id 20240501T120000.000Z-1a2b3c4d", "resume"},
		{"damaged backup found after a write", damaged(true), false, exitError,
			[]string{"segments/b/orders/0/1.kseg"}, "delete its restored topics", "resume"},
		{"damaged backup found in a dry run", damaged(false), true, exitUsage,
			[]string{"segments/b/orders/0/1.kseg"}, "older backup with --backup-id", "resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := testStreams()
			fake := &fakeRestorer{err: tt.err}
			o := &restoreOptions{ConfigFile: cfg, BackupID: "latest", Strategy: restorer.StrategyChangelog,
				Yes: !tt.dryRun, DryRun: tt.dryRun, Logger: g0.Logger(), restore: fake.run}
			err := runRestore(t.Context(), o, s)
			if code := exitCode(t.Context(), err); code != tt.code {
				t.Fatalf("exit code %d, want %d: %v", code, tt.code, err)
			}
			for _, w := range tt.msg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			h := errorHint(err)
			if !strings.Contains(h, tt.hint) || (tt.hintHasnt != "" && strings.Contains(h, tt.hintHasnt)) {
				t.Errorf("hint %q: want it to contain %q and not %q", h, tt.hint, tt.hintHasnt)
			}
		})
	}
	// list -c FILE, not "aws s3 ls", which lacked the configured endpoint.
	if h := listBackupsHint("s3://bucket/prefix", "list"); !strings.Contains(h, "kafkastreams-dr list -c FILE") {
		t.Errorf("S3 hint = %q", h)
	}
}

// sampleReport is a hand-built report of a changelog restore.
func sampleReport() *restorer.Report {
	toTime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	start := time.Date(2024, 5, 2, 8, 0, 0, 0, time.UTC)
	return &restorer.Report{
		Plan: restorer.Plan{
			BackupID: "b-1", ApplicationID: "order-processor", Strategy: restorer.StrategyChangelog, ToTime: &toTime,
			TargetClusterID: "dr-cluster", TargetBrokers: 3,
			Topics: []restorer.TopicPlan{
				{Topic: "orders", Class: "external", Action: "create", Partitions: 2, ReplicationFactor: 3,
					Configs: map[string]string{"retention.ms": "604800000", "cleanup.policy": "delete"},
					PartitionPlans: []restorer.PartitionPlan{
						{Partition: 0, Records: 20, SourceEnd: 20, CutAt: -1},
						{Partition: 1, Records: 7, SourceEnd: 30, CutAt: 9, AlreadyThere: 2},
					}},
				{Topic: "order-processor-store-changelog", Class: "changelog", Action: "resume", Partitions: 1, ReplicationFactor: 3,
					Configs:        map[string]string{"cleanup.policy": "compact"},
					FinalConfigs:   map[string]string{"message.timestamp.type": "LogAppendTime"},
					PartitionPlans: []restorer.PartitionPlan{{Partition: 0, Records: 6, SourceEnd: 16, CutAt: -1}}},
			},
			Skipped: []restorer.SkippedTopic{{Topic: "payments", Reason: "not matched by --topics"}},
			Group: &restorer.GroupPlan{GroupID: "order-processor", TargetState: "", Offsets: []restorer.OffsetPlan{
				{Topic: "order-processor-x-repartition", Partition: 0, Committed: 2, Translated: -1, Action: "drop", Note: "repartition topic: not restored"},
				{Topic: "orders", Partition: 0, Committed: 12, Translated: 12, Action: "commit"},
				{Topic: "orders", Partition: 1, Committed: 25, Translated: 7, Action: "commit", Note: "past the cut"},
			}},
			Warnings: []string{"3 records in flight in repartition topics are lost"},
		},
		RestoreID: "r-1", StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond),
		Partitions: []restorer.PartitionReport{
			{Topic: "orders", Partition: 0, Class: "external", SourceEnd: 20, NewEnd: 20, Records: 20, Map: &offsets.Map{NewEnd: 20}},
			{Topic: "orders", Partition: 1, Class: "external", SourceEnd: 30, NewEnd: 7, Records: 7, Map: &offsets.Map{NewEnd: 7}},
			{Topic: "order-processor-store-changelog", Partition: 0, Class: "changelog", SourceEnd: 16, NewEnd: 6, Records: 6, Map: &offsets.Map{NewEnd: 6}},
		},
		Committed: true, WipeState: true, Records: 31,
	}
}

func TestPrintPlan(t *testing.T) {
	var b strings.Builder
	p := sampleReport().Plan
	p.Group.Configs = map[string]string{"streams.session.timeout.ms": "50000", "streams.num.standby.replicas": "1"}
	printPlan(&b, &p, "dr-1:9092")
	out := b.String()
	for _, w := range []string{
		"restore plan for backup b-1",
		"application  order-processor",
		"to time      2024-05-01T12:00:00Z",
		"target       dr-1:9092 (cluster dr-cluster, 3 brokers)",
		"restores     33 records in 2 topics (3 partitions); 2 records are already on the target",
		"TOPIC                            CLASS      ACTION  PARTITIONS  RF  RECORDS  CONFIGS",
		"orders                           external   create  2           3   27       cleanup.policy=delete, retention.ms=604800000",
		"cleanup.policy=compact; after the records: message.timestamp.type=LogAppendTime",
		"TOPIC                            PARTITION  RECORDS  SOURCE_END  CUT_AT  ON_TARGET  NO_TIMESTAMP  PAST_RETENTION",
		"orders                           1          7        30          9       2",
		"orders                           0          20       20          -       0",
		"group order-processor (on the target: absent): 2 offsets to commit, 1 dropped",
		"group configs set on the target first: streams.num.standby.replicas=1, streams.session.timeout.ms=50000",
		"TOPIC                          PARTITION  COMMITTED  TRANSLATED  ACTION  NOTE",
		"order-processor-x-repartition  0          2          -           drop    repartition topic: not restored",
		"orders                         1          25         7           commit  past the cut",
		"not restored:\n  payments  not matched by --topics",
		"1 warning:\n  3 records in flight",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("plan does not contain %q:\n%s", w, out)
		}
	}
}

func TestPrintReport(t *testing.T) {
	var b strings.Builder
	r := sampleReport()
	printReport(&b, r, "dr-1:9092")
	out := b.String()
	for _, w := range []string{
		"restore r-1 complete",
		"backup       b-1",
		"records      33 records in 2 topics (3 partitions): 31 produced by this run, 2 there from an earlier run",
		"duration     1.5s",
		"orders                           external   created  2           3   27",
		"order-processor-store-changelog  changelog  resumed  1           3   6",
		"group order-processor: 2 offsets committed and read back equal",
		"orders                         0          12         12          commit",
		"WIPE LOCAL STATE BEFORE THE APPLICATION STARTS",
		`application.id "order-processor"`,
		"KafkaStreams#cleanUp()",
		"changelog partitions, old end on the lost cluster -> new end:\n  order-processor-store-changelog/0  16  ->  6\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report does not contain %q:\n%s", w, out)
		}
	}
	r.Records = 33
	b.Reset()
	printReport(&b, r, "dr-1:9092")
	if out := b.String(); !strings.Contains(out, "records      33 records produced into 2 topics (3 partitions)\n") {
		t.Errorf("report of a restore that produced everything:\n%s", out)
	}
	if strings.Contains(out, "orders/0  20") {
		t.Errorf("an input partition is listed as a changelog:\n%s", out)
	}

	r.WipeState, r.Committed = false, false
	b.Reset()
	printReport(&b, r, "dr-1:9092")
	if out := b.String(); strings.Contains(out, "WIPE") || !strings.Contains(out, "NOT committed") {
		t.Errorf("report without wipe, not committed:\n%s", out)
	}
}

func TestRestoreHelp(t *testing.T) {
	for _, args := range [][]string{{"restore", "--help"}, {"offsets", "show", "--help"}, {"offsets", "translate", "--help"}, {"offsets", "--help"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%q: exit code %d", args, code)
		}
		want := []string{"EXIT STATUS", "130", "Usage:"}
		if args[0] == "restore" {
			want = append(want, "target.bootstrap_servers", "target.security", "storage.*", "application_id", "source_changelog_topics",
				"STRATEGIES", "rebuild", "POINT-IN-TIME", "Refused for changelog", "--dry-run", "--yes", "--embedded",
				"RECORDS PAST RETENTION", "--retention", "accept-loss", "BROKER LIMITS", "max.message.bytes", "PRODUCER COMPRESSION", "--compression")
		} else if len(args) == 3 {
			want = append(want, "storage.*", "--backup-id")
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q help does not contain %q:\n%s", args, w, stdout)
			}
		}
	}
}

// embeddedRepository runs the quickstart's `backup --embedded` into a new
// directory and returns it.
func embeddedRepository(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kdr-quickstart")
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "--embedded", "--out", dir); code != exitOK {
		t.Fatalf("backup --embedded: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return dir
}

func damaged(written bool) *restorer.DamageError {
	return &restorer.DamageError{BackupID: "20240501T120000.000Z-1a2b3c4d", Written: written,
		Damaged: []restorer.Damage{{Key: "segments/b/orders/0/1.kseg", Topic: "orders", Partition: 0, Problem: "SHA-256 00, the manifest says 11"}}}
}
