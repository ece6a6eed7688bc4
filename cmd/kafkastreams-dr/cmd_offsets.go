package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// offsetsShowOptions are the flags of `offsets show`.
type offsetsShowOptions struct {
	ConfigFile string
	BackupID   string // a backup id or "latest"
	JSON       bool

	Logger *slog.Logger
}

// offsetsTranslateOptions are the flags of `offsets translate`.
type offsetsTranslateOptions struct {
	ConfigFile string
	BackupID   string
	Strategy   restorer.Strategy
	ToTime     *time.Time
	JSON       bool

	Logger *slog.Logger
}

const offsetsKeysHelp = `CONFIG KEYS USED
  storage.* (backend, bucket, prefix, region, endpoint, path_style, request_timeout,
  retry_timeout, path): the repository. S3 credentials come from the AWS default chain.
  No cluster is contacted.`

func newOffsetsCmd(g *globalOptions, s *iostreams,
	showF func(context.Context, *offsetsShowOptions, *iostreams) error,
	translateF func(context.Context, *offsetsTranslateOptions, *iostreams) error,
) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "offsets",
		Short: "Show a backup's group offsets and how a restore translates them",
		Long: `Show the committed offsets of the application.id consumer group that a backup
holds, and how a restore translates them to the restored topics' numbering.`,
	}
	commandGroup(cmd)
	cmd.AddCommand(newOffsetsShowCmd(g, s, showF), newOffsetsTranslateCmd(g, s, translateF))
	return cmd
}

