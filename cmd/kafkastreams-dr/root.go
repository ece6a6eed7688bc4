package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/ui/metrics"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/ui/progress"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// iostreams are the streams a command reads and writes: results on Out,
// logs, progress and warnings on ErrOut.
type iostreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	InTTY  bool // In is a terminal: a command may ask for confirmation
	ErrTTY bool // ErrOut is a terminal: text logs instead of JSON
}

func systemStreams() *iostreams {
	return &iostreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, InTTY: isTerminal(os.Stdin), ErrTTY: isTerminal(os.Stderr)}
}

// isTerminal reports whether f is a character device other than the null
// device: "cmd </dev/null" (a CI job, a Kubernetes job without stdin) is
// not a terminal anyone can answer a question on.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// globalOptions are the root's persistent flags and what is built from
// them before any command runs.
type globalOptions struct {
	LogLevel    string
	MetricsAddr string // --metrics-addr: serve /metrics on HOST:PORT while a backup or restore runs
	PushGateway string // --push-gateway: push the run's metrics to this Pushgateway URL at the end
	PushJob     string // --push-job: the Pushgateway job label

	logger    *slog.Logger
	logWriter *progress.Writer // stderr for the logger on a terminal: above the progress bars while they are drawn

	// afterRun, when set, is called with the metrics server's address once
	// the run is over and before the server stops (tests scrape then).
	afterRun func(metricsAddr string)

	// CPUProfile is the hidden --cpuprofile FILE, for benchmarking (make
	// bench): a Go CPU profile (runtime/pprof) of the whole command,
	// written when it ends; cpuProfile is the open file while it runs.
	CPUProfile string
	cpuProfile *os.File

	// MemProfile is the hidden --memprofile FILE, for benchmarking: a Go
	// heap profile of the command at its largest heap in use
	// (memProfiler); memProfile is its sampler while it runs.
	MemProfile string
	memProfile *memProfiler
}

// startCPUProfile starts --cpuprofile's profile: a file that cannot be
// created is a usage error naming the flag.
func (g *globalOptions) startCPUProfile() error {
	if g.CPUProfile == "" || g.cpuProfile != nil {
		return nil
	}
	f, err := os.Create(g.CPUProfile)
	if err != nil {
		return &usageError{fmt.Errorf("invalid --cpuprofile: %w", err)}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return &usageError{fmt.Errorf("invalid --cpuprofile %s: %w", g.CPUProfile, err)}
	}
	g.cpuProfile = f
	return nil
}

// stopCPUProfile writes and closes --cpuprofile's profile, if one runs.
func (g *globalOptions) stopCPUProfile() {
	if g.cpuProfile == nil {
		return
	}
	pprof.StopCPUProfile()
	g.cpuProfile.Close()
	g.cpuProfile = nil
}

// Logger returns the logger built from --log-level (discarding before the
// flags are parsed).
func (g *globalOptions) Logger() *slog.Logger {
	if g.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.logger
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("invalid --log-level %q (want debug, info, warn or error)", s)
}

// checkTelemetryFlags checks --metrics-addr, --push-gateway and
// --push-job; every problem is a usage error naming the flag.
func (g *globalOptions) checkTelemetryFlags() error {
	if g.MetricsAddr != "" {
		if err := metrics.CheckAddr(g.MetricsAddr); err != nil {
			return &usageError{fmt.Errorf("invalid --metrics-addr: %w", err)}
		}
	}
	if g.PushGateway != "" {
		if _, err := metrics.ParsePushURL(g.PushGateway); err != nil {
			return &usageError{fmt.Errorf("invalid --push-gateway %w", err)}
		}
	}
	if strings.TrimSpace(g.PushJob) == "" {
		return &usageError{errors.New("invalid --push-job: the job name is empty")}
	}
	return nil
}

// newLogger logs text to a terminal and JSON otherwise.
func newLogger(w io.Writer, tty bool, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if tty {
		return slog.New(slog.NewTextHandler(w, o))
	}
	return slog.New(slog.NewJSONHandler(w, o))
}

