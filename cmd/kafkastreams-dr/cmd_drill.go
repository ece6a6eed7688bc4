package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// drillOptions are the flags of `drill`.
type drillOptions struct {
	ConfigFile        string
	BackupID          string                   // "": take a new backup; "latest" or an id: drill with that backup
	Strategy          restorer.Strategy        // changelog or rebuild
	ToTime            *time.Time               // --to-time, parsed; nil without a cut
	Topics            []string                 // --topics patterns; empty means every backed-up topic
	ReplicationFactor int                      // 0 keeps the backed-up replication factor
	TargetBootstrap   []string                 // --target-bootstrap-servers
	Retention         restorer.RetentionChoice // --retention, as for restore
	AllowKafka42      bool                     // --allow-kafka-4-2, as for restore
	SkipGroupConfigs  bool                     // --skip-group-configs, as for restore
	JSON              bool
	JUnit             string // --junit FILE
	Report            string // --report FILE: the HTML report
	// RTOGrowthThreshold is --rto-growth-threshold, in percent (default
	// 20): the HTML report's history flags the RTO beyond it.
	RTOGrowthThreshold float64
	NoDeep             bool          // verify the repository by size and SHA-256 only
	Embedded           bool          // drill on in-process source and target clusters
	Out                string        // repository directory of --embedded; "" for a new temporary directory
	AppCommand         string        // --app-command; "" falls back to drill.app.command
	AppTimeout         time.Duration // --app-timeout; 0 falls back to drill.app.timeout
	Scorecard          string        // --scorecard FILE (cmd_drill_scorecard.go)
	SignKeyFile        string        // --sign-key-file FILE; "" falls back to $KDR_SIGN_KEY
	signKey            ed25519.PrivateKey

	Logger *slog.Logger
	global *globalOptions // --metrics-addr, --push-gateway, --push-job

	// drill runs the drill; nil means drill.Run. Tests inject one.
	drill func(context.Context, drill.Options) (*drill.Report, error)
	// commandLine is the command as it ran, flags only and no secret
	// (drillCommandLine), for --report.
	commandLine string
	// interruptHint is what to do after this drill was interrupted, set
	// by the run (it depends on how far the drill got).
	interruptHint string
}