func newOffsetsShowCmd(g *globalOptions, s *iostreams, runF func(context.Context, *offsetsShowOptions, *iostreams) error) *cobra.Command {
	o := &offsetsShowOptions{}
	cmd := &cobra.Command{
		Use:   "show -c FILE",
		Short: "Show the group offsets a backup holds",
		Long: `Show the committed offsets of the application.id consumer group as the backup read
them from the source cluster, before it captured the topics' ends: topic, partition,
offset and the topic's class (offsets on repartition topics are not restored), with
the group's state and type at that time. Reads the backup's manifest only.

` + offsetsKeysHelp,
		Example: `  kafkastreams-dr offsets show -c order-processor.yaml
  kafkastreams-dr offsets show -c order-processor.yaml --backup-id 20240501T120000.000Z-1a2b3c4d --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if err := checkBackupIDFlag(o.BackupID); err != nil {
				return err
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runOffsetsShow(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.BackupID, "backup-id", "latest", `backup to read: an id or "latest", the latest complete backup`)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the group as JSON")
	return cmd
}

func newOffsetsTranslateCmd(g *globalOptions, s *iostreams, runF func(context.Context, *offsetsTranslateOptions, *iostreams) error) *cobra.Command {
	o := &offsetsTranslateOptions{}
	var strategy, toTime string
	cmd := &cobra.Command{
		Use:   "translate -c FILE",
		Short: "Show how a restore would translate the backup's group offsets",
		Long: `Show, without any cluster, how a restore of the backup into empty topics would
translate the group's committed offsets: each offset O maps to the new offset of the
first restored record whose original offset is >= O, or to the restored partition's
end when there is none (never past it). Offsets on topics a restore leaves out
(repartition topics; changelogs with --strategy rebuild) are dropped, with the reason.
It decodes the segments of the partitions that have committed offsets.

--strategy and --to-time mean what they mean for "kafkastreams-dr restore", and what a
restore refuses (e.g. --to-time on changelogs) is refused here too (exit 2): "offsets
translate refused, as a restore with the same flags would be: ...", with the restore
--dry-run that shows the point-in-time plan.

` + offsetsKeysHelp,
		Example: `  kafkastreams-dr offsets translate -c order-processor.yaml
  kafkastreams-dr offsets translate -c order-processor.yaml --strategy rebuild --to-time 2024-05-01T12:00:00Z`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if err := checkBackupIDFlag(o.BackupID); err != nil {
				return err
			}
			var err error
			if o.Strategy, err = parseStrategy(strategy); err != nil {
				return &usageError{err}
			}
			if o.ToTime, err = parseToTime(toTime); err != nil {
				return &usageError{err}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runOffsetsTranslate(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().StringVar(&o.BackupID, "backup-id", "latest", `backup to read: an id or "latest", the latest complete backup`)
	cmd.Flags().StringVar(&strategy, "strategy", string(restorer.StrategyChangelog), "changelog or rebuild, as for restore")
	cmd.Flags().StringVar(&toTime, "to-time", "", "cut as for restore: RFC 3339 or epoch milliseconds")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the translation as JSON")
	return cmd
}

func checkBackupIDFlag(id string) error {
	if id != "latest" && !format.ValidBackupID(id) {
		return &usageError{fmt.Errorf(`invalid --backup-id %q: want "latest" or a backup id like 20240501T120000.000Z-1a2b3c4d`, id)}
	}
	return nil
}

// latestBackupID returns the greatest id among the repository's complete
// backups (an error wrapping repository.ErrNoBackup when there is none).
func latestBackupID(ctx context.Context, store storage.Backend) (string, error) {
	m, err := repository.Manifest(ctx, store, "latest")
	if err != nil {
		return "", err
	}
	return m.BackupID, nil
}

// loadBackupManifest loads the manifest of backup id ("" or "latest" for
// the latest complete backup); see repository.Manifest.
func loadBackupManifest(ctx context.Context, store storage.Backend, id string) (*format.Manifest, error) {
	return repository.Manifest(ctx, store, id)
}

// openRepository loads the config (printing its warnings about storage
// only: loadRepositoryConfig) and opens its repository, read-only when
// readOnly names the command (see openExistingStorage).
func openRepository(ctx context.Context, file string, s *iostreams, readOnly string) (storage.Backend, error) {
	cfg, err := loadRepositoryConfig(file, s)
	if err != nil {
		return nil, err
	}
	store, err := openExistingStorage(ctx, cfg.Storage, readOnly)
	if err != nil {
		return nil, storageError(err)
	}
	return store, nil
}

// repositoryError maps an error reading a backup: no such backup exits 2
// with how to list the backups, a damaged manifest exits 2 (damageExitCode);
// anything else exits 1, with the next step when the error is a transient
// storage failure (repositoryHint).
func repositoryError(err error, location string) error {
	var refused *restorer.RefusedError
	switch {
	case errors.Is(err, restorer.ErrNoBackup):
		return withCode(exitUsage, err, listBackupsHint(location, "list"))
	case errors.As(err, &refused):
		return withCode(exitUsage, err, refused.Hint)
	case errors.Is(err, context.Canceled):
		return err
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, repository.ErrDamaged) && !storage.IsTransient(err) {
		return withCode(damageExitCode, err, repositoryHint(err, location))
	}
	if isDamage(err) {
		// A damaged segment (offsets translate reads them): new-user test,
		// exit 1 and no hint.
		return withCode(damageExitCode, err, damagedSegmentsHint("", "<id>"))
	}
	return withCode(exitError, err, repositoryHint(err, location))
}

func runOffsetsShow(ctx context.Context, o *offsetsShowOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, "offsets show")
	if err != nil {
		return err
	}
	m, err := loadBackupManifest(ctx, store, o.BackupID)
	if err != nil {
		return repositoryError(err, store.Location())
	}
	return writeGroupOffsets(s.Out, o.JSON, m)
}

func runOffsetsTranslate(ctx context.Context, o *offsetsTranslateOptions, s *iostreams) error {
	store, err := openRepository(ctx, o.ConfigFile, s, "offsets translate")
	if err != nil {
		return err
	}
	id := o.BackupID
	if id == "" || id == "latest" {
		if id, err = latestBackupID(ctx, store); err != nil {
			return repositoryError(err, store.Location())
		}
	}
	gp, err := restorer.PredictOffsets(ctx, store, id, o.Strategy, o.ToTime)
	if refused, ok := errors.AsType[*restorer.RefusedError](err); ok {
		m, _ := loadBackupManifest(ctx, store, id) // read above: nil only if the store fails now
		return translateRefused(refused, o, m)
	}
	if err != nil && isDamage(err) && !errors.Is(err, repository.ErrDamaged) {
		// Damaged segments of backup id: the hint names both, and the file.
		return withCode(damageExitCode, err, damagedSegmentsHint(o.ConfigFile, id))
	}
	if err != nil {
		return repositoryError(err, store.Location())
	}
	return writeOffsetTranslation(s.Out, o.JSON, id, o.Strategy, o.ToTime, gp)
}

// translateRefused words a restore's refusal (restorer.RefusedError) for
// offsets translate, which restores nothing: "offsets translate refused,
// as a restore with the same flags would be: ...". After --to-time the
// hint runs as printed: the dry run of the point-in-time rebuild of
// backup m (rebuild leaves the changelogs out and cuts source-topic
// changelogs as inputs), which shows the plan and the translated offsets.
func translateRefused(e *restorer.RefusedError, o *offsetsTranslateOptions, m *format.Manifest) error {
	reasons := "\n  - " + strings.Join(e.Reasons, "\n  - ")
	if len(e.Reasons) == 1 {
		reasons = " " + e.Reasons[0]
	}
	err := fmt.Errorf("offsets translate refused, as a restore with the same flags would be:%s", reasons)
	if o.ToTime == nil {
		return withCode(exitUsage, err, e.Hint)
	}
	file := quoteArgs([]string{o.ConfigFile})[0]
	at := " --to-time " + o.ToTime.UTC().Format(time.RFC3339Nano)
	backupID := ""
	if o.BackupID != "" && o.BackupID != "latest" {
		backupID = " --backup-id " + o.BackupID
	}
	if o.Strategy == restorer.StrategyRebuild || m == nil {
		return withCode(exitUsage, err, e.Hint)
	}
	// Rebuild leaves the changelogs out itself and cuts source-topic
	// changelogs as the inputs they are there: no --topics needed.
	return withCode(exitUsage, err, fmt.Sprintf("a point-in-time restore is a rebuild, which leaves changelogs out and cuts source-topic changelogs as inputs; "+
		"see its plan and translated offsets with kafkastreams-dr restore -c %s%s --dry-run --strategy rebuild%s",
		file, backupID, at))
}