const rootLong = `kafkastreams-dr backs up and restores Kafka Streams applications: input, output and
changelog topics plus the application's consumer-group offsets, to S3 or a local directory.

Each application is described by one YAML config file, which
  kafkastreams-dr init --application-id APP --bootstrap-servers HOST:PORT
writes from what the cluster knows of the application; check a file with
"kafkastreams-dr config validate -c FILE" and "kafkastreams-dr topics -c FILE".

backup and restore draw a progress bar per topic when stderr is a terminal (nothing
animated otherwise) and end with one summary line on stderr. --metrics-addr serves their
Prometheus metrics (kafkastreams_dr_*) on /metrics while they run; --push-gateway pushes
them to a Pushgateway when they end, so that a CronJob's result outlives its pod.`

// helpTemplate is cobra's default help with EXIT STATUS appended, so that
// every command's --help lists the exit codes.
const helpTemplate = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}
` + exitStatusHelp

// newRootCmd builds the command tree and returns its global options too.
func newRootCmd(s *iostreams) (*cobra.Command, *globalOptions) {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "kafkastreams-dr",
		Short:         "Back up and restore Kafka Streams applications",
		Long:          rootLong,
		Version:       version,
		SilenceErrors: true, // run prints the error once
		SilenceUsage:  true, // and the usage only for usage errors
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level, err := parseLogLevel(g.LogLevel)
			if err != nil {
				return &usageError{err}
			}
			if err := g.checkTelemetryFlags(); err != nil {
				return err
			}
			if err := g.startCPUProfile(); err != nil {
				return err
			}
			if err := g.startMemProfile(); err != nil {
				return err
			}
			if s.ErrTTY {
				// Bars are drawn only on a terminal, where the logs are
				// text: they go above the bars through logWriter.
				g.logWriter = progress.NewWriter(s.ErrOut)
				g.logger = newLogger(g.logWriter, true, level)
			} else {
				g.logger = newLogger(s.ErrOut, false, level)
			}
			if ctx := cmd.Context(); ctx != nil {
				cmd.SetContext(withLogger(ctx, g.logger))
			}
			return nil
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetHelpTemplate(helpTemplate)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&g.LogLevel, "log-level", "info", "log level on stderr: debug, info, warn or error (text on a terminal, JSON otherwise)")
	pf.StringVar(&g.MetricsAddr, "metrics-addr", "", "backup, restore, drill: serve Prometheus metrics on http://`HOST:PORT`/metrics while the run lasts (:0 picks a free port)")
	pf.StringVar(&g.PushGateway, "push-gateway", "", "backup, restore, drill: push the run's metrics to the Prometheus Pushgateway at `URL` when it ends, success or not")
	pf.StringVar(&g.PushJob, "push-job", "kafkastreams-dr", "the job `NAME` of metrics pushed with --push-gateway (grouped by command and application_id)")
	pf.StringVar(&g.CPUProfile, "cpuprofile", "", "for benchmarking (make bench): write a Go CPU profile (runtime/pprof) of the whole command to `FILE` when it ends")
	_ = pf.MarkHidden("cpuprofile")
	pf.StringVar(&g.MemProfile, "memprofile", "", "for benchmarking: write a Go heap profile (runtime/pprof) of the command at its largest heap in use to `FILE` when it ends")
	_ = pf.MarkHidden("memprofile")
	root.SetVersionTemplate("kafkastreams-dr {{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true

	root.AddCommand(
		newBackupCmd(g, s, nil),
		newRestoreCmd(g, s, nil),
		withDrillSubcommands(newDrillCmd(g, s, nil), s),
		newVerifyCmd(g, s, nil),
		newListCmd(g, s, nil),
		newDescribeCmd(g, s, nil),
		newPruneCmd(g, s, nil),
		newEstimateCmd(g, s, nil),
		newStateCmd(g, s, nil, nil),
		newOffsetsCmd(g, s, nil, nil),
		newInitCmd(g, s, nil),
		newTopicsCmd(g, s, nil),
		newConfigCmd(g, s, nil),
		newVersionCmd(s),
	)
	return root, g
}

// usageArgs turns an argument-validation error into a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// run executes the command line and prints an error, if any, once:
// "Error: <msg>", then the usage for usage errors or the next command to
// run when the error carries one. main maps the returned error to the exit
// code with exitCode.
func run(ctx context.Context, args []string, s *iostreams) error {
	root, g := newRootCmd(s)
	defer g.stopCPUProfile()
	defer g.stopMemProfile()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	if cmd == nil {
		cmd = root
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports an unknown subcommand of the root with a plain error.
		err = &usageError{err}
	}
	msg := err.Error()
	if ctx.Err() != nil {
		msg = "interrupted"
	}
	fmt.Fprintf(s.ErrOut, "Error: %s\n", msg)
	var ue *usageError
	if errors.As(err, &ue) && ctx.Err() == nil {
		fmt.Fprintf(s.ErrOut, "\n%s", cmd.UsageString())
	}
	h := errorHint(err)
	if le, ok := errors.AsType[*repository.LatestError](err); ok {
		// Its ways out, with the backup ids, win over a generic damage hint.
		if w := latestWaysOut(le, configFlag(cmd), cmd.Name()); w != "" {
			h = w
		}
	}
	if file := configFlag(cmd); file != "" {
		// A hint built where the config file was not at hand spells it
		// FILE: the command's own -c file makes it run as printed.
		h = strings.ReplaceAll(h, "-c FILE", "-c "+quoteArgs([]string{file})[0])
	}
	if f := cmd.Flags().Lookup("backup-id"); f != nil && format.ValidBackupID(f.Value.String()) {
		h = strings.ReplaceAll(h, "--backup-id <id>", "--backup-id "+f.Value.String())
	}
	if h != "" && ctx.Err() == nil {
		fmt.Fprintln(s.ErrOut, h)
	}
	if h := cmd.Annotations[interruptHintAnnotation]; h != "" && ctx.Err() != nil {
		fmt.Fprintln(s.ErrOut, h)
	}
	return err
}

// interruptHintAnnotation is the cobra annotation of a command that holds
// what to do after it was interrupted (SIGINT, SIGTERM: exit 130), printed
// after "Error: interrupted"; the error's own hint is not (it may describe
// a failure the interrupt caused).
const interruptHintAnnotation = "kafkastreams-dr/interrupt-hint"

// loadConfig loads the config file for a command, prints its warnings on
// stderr, and returns an invalid file as an exit-2 error.
func loadConfig(file string, s *iostreams) (*config.Config, error) {
	return loadConfigWarning(file, s, (*config.Config).Warnings)
}

// loadRepositoryConfig is loadConfig for a command that reads the
// repository only (list, describe, prune, offsets): it prints the
// warnings about storage and the file, not those about the clusters.
func loadRepositoryConfig(file string, s *iostreams) (*config.Config, error) {
	return loadConfigWarning(file, s, func(c *config.Config) []string { return c.WarningsAbout("storage") })
}

func loadConfigWarning(file string, s *iostreams, warnings func(*config.Config) []string) (*config.Config, error) {
	if file == "" {
		return nil, &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
	}
	cfg, err := config.Load(file)
	if err != nil {
		return nil, withCode(exitUsage, err, "")
	}
	for _, w := range warnings(cfg) {
		fmt.Fprintf(s.ErrOut, "warning: %s\n", w)
	}
	return cfg, nil
}

// sourceClientOptions returns the franz-go options of the source cluster;
// an unreadable TLS or password file is a config error (exit 2).
func sourceClientOptions(cfg *config.Config) ([]kgo.Opt, error) {
	opts, err := cfg.Source.ClientOptions()
	if err != nil {
		return nil, clientOptionsError(cfg, "source", err)
	}
	return opts, nil
}

// clientOptionsError is the exit-2 error of a cluster's unreadable TLS or
// password file (side "source" or "target"): the config file checked again
// with its files (config.LoadAndCheckFiles, as config validate does), so
// that every bad file is named at its key and line; err, prefixed with the
// file and side, when that check finds nothing (a file changed between).
func clientOptionsError(cfg *config.Config, side string, err error) error {
	if cfg.File() != "" {
		if _, cerr := config.LoadAndCheckFiles(cfg.File()); cerr != nil {
			return withCode(exitUsage, cerr, "")
		}
	}
	return withCode(exitUsage, fmt.Errorf("%s: %s.security: %w", cfg.File(), side, err), "")
}

// openStorage opens the repository's storage backend, with the
// encryption of storage.encryption (storage.Encrypt: a key that cannot be
// read is exit 2, naming the setting). S3 credentials come
// from the AWS default chain. Errors name the settings to fix: storage.path
// (and storage.prefix) for a directory that is not one or cannot be
// created; the bucket and endpoint for S3. A bucket that does not exist
// (storage.ErrNoSuchBucket) carries exit 2, a configuration error like a
// missing storage.path; other S3 failures none (storageError gives 1).
func openStorage(ctx context.Context, s config.Storage) (storage.Backend, error) {
	// The keys first: a bad key opens (and creates) nothing.
	ring, err := s.Keyring()
	if err != nil {
		return nil, withCode(exitUsage, err, "check storage.encryption: kafkastreams-dr config validate -c FILE")
	}
	b, err := openBackend(ctx, s)
	if err != nil {
		return nil, err
	}
	// Always the encrypting wrapper: without storage.encryption it writes
	// plaintext, and an encrypted object is refused naming its key id
	// instead of being read as damage.
	return storage.Encrypt(b, ring, format.IsLockKey), nil
}

// openBackend is openStorage's backend, before encryption.
func openBackend(ctx context.Context, s config.Storage) (storage.Backend, error) {
	switch s.Backend {
	case config.BackendS3:
		period, err := s.ObjectLock.Period() // valid: config.Load checked it
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("storage.object_lock.retention %w", err), "")
		}
		b, err := storage.NewS3(ctx, storage.S3Options{
			Bucket:    s.Bucket,
			Prefix:    s.Prefix,
			Region:    s.Region,
			Endpoint:  s.Endpoint,
			PathStyle: s.PathStyle,
			// Zero means the storage package's defaults.
			RequestTimeout: s.RequestTimeout,
			RetryTimeout:   s.RetryTimeout,
			// The part buffers all uploads share (storage.upload_buffer_bytes).
			UploadBufferBytes: int64(s.UploadBufferBytes),
			// storage.server_side_encryption: sent on every PutObject
			// and CreateMultipartUpload.
			ServerSideEncryption: s.ServerSideEncryption.Algorithm,
			SSEKMSKeyID:          s.ServerSideEncryption.KMSKeyID,
			SSEBucketKey:         s.ServerSideEncryption.BucketKey,
			// A store that ignores the header: a warning, once.
			OnSSEUnconfirmed: sseUnconfirmed(ctx, s.ServerSideEncryption.Algorithm),
			// storage.object_lock: on the objects a complete backup
			// consists of only (format.Retained).
			Retention: storage.ObjectRetention{Mode: s.ObjectLock.Mode, Period: period},
			Retained:  format.Retained,
			// The SDK's own messages, and the request id of a missing
			// bucket, at debug level.
			Logger: loggerFrom(ctx),
		})
		if errors.Is(err, storage.ErrNoSuchBucket) {
			// A configuration error, as a storage.path that does not
			// exist is (exit 2), not a storage failure.
			return nil, withCode(exitUsage, err, "check storage.bucket (and storage.endpoint, storage.path_style); a backup writes into an existing bucket: create it first")
		}
		if errors.Is(err, storage.ErrObjectLockDisabled) {
			return nil, withCode(exitUsage, err, "enable Object Lock on the bucket, or remove storage.object_lock")
		}
		if err != nil {
			return nil, err
		}
		return b, nil
	case config.BackendFilesystem:
		b, err := storage.NewFilesystem(s.FilesystemDir())
		if err != nil {
			return nil, filesystemError(s, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("storage backend %q is not supported", s.Backend)
}

// sseNoteKey carries a *sseNote in a command's context (withSSENote).
type sseNoteKey struct{}

// sseNote holds the warning of a store that did not confirm the
// server-side encryption asked for (storage.S3Options.OnSSEUnconfirmed),
// for the command to add to its result's warnings (backup).
type sseNote struct {
	mu      sync.Mutex
	warning string
}

// Warning returns the warning, "" when every write was confirmed.
func (n *sseNote) Warning() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.warning
}

// withSSENote returns ctx carrying a new sseNote, and the note.
func withSSENote(ctx context.Context) (context.Context, *sseNote) {
	n := &sseNote{}
	return context.WithValue(ctx, sseNoteKey{}, n), n
}

// sseUnconfirmed is the OnSSEUnconfirmed of storage.server_side_encryption
// algorithm: it logs a warning (stderr) and records it in ctx's sseNote.
// The storage calls it once per opened store.
func sseUnconfirmed(ctx context.Context, algorithm string) func(key string) {
	if algorithm == "" {
		return nil
	}
	log := loggerFrom(ctx)
	note, _ := ctx.Value(sseNoteKey{}).(*sseNote)
	return func(key string) {
		msg := fmt.Sprintf("the store did not confirm server-side encryption (storage.server_side_encryption.algorithm %s): its answer to the write of %s carried no x-amz-server-side-encryption header, so the objects may not be encrypted at rest; check the bucket's default encryption with the store's vendor, or encrypt client-side (storage.encryption)", algorithm, key)
		if log != nil {
			log.Warn(msg)
		}
		if note != nil {
			note.mu.Lock()
			note.warning = msg
			note.mu.Unlock()
		}
	}
}

// loggerKey carries the command's logger in its context (withLogger), for
// what is opened below the command's run function (openStorage).
type loggerKey struct{}

// withLogger returns ctx carrying l (loggerFrom).
func withLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// loggerFrom is the logger withLogger put in ctx, nil when there is none.
func loggerFrom(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey{}).(*slog.Logger)
	return l
}

// openExistingStorage is openStorage for commands that read a repository
// that must already exist: a local directory that does not exist is refused
// instead of created (a mistyped storage.path would otherwise look like an
// empty repository). readOnly is the command's name when it only reads the
// repository (e.g. "verify", "restore --dry-run"): the store is then
// storage.ReadOnly, so that a write fails with storage.ErrReadOnly naming
// the command instead of changing the repository. "" opens it for writing
// (restore, prune).
func openExistingStorage(ctx context.Context, s config.Storage, readOnly string) (storage.Backend, error) {
	if s.Backend == config.BackendFilesystem {
		if _, err := os.Stat(s.FilesystemDir()); errors.Is(err, os.ErrNotExist) {
			return nil, withCode(exitUsage, fmt.Errorf("storage.path %s: no such directory: there is no repository there", s.FilesystemDir()),
				"check storage.path (and storage.prefix); a backup creates the repository")
		}
	}
	b, err := openStorage(ctx, s)
	if err != nil || readOnly == "" {
		return b, err
	}
	return storage.ReadOnly(b, readOnly), nil
}

// readOnlyWhen is the readOnly argument of openExistingStorage for a
// command that writes the repository unless dryRun: command when dryRun,
// else "".
func readOnlyWhen(dryRun bool, command string) string {
	if dryRun {
		return command
	}
	return ""
}

// storageError gives an error opening the repository its exit code: the
// one it carries, or 1, with the re-run hint when the store's failure was
// transient (it did not answer in time, or answered 5xx).
func storageError(err error) error {
	var ee *exitErr
	if errors.As(err, &ee) {
		return err
	}
	return withCode(exitError, err, repositoryHint(err, "the storage"))
}

// configFlag is the --config (-c) value cmd was given, "" when it has no
// such flag or it was not set.
func configFlag(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("config"); f != nil {
		return f.Value.String()
	}
	return ""
}

// latestWaysOut is the hint after a *repository.LatestError whose
// manifest is damaged: verify the newest backup (not from verify itself),
// restore the older one by id, or take a new full backup, with the
// command's config file (FILE when it has none), so that each runs as
// printed; "" for a store that failed (its message says to run the
// command again).
func latestWaysOut(e *repository.LatestError, file, command string) string {
	if !errors.Is(e, repository.ErrDamaged) || storage.IsTransient(e) {
		return ""
	}
	if file == "" {
		file = "FILE"
	}
	file = quoteArgs([]string{file})[0]
	var ways []string
	if command != "verify" {
		ways = append(ways, fmt.Sprintf("check it with kafkastreams-dr verify -c %s --backup-id %s", file, e.BackupID))
	}
	if e.Older != "" {
		ways = append(ways, fmt.Sprintf("restore an older backup by naming it (--backup-id %s)", e.Older))
	}
	ways = append(ways, fmt.Sprintf("take a new full backup (kafkastreams-dr backup -c %s --full)", file))
	if len(ways) > 1 {
		ways[len(ways)-1] = "or " + ways[len(ways)-1]
	}
	return strings.Join(ways, ", ")
}

// repositoryHint is the next step after err from reading the repository at
// location, or "" when err is neither transient nor damage. The ways out
// of a damaged *repository.LatestError (with the backup ids and the
// command's config file) are printed by run (latestWaysOut), so its
// damage gets no second, generic hint here.
func repositoryHint(err error, location string) string {
	switch _, latest := errors.AsType[*repository.LatestError](err); {
	case storage.IsTransient(err):
		return storage.TransientHint(location)
	case errors.Is(err, repository.ErrDamaged) && latest:
		return ""
	case errors.Is(err, repository.ErrDamaged):
		return "the manifest is damaged or truncated: this backup cannot be restored; check the repository with kafkastreams-dr verify -c FILE --backup-id <id>, " +
			damagedManifestWaysOut
	}
	return ""
}

// isDamage reports whether err is damage to the backup found by a reader:
// a manifest that does not decode, a segment that fails its check or does
// not decode after a complete read, an object whose stored bytes fail
// their stored checksum. A transient storage failure is never damage.
func isDamage(err error) bool {
	if storage.IsTransient(err) {
		return false
	}
	_, damage := errors.AsType[*restorer.DamageError](err)
	return damage || errors.Is(err, repository.ErrDamaged) || errors.Is(err, format.ErrCorrupt) || storage.IsCorrupt(err)
}

// damagedSegmentsHint is the next step after damaged segments of backup id
// (read with config file): see every problem, then what does not read them.
func damagedSegmentsHint(file, id string) string {
	if file == "" {
		file = "FILE"
	}
	file = quoteArgs([]string{file})[0]
	return fmt.Sprintf("the backup is damaged: see every damaged object with kafkastreams-dr verify -c %s --deep --backup-id %s; then %s", file, id,
		damagedManifestWaysOutOf(file))
}

// progressHint is the way out of an interrupted backup whose progress.json
// (key, in the repository at location) does not decode
// (repository.ProgressError): no backup resumes it, so delete it; the next
// backup then starts a new run. With location "" (the caller does not
// have it) the hint names the key in the repository without a command.
func progressHint(location, key string) string {
	where := "in the repository (storage.*)"
	switch {
	case strings.HasPrefix(location, "s3://"):
		where = "(aws s3 rm " + strings.TrimSuffix(location, "/") + "/" + key + ")"
	case location != "":
		where = "(rm " + quoteArgs([]string{strings.TrimSuffix(location, "/") + "/" + key})[0] + ")"
	}
	return fmt.Sprintf("no backup can resume the interrupted run, and running the backup again cannot help: delete %s %s; the next backup then starts a new run", key, where)
}

// damagedManifestWaysOutOf is damagedManifestWaysOut with the commands
// naming config file ("" keeps FILE), so that they run as printed.
func damagedManifestWaysOutOf(file string) string {
	if file == "" {
		return damagedManifestWaysOut
	}
	return strings.ReplaceAll(damagedManifestWaysOut, "-c FILE", "-c "+quoteArgs([]string{file})[0])
}

// damagedManifestWaysOut ends every hint after a damaged manifest: the
// steps that do not read that manifest again.
const damagedManifestWaysOut = "restore an older backup by naming it (--backup-id, see kafkastreams-dr list -c FILE), or take a new full backup (kafkastreams-dr backup -c FILE --full)"

// damageExitCode is the exit code of a command that found the backup it
// reads damaged (a manifest that does not decode, segments that fail
// their check) before it wrote anything: 2, refused, as for a restore's
// pre-check. Running the same command again cannot help; a transient
// storage failure exits 1 instead.
const damageExitCode = exitUsage

// filesystemError names storage.path (and storage.prefix) in an error of
// storage.NewFilesystem, e.g. "storage.path /tmp/x: not a directory" or
// "storage.path /srv/x/repo: /srv/x is not a directory".
func filesystemError(s config.Storage, err error) error {
	where := "storage.path " + s.Path
	if s.Prefix != "" {
		where += " (storage.prefix " + s.Prefix + ")"
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", where, err)
	}
	self := false
	if abs, aerr := filepath.Abs(s.Path); aerr == nil && s.Prefix == "" {
		self = filepath.Clean(pe.Path) == abs
	}
	switch {
	case errors.Is(pe.Err, syscall.ENOTDIR) && self:
		return fmt.Errorf("%s: %w", where, pe.Err)
	case errors.Is(pe.Err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %s is %w", where, pe.Path, pe.Err)
	case pe.Op == "mkdir":
		return fmt.Errorf("%s: cannot create %s: %w", where, pe.Path, pe.Err)
	}
	return fmt.Errorf("%s: %s %s: %w", where, pe.Op, pe.Path, pe.Err)
}