const drillLong = `Run a disaster-recovery drill of one Kafka Streams application: back it up from the
source cluster (or take an existing backup with --backup-id), check every object of the
backup (size, SHA-256 and, unless --no-deep, its decoded records), restore it into the
drill target cluster, compare every restored record with the backup field for field,
and read the group's committed offsets back from the target.

The drill target is the config's target section or --target-bootstrap-servers. It must
be a new cluster: a target that already holds any of the topics to restore, or
committed offsets of the application's group, is refused before anything is written.

The report says how long each phase took, the RTO (from the start of the drill to
restored and verified), the RPO (the age of the backup's cut when the source was lost:
at the end of the backup phase, or at the start of a drill of an existing backup), the
data volume, the group's offsets on the source and on the target, and the warnings.
--json prints it as JSON; --junit FILE also writes it as JUnit XML for CI (one test
case per phase), whether the drill passed or not. --junit and --out are checked before
the drill starts: a --junit that is a directory, or whose directory does not exist (it is
not created, except when it is --out), and an --out that is a file or not empty exit 2.
A failed phase stops the drill: the phases after it are reported as skipped. An
interrupted drill (SIGINT, SIGTERM) prints the report so far, the interrupted phase
failed ("interrupted": true in --json), and exits 130; once its restore started the
drill target is no longer new, and the next drill needs a new, empty one.

--report FILE also writes the report as one self-contained HTML page for people (platform
owners, auditors): no network, no script, no external font or image (inline CSS and SVG;
the page's Content-Security-Policy blocks anything else), every name from Kafka or the
config escaped as text. It shows the outcome; a timeline of the phases drawn to scale
(each bar's width proportional to its duration, with the loss of the source and each RTO
figure marked); the RTO figures and the RPO with their definitions ("not reached" when not
measured); the volume; a table per topic and per partition of what the restore wrote
(records, bytes produced and stored, offsets on the source -> on the target, state check);
each state store's check; the group's offsets; the restore's throughput over time (records
per second, sampled at most every 10 ms, at most 240 samples); the application on the
target; the warnings; and what ran: the tool's and Go's versions, the command line rebuilt
from its flags (the config file's path, never its contents; a URL's password replaced by
xxxxx; --app-command as given: keep secrets out of it) and the clusters' Kafka versions.
Its history section is the drills of the application recorded in the repository, oldest
first (this one the last when it was recorded; at most the last 100), as drill history
prints them: per drill its RTO (the furthest figure, named), RPO, records, bytes,
partitions and the change against the drill before; the trend ("RTO GREW", flagged, when
the latest RTO is more than --rto-growth-threshold percent, default 20, above the median of
the earlier passed drills'); and a chart of RTO per drill to scale. A history that cannot
be read is a warning on the page and on stderr, never a failed drill. --report is checked
before the drill starts, as --junit is (and may not be the same file), and written whether
the drill passed, failed or was interrupted (into a temporary file renamed over FILE:
never half-written).

The report gives each restored state store's state check (the digest of its changelog's
latest value per key on the target against the backup's): equal, different (the
restore or verify-cluster phase fails) or not recorded; --json: states[], JUnit:
properties state.<store>.

--embedded needs no cluster: it starts an in-process source cluster of 3 brokers
(franz-go kfake) running the sample Streams application order-processor, backs it up
into --out, stops the source cluster (the disaster), and restores into a second,
new in-process cluster.

THE APPLICATION
With --app-command COMMAND (or drill.app.command) the drill starts the application on
the drill target once the restore is verified, and watches its group there (phases
app-running and app-caught-up). COMMAND is run by /bin/sh -c in a process group of its
own, with KAFKASTREAMS_DR_BOOTSTRAP_SERVERS (the target's host:port,...) and
KAFKASTREAMS_DR_APPLICATION_ID in its environment (and without $KDR_SIGN_KEY); start it
with exec, and with an empty state directory (see state wipe). The drill stops it at the end, passed, failed or
interrupted: SIGTERM to its process group, then SIGKILL after drill.app.stop_grace (30s);
a process that leaves the group (setsid) is not stopped. Before writing anything the
drill checks that the first word of a plain command (after exec) is a program on PATH or
an executable file, and refuses it with exit 2 otherwise; a command with shell syntax is
left to the shell. Its output is logged
at debug level (--log-level debug). An application that exits by itself fails the drill
with its exit status and last lines; one not caught up within --app-timeout (default
drill.app.timeout, 10m) fails it too. --app-timeout without a command (--app-command or
drill.app.command) is a usage error (exit 2). A streams group (group.protocol=streams, KIP-1071)
that never leaves NotReady (the broker did not validate the topics its topology needs)
fails app-running (exit 1) naming the group and each topic the target lacks or
partitions otherwise than the topology needs; --json says when it left NotReady
(app.ready_at) or why not (app.not_ready).

Three recovery times, each from the loss of the source (the end of the backup phase, or
the start of a drill of an existing backup):
  rto_data_restored  to the restored records verified on the target
  rto_app_running    to the application running: its group Stable with every input
                     partition (classic group) or every active task (streams group) assigned
  rto_app_caught_up  to the application caught up: running, and every committed offset of
                     its group at its partition's end (last stable offset): lag zero; for a
                     streams group also every task offset at its end offset
rto_seconds is what it always was: from the start of the drill to restored and verified.
The drill's measurements are stored in the repository (drills/<drill-id>/report.json),
from which estimate projects the recovery time of each strategy.

A failed drill leaves out what it did not reach: rto_seconds, the three RTO figures and
rpo_seconds are null in --json and absent from the JUnit properties (as is an empty
backup_id), never 0.

EVIDENCE
--scorecard FILE writes the drill's scorecard (passed or failed): its ids, the RTO figures and
RPO with their definitions, the volume, the state checks and the phases, bound to its restore
by the SHA-256 of restores/<restore-id>/report.json (the restore's plan as stored) and of the
backup's manifest, in a DSSE envelope signed with Ed25519 when a key is given (--sign-key-file
FILE, else $KDR_SIGN_KEY: PEM PKCS#8 as openssl genpkey -algorithm ed25519 writes it, or the
base64 of a 32-byte seed). A drill that records its report also stores its scorecard as
drills/<drill-id>/scorecard.json. It holds no secret: no key, no credential, no broker
address. A key that cannot be read or parsed, and a --scorecard that is a directory, in a
directory that does not exist, or the file of --report or --junit, exit 2 before the drill starts. Check a scorecard with
drill verify-report FILE --public-key-file PUB.pem -c FILE; see the trend of the recorded
drills with drill history -c FILE (docs/OPERATIONS.md, "Drill evidence").

EXIT STATUS of a drill: 0 when every phase passed, 1 when a phase failed (the application
exited by itself or was not caught up within --app-timeout included), 2 when the
restore was refused (the target is not new), when the --backup-id backup does not exist
(see list -c FILE) or is damaged, when with --backup-id storage.path does not exist (it is
not created), when the application command cannot run, or for usage and config errors;
130 when the drill was interrupted (SIGINT, SIGTERM: the application is stopped, the report
so far printed).

CONFIG KEYS USED
  application_id, source_changelog_topics, source.*, backup.* and
  schema_registry.topic (as for backup),
  storage.* (the repository), target.* (the drill target, as for restore),
  drill.app.command, drill.app.timeout, drill.app.stop_grace (the application).`

func newDrillCmd(g *globalOptions, s *iostreams, runF func(context.Context, *drillOptions, *iostreams) error) *cobra.Command {
	o := &drillOptions{}
	var strategy, toTime string
	var topics []string
	cmd := &cobra.Command{
		Use:   "drill -c FILE",
		Short: "Back up, restore into a drill cluster, verify, and report RTO and RPO",
		Long:  drillLong,
		Example: `  kafkastreams-dr drill -c order-processor.yaml --target-bootstrap-servers kafka-drill:9092
  kafkastreams-dr drill -c order-processor.yaml --backup-id latest --junit drill-junit.xml --json
  kafkastreams-dr drill -c order-processor.yaml --backup-id latest --report drill-report.html

  # Measure the recovery time to the application caught up (an empty state dir each time).
  kafkastreams-dr drill -c order-processor.yaml --backup-id latest \
    --app-command 'exec java -jar order-processor.jar --bootstrap-servers "$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS" --state-dir "$(mktemp -d)"'

  # No cluster at hand: the whole drill on in-process clusters with a sample app.
  kafkastreams-dr drill --embedded
  kafkastreams-dr drill --embedded --out ./kdr-quickstart --junit ./kdr-quickstart/drill-junit.xml`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(cmd, strategy, toTime, topics); err != nil {
				return err
			}
			o.Logger = g.Logger()
			o.global = g
			o.commandLine = drillCommandLine(cmd)
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			run := runDrill
			if o.Embedded {
				run = runEmbeddedDrill
			}
			err := run(cmd.Context(), o, s)
			if o.interruptHint != "" {
				if cmd.Annotations == nil {
					cmd.Annotations = map[string]string{}
				}
				cmd.Annotations[interruptHintAnnotation] = o.interruptHint
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigFile, "config", "c", "", "config `FILE` (required unless --embedded)")
	f.StringVar(&o.BackupID, "backup-id", "", "drill with an existing backup: an `ID` or \"latest\" (default: take a new backup first)")
	f.StringVar(&strategy, "strategy", string(restorer.StrategyChangelog), "`STRATEGY` of the restore: changelog or rebuild, as for restore")
	f.StringVar(&toTime, "to-time", "", "point-in-time restore at `TIME` (RFC 3339 or epoch milliseconds), as for restore")
	f.StringArrayVar(&topics, "topics", nil, "restore and verify only the backed-up topics matching `PATTERN`s, as for restore")
	f.IntVar(&o.ReplicationFactor, "replication-factor", 0, "replication factor `N` of every created topic (default: the backed-up one)")
	f.StringSliceVar(&o.TargetBootstrap, "target-bootstrap-servers", nil, "`HOST:PORT,...` of the drill target cluster (default: target.bootstrap_servers)")
	f.Var(newRetentionValue(&o.Retention), "retention", "`CHOICE` is keep or accept-loss, for records already past the target topic's retention.ms, as for restore")
	f.BoolVar(&o.AllowKafka42, "allow-kafka-4-2", false, allowKafka42Usage)
	f.BoolVar(&o.SkipGroupConfigs, "skip-group-configs", false, skipGroupConfigsUsage)
	f.BoolVar(&o.JSON, "json", false, "print the drill report as JSON")
	f.StringVar(&o.JUnit, "junit", "", "also write the drill report as JUnit XML to `FILE` (one test case per phase); its directory must exist (or be --out)")
	f.StringVar(&o.Report, "report", "", "also write the drill report as one self-contained HTML page to `FILE` (timeline, tables, throughput, RTO and RPO); its directory must exist (or be --out)")
	f.Float64Var(&o.RTOGrowthThreshold, "rto-growth-threshold", drill.DefaultRTOGrowthThreshold*100, "with --report: flag the RTO in the page's history when it is more than `PERCENT` above the median of the earlier drills', as for drill history")
	f.BoolVar(&o.NoDeep, "no-deep", false, "check the backup's objects by size and SHA-256 only, without decoding their records")
	f.BoolVar(&o.Embedded, "embedded", false, "drill a sample Streams app on in-process source and target clusters (no Kafka needed)")
	f.StringVar(&o.Out, "out", "", "with --embedded: the repository `DIR`, empty or absent (default: a new temporary directory)")
	f.StringVar(&o.AppCommand, "app-command", "", "start the application with the shell `COMMAND` on the drill target after the restore and measure the RTO to it caught up (default: drill.app.command)")
	durationFlag(f, &o.AppTimeout, "app-timeout", 0, "", "bound the wait for the application caught up to `DURATION` from its start (default: drill.app.timeout, 10m)")
	f.StringVar(&o.Scorecard, "scorecard", "", scorecardUsage)
	f.StringVar(&o.SignKeyFile, "sign-key-file", "", signKeyUsage)
	return cmd
}

// complete checks the flags that go together and parses the ones that need
// it; every problem is a usage error naming the flag.
func (o *drillOptions) complete(cmd *cobra.Command, strategy, toTime string, topics []string) error {
	changed := cmd.Flags().Changed
	if o.Embedded {
		if o.ConfigFile != "" {
			return &usageError{errors.New("--embedded drills its own sample app on in-process clusters: drop --config")}
		}
		for _, name := range []string{"backup-id", "target-bootstrap-servers", "strategy", "to-time", "topics", "replication-factor", "app-command", "app-timeout"} {
			if changed(name) {
				return &usageError{fmt.Errorf("--%s does not go with --embedded (the embedded drill takes a new backup and restores every topic with the changelog strategy into a new 3-broker cluster)", name)}
			}
		}
	} else {
		if changed("out") {
			return &usageError{errors.New("--out goes with --embedded; a config's repository is storage.path or storage.bucket")}
		}
		if o.ConfigFile == "" {
			return &usageError{errors.New("no config file: use --config FILE (-c FILE), or --embedded to try a drill without a cluster")}
		}
	}
	if o.BackupID != "" && o.BackupID != "latest" {
		if err := checkBackupIDFlag(o.BackupID); err != nil {
			return err
		}
	}
	var err error
	if o.Strategy, o.ToTime, o.Topics, err = parseRestoreFlags(strategy, toTime, topics, o.ReplicationFactor, o.TargetBootstrap); err != nil {
		return err
	}
	if changed("app-command") && strings.TrimSpace(o.AppCommand) == "" {
		return &usageError{errors.New("--app-command is empty: give the shell command that starts the application against $KAFKASTREAMS_DR_BOOTSTRAP_SERVERS")}
	}
	if changed("app-timeout") && o.AppTimeout <= 0 {
		return &usageError{fmt.Errorf("--app-timeout %s: want a duration greater than zero, e.g. 10m", o.AppTimeout)}
	}
	if o.JUnit != "" && (strings.HasSuffix(o.JUnit, "/") || o.JUnit == "-") {
		return &usageError{fmt.Errorf("--junit %q: want a file name", o.JUnit)}
	}
	if o.Report != "" && (strings.HasSuffix(o.Report, "/") || o.Report == "-") {
		return &usageError{fmt.Errorf("--report %q: want a file name, e.g. --report drill-report.html", o.Report)}
	}
	if o.RTOGrowthThreshold < 0 || math.IsNaN(o.RTOGrowthThreshold) || math.IsInf(o.RTOGrowthThreshold, 0) {
		return &usageError{fmt.Errorf("--rto-growth-threshold %g: want a percentage of 0 or more, e.g. 20", o.RTOGrowthThreshold)}
	}
	return o.completeScorecard()
}

func runDrill(ctx context.Context, o *drillOptions, s *iostreams) (err error) {
	if err := checkOutputPaths(o, ""); err != nil {
		return err
	}
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	tel, err := startTelemetry(o.global, s, "drill", cfg.ApplicationID)
	if err != nil {
		return err
	}
	defer func() { tel.finish(ctx, err) }()
	bo := backupOptionsFromConfig(cfg)
	if bo.Topology, err = loadTopology(cfg, ""); err != nil { // topology_file
		return err
	}
	if bo.Source, err = sourceClientOptions(cfg); err != nil {
		return err
	}
	target, err := restoreTarget(cfg, o.TargetBootstrap)
	if err != nil {
		return err
	}
	targetOpts, err := target.ClientOptions()
	if err != nil {
		return clientOptionsError(cfg, "target", err)
	}
	targetName := strings.Join(target.BootstrapServers, ",")
	if slices.Equal(slices.Sorted(slices.Values(target.BootstrapServers)), slices.Sorted(slices.Values(cfg.Source.BootstrapServers))) {
		return withCode(exitUsage, fmt.Errorf("the drill target is the source cluster (%s): a drill restores into another, new cluster", targetName),
			"set target.bootstrap_servers, or pass --target-bootstrap-servers host:port,...")
	}
	app := drillApp(o, cfg.Drill.App, target.BootstrapServers)
	if err := checkAppCommand(o, app); err != nil {
		return err
	}
	// With --backup-id the drill takes no backup: until the restore it
	// reads the repository, which must exist, as for list and verify.
	open := openStorage
	if o.BackupID != "" {
		open = func(ctx context.Context, s config.Storage) (storage.Backend, error) {
			return openExistingStorage(ctx, s, "")
		}
	}
	store, err := open(ctx, cfg.Storage)
	if err != nil {
		return storageError(err)
	}
	ro := restoreOptionsFromConfig(cfg)
	ro.Target = targetOpts
	ro.RequestTimeout, ro.RetryTimeout = target.Timeouts()
	ro.Strategy = o.Strategy
	ro.ToTime = o.ToTime
	ro.Topics = o.Topics
	ro.ReplicationFactor = o.ReplicationFactor
	ro.Retention = o.Retention
	ro.AllowKafka42 = o.AllowKafka42
	ro.SkipGroupConfigs = o.SkipGroupConfigs
	bo.Observer, ro.Observer = tel.backupObserver(), tel.restoreObserver()
	do := drill.Options{Store: store, Backup: bo, BackupID: o.BackupID, Restore: ro, Shallow: o.NoDeep, Logger: o.Logger}
	do.App = app

	header := drillHeader(cfg.ApplicationID, strings.Join(cfg.Source.BootstrapServers, ","), o.BackupID, store.Location(), targetName)

	o.Logger.Info("drill starting", "application_id", cfg.ApplicationID, "repository", store.Location(), "target", targetName)
	rep, err := o.run(ctx, do)
	if err != nil {
		if rep != nil {
			o.interruptHint = drillInterruptHint(rep, targetName)
		}
		return drillRunError(ctx, err, o, store, rep, s, header)
	}
	return scorecardAfter(ctx, s, o, store, rep, finishDrill(ctx, s, o, store, rep, header, cfg.File()))
}

// drillApp is the application the drill starts: --app-command over
// drill.app.command, --app-timeout over drill.app.timeout; nil when neither
// command is given.
func drillApp(o *drillOptions, c config.DrillApp, bootstrap []string) *drill.App {
	command := c.Command
	if o.AppCommand != "" {
		command = o.AppCommand
	}
	if strings.TrimSpace(command) == "" {
		return nil
	}
	a := &drill.App{Command: command, BootstrapServers: bootstrap, Timeout: c.Timeout, StopGrace: c.StopGrace, OmitEnv: []string{signKeyEnv}}
	if o.AppTimeout > 0 {
		a.Timeout = o.AppTimeout
	}
	return a
}

// checkAppCommand refuses, before the drill writes anything, an
// application command whose program cannot run (drill.CheckCommand), with
// exit 2 naming the flag or key it came from.
// --app-timeout without a command at all (--app-command or
// drill.app.command) is a usage error too: it would be silently ignored.
func checkAppCommand(o *drillOptions, app *drill.App) error {
	if app == nil && o.AppTimeout > 0 {
		return &usageError{fmt.Errorf("--app-timeout %s bounds the wait for the application, and no application is started: give --app-command COMMAND (or drill.app.command in the config), or drop --app-timeout", o.AppTimeout)}
	}
	if app == nil {
		return nil
	}
	err := drill.CheckCommand(app.Command)
	if err == nil {
		return nil
	}
	from := "drill.app.command"
	if o.AppCommand != "" {
		from = "--app-command"
	}
	return withCode(exitUsage, fmt.Errorf("%s %q cannot start the application: %w", from, app.Command, err),
		fmt.Sprintf("fix %s: it is run as /bin/sh -c COMMAND, so its first word (after exec) must be a program on PATH or the path of an executable file", from))
}

func (o *drillOptions) run(ctx context.Context, do drill.Options) (*drill.Report, error) {
	if o.drill != nil {
		return o.drill(ctx, do)
	}
	return drill.Run(ctx, do)
}

// drillInterruptHint is what to do after an interrupted drill: once the
// restore started, the drill target holds restored topics and the next
// drill there is refused (a drill restores into a new cluster).
func drillInterruptHint(rep *drill.Report, target string) string {
	if rep.Reached(drill.PhaseRestore) {
		return fmt.Sprintf("the drill target %s now holds the restored topics (and, after verify-offsets, the group's offsets): a drill restores only into a new cluster, so the next drill there is refused. Start over on a new, empty target (--target-bootstrap-servers or target.bootstrap_servers), or delete the application's topics and group on this one", target)
	}
	return "nothing was restored into the drill target: run the same command again"
}

// drillRunError maps a drill that could not finish. An interrupted drill
// prints its report so far (text or --json: the phases up to the
// interrupted one, which failed with "interrupted") and still writes its
// JUnit report, so a cancelled CI job shows where it stopped, and its HTML
// report, whose history store is read without ctx's cancellation (ctx is
// cancelled when the drill was interrupted), within pageHistoryTimeout.
func drillRunError(ctx context.Context, err error, o *drillOptions, store storage.Backend, rep *drill.Report, s *iostreams, header []string) error {
	if rep != nil && o.JUnit != "" {
		if werr := writeJUnit(o.JUnit, rep); werr != nil {
			o.Logger.Warn("could not write the JUnit report of the interrupted drill", "err", werr)
		}
	}
	if rep != nil && o.Report != "" {
		if werr := writeHTMLReport(context.WithoutCancel(ctx), o, store, rep, s.ErrOut); werr != nil {
			o.Logger.Warn("could not write the HTML report of the interrupted drill", "err", werr)
		} else {
			fmt.Fprintf(s.ErrOut, "HTML report: %s\n", o.Report)
		}
	}
	switch {
	case storage.IsTransient(err):
		// Before Canceled: a storage request that timed out wraps
		// context.DeadlineExceeded and is no cancellation.
		return withCode(exitError, fmt.Errorf("drill: %w", err), storage.TransientHint("the storage"))
	case errors.Is(err, context.Canceled):
		if rep != nil {
			if o.JSON {
				if werr := writeJSON(s.Out, rep); werr != nil {
					o.Logger.Warn("could not print the report of the interrupted drill", "err", werr)
				}
			} else {
				printDrillReport(s.Out, rep, header, o.JUnit)
			}
		}
		return err
	}
	return withCode(exitError, fmt.Errorf("drill: %w", err), "")
}

// runEmbeddedDrill is `drill --embedded`: the whole drill on in-process
// clusters. A source cluster of 3 brokers (kfake) is seeded with the sample
// application order-processor and backed up into --out; after the backup
// the source cluster is stopped (the disaster), and the backup is restored
// into a second, new cluster of 3 brokers and verified there.
func runEmbeddedDrill(ctx context.Context, o *drillOptions, s *iostreams) error {
	if o.Out != "" {
		if err := checkEmptyRepository(o.Out); err != nil {
			return err
		}
	}
	if err := checkOutputPaths(o, o.Out); err != nil {
		return err
	}
	out := o.Out
	if out == "" {
		dir, err := os.MkdirTemp("", "kdr-drill-")
		if err != nil {
			return withCode(exitError, fmt.Errorf("create a directory for the repository: %w", err), "choose one with --out DIR")
		}
		out = dir
		fmt.Fprintf(s.ErrOut, "repository: %s (a new temporary directory; --out DIR chooses one)\n", out)
	}
	store, err := storage.NewFilesystem(out)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--out %s: %w", out, err), "choose a directory you can write to")
	}

	source, sourceSeeds, err := startEmbeddedCluster(ctx, s.ErrOut, "source", "kdr-drill-source", true)
	if err != nil {
		return err
	}
	sourceUp := true
	stopSource := func() {
		if sourceUp {
			source.Close()
			sourceUp = false
		}
	}
	defer stopSource()

	target, targetSeeds, err := startEmbeddedCluster(ctx, s.ErrOut, "target", "kdr-drill-target", false)
	if err != nil {
		return err
	}
	defer target.Close()

	do := drill.Options{
		Store:   store,
		Backup:  sampleBackupOptions(sourceSeeds),
		Restore: embeddedRestoreOptions(targetSeeds, sample.AppID, sample.SourceChangelogs),
		Shallow: o.NoDeep,
		Logger:  o.Logger,
		OnPhase: func(p drill.Phase) {
			if p.Name == drill.PhaseBackup && p.OK() {
				stopSource()
				fmt.Fprintln(s.ErrOut, "the source cluster is gone: stopped after the backup; everything from here on uses the repository and the new cluster")
			}
		},
	}
	rep, err := o.run(ctx, do)
	if err != nil {
		o.interruptHint = "the in-process clusters stopped with the drill: run it again (with --out, name a new directory: it must be empty)"
		var story []string
		if rep != nil {
			story = embeddedDrillStory(rep, sourceSeeds, targetSeeds, out)
		}
		return drillRunError(ctx, err, o, store, rep, s, story)
	}

	story := embeddedDrillStory(rep, sourceSeeds, targetSeeds, out)
	if err := scorecardAfter(ctx, s, o, store, rep, finishDrill(ctx, s, o, store, rep, story, "")); err != nil {
		return err
	}
	if !o.JSON {
		fmt.Fprintf(s.Out, "\nthe repository stays in %s (ls -R %s); the clusters stopped with this command.\n", out, out)
	}
	return nil
}

// finishDrill prints the report (JSON or text), writes --junit and
// --report (its history from store), and maps the outcome to the exit
// code: 0 passed, 2 restore refused, 1 otherwise.
func finishDrill(ctx context.Context, s *iostreams, o *drillOptions, store storage.Backend, rep *drill.Report, header []string, file string) error {
	if o.JSON {
		if rep.WipeState {
			fmt.Fprintf(s.ErrOut, "IMPORTANT: %s\n", restorer.WipeInstruction(rep.ApplicationID))
		}
		if err := writeJSON(s.Out, rep); err != nil {
			return err
		}
	} else {
		printDrillReport(s.Out, rep, header, o.JUnit)
	}
	if o.JUnit != "" {
		if err := writeJUnit(o.JUnit, rep); err != nil {
			return withCode(exitError, fmt.Errorf("--junit: %w", err), "")
		}
	}
	if o.Report != "" {
		if err := writeHTMLReport(ctx, o, store, rep, s.ErrOut); err != nil {
			return withCode(exitError, fmt.Errorf("--report: %w", err), "")
		}
		fmt.Fprintf(s.ErrOut, "HTML report: %s\n", o.Report)
	}
	return drillOutcome(rep, file)
}

// checkOutputPaths checks --junit and --report before the drill starts
// (checkOutputPath), and that they are two files.
func checkOutputPaths(o *drillOptions, out string) error {
	if o.Report != "" && o.JUnit != "" && sameDir(o.Report, o.JUnit) {
		return withCode(exitUsage, fmt.Errorf("--report and --junit name the same file %s", o.Report),
			"give each its own, e.g. --junit drill-junit.xml --report drill-report.html")
	}
	// --scorecard written over --report or --junit (or the other way)
	// would leave one of the two silently lost (issue 15).
	for _, other := range []struct{ flag, file string }{{"--report", o.Report}, {"--junit", o.JUnit}} {
		if o.Scorecard != "" && other.file != "" && sameDir(o.Scorecard, other.file) {
			return withCode(exitUsage, fmt.Errorf("--scorecard and %s name the same file %s", other.flag, o.Scorecard),
				"give each its own, e.g. --scorecard drill-scorecard.json --junit drill-junit.xml --report drill-report.html")
		}
	}
	if err := checkOutputPath("--junit", "the XML file", "drill-junit.xml", o.JUnit, out); err != nil {
		return err
	}
	return checkOutputPath("--report", "the HTML file", "drill-report.html", o.Report, out)
}

// checkOutputPath checks the file of an output flag (--junit, --report)
// before the drill starts, so that a drill is never run for a report it
// cannot write: file must not be a directory, and its directory must exist
// (it is never created), except when it is out, the --out repository
// directory the embedded drill creates. Every problem exits 2 naming the
// flag and the fix.
func checkOutputPath(flag, what, example, file, out string) error {
	if file == "" {
		return nil
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return withCode(exitUsage, fmt.Errorf("%s %s is a directory: %s names %s to write", flag, file, flag, what),
			fmt.Sprintf("name a file, e.g. %s %s", flag, filepath.Join(file, example)))
	}
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && out != "" && sameDir(dir, out):
		return nil // the embedded drill creates --out first
	case errors.Is(err, os.ErrNotExist):
		return withCode(exitUsage, fmt.Errorf("%s %s: the directory %s does not exist (the drill does not create it)", flag, file, dir),
			fmt.Sprintf("create it first (mkdir -p %s), or name a file in an existing directory", dir))
	case errors.Is(err, syscall.ENOTDIR) || (err == nil && !fi.IsDir()):
		return withCode(exitUsage, fmt.Errorf("%s %s: %s is not a directory", flag, file, dir),
			"name a file in an existing directory")
	case err != nil:
		return withCode(exitUsage, fmt.Errorf("%s %s: %w", flag, file, err), "name a file in a directory you can write to")
	}
	return nil
}

// sameDir reports whether a and b name the same path once made absolute.
func sameDir(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// writeJUnit writes rep as JUnit XML to file; its directory must exist
// (checkOutputPath).
func writeJUnit(file string, rep *drill.Report) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := rep.JUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	return f.Close()
}

// drillOutcome is nil for a drill that passed, and otherwise an error
// naming the failed phase, with the next thing to do.
func drillOutcome(rep *drill.Report, file string) error {
	p := rep.Failed()
	if p == nil {
		return nil
	}
	why := p.Error
	if len(p.Problems) > 0 {
		if why != "" {
			why += ": "
		}
		why += p.Problems[0]
		if n := len(p.Problems) - 1; n > 0 {
			why += fmt.Sprintf(" (and %s in the report)", plural(n, "more problem", "more problems"))
		}
	}
	err := fmt.Errorf("drill FAILED in phase %s: %s", p.Name, why)
	cfg := file
	if cfg == "" {
		cfg = "FILE"
	}
	switch {
	case p.Locked:
		return withCode(exitLocked, err, "another run holds the repository lock or the drill target's restore lock: run the drill again once it has finished")
	case p.Transient:
		return withCode(exitError, err, storage.TransientHint("the storage"))
	case p.Damaged:
		return withCode(damageExitCode, err, damagedSegmentsHint(cfg, orNone(rep.BackupID)))
	case p.OtherApplication:
		return withCode(exitUsage, err, otherApplicationHint(cfg))
	case p.NoBackup:
		return withCode(exitUsage, err, fmt.Sprintf("see which backups the repository holds with kafkastreams-dr list -c %s and name one with --backup-id (or drop --backup-id: the drill takes a new backup first)", quoteArgs([]string{cfg})[0]))
	case p.Refused && p.TargetNotNew:
		return withCode(exitUsage, err, "a drill restores into a new cluster: delete the application's topics and group on the drill target, or choose another one (--target-bootstrap-servers)")
	case p.Refused && p.RefusalHint != "":
		return withCode(exitUsage, err, p.RefusalHint+"; nothing was written to the drill target")
	case p.Refused:
		return withCode(exitUsage, err, "nothing was written to the drill target: the refusal above says what to change; run the drill again once it is changed")
	case p.Name == drill.PhaseBackup:
		return withCode(exitError, err, fmt.Sprintf("check the source cluster and the repository: kafkastreams-dr topics -c %s; kafkastreams-dr backup -c %s", cfg, cfg))
	case p.Name == drill.PhaseVerifyRepository:
		return withCode(damageExitCode, err, fmt.Sprintf("the backup cannot be trusted: see every problem with kafkastreams-dr verify -c %s --deep --backup-id %s, then start a new chain with kafkastreams-dr backup -c %s --full", cfg, orNone(rep.BackupID), cfg))
	case (p.Name == drill.PhaseAppRunning || p.Name == drill.PhaseAppCaughtUp) && rep.App != nil && len(rep.App.MissingSourceTopics) > 0:
		return withCode(exitError, err, fmt.Sprintf("the restore was verified; the application's source %s %s not on the drill target: restore %s (drop --topics, or include %s), then run the drill again",
			pluralWord(len(rep.App.MissingSourceTopics), "topic", "topics"), pluralWord(len(rep.App.MissingSourceTopics), "is", "are"),
			pluralWord(len(rep.App.MissingSourceTopics), "it", "them"), strings.Join(rep.App.MissingSourceTopics, ", ")))
	case p.Name == drill.PhaseAppRunning || p.Name == drill.PhaseAppCaughtUp:
		return withCode(exitError, err, "the restore was verified; the application did not get there: check the application command (--app-command, drill.app.command) and its output (--log-level debug), or give it longer (--app-timeout)")
	case p.Name == drill.PhaseRestore || p.Name == drill.PhasePlan:
		return withCode(exitError, err, "check the drill target (target.* or --target-bootstrap-servers) and the message above")
	}
	return withCode(exitError, err, "the drill target does not hold what the backup and the restore say: did anything else write to it? Keep the report (--json) and the repository")
}

// pluralWord is one for n == 1, many otherwise (no count).
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
