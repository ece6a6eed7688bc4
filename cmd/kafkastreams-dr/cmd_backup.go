package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// backupOptions are the flags of `backup`.
type backupOptions struct {
	ConfigFile string
	JSON       bool

	Logger *slog.Logger
}

func newBackupCmd(g *globalOptions, s *iostreams, runF func(context.Context, *backupOptions, *iostreams) error) *cobra.Command {
	o := &backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup -c FILE",
		Short: "Back up the application's topics and group offsets",
		Long: `Back up one Kafka Streams application into the repository named by the config:
first the committed offsets of the application.id consumer group, then every
partition of the selected topics up to the end captured after those offsets
(read_committed), as zstd-compressed segments, and the manifest last. An
interrupted backup is resumed by the next run. Repartition topics are never
backed up; see "kafkastreams-dr topics -c FILE" for what is selected and why.

Prints a summary of the backup on stdout (--json for machines); logs go to stderr.

CONFIG KEYS USED
  application_id, source_changelog_topics, source.* (bootstrap_servers, client_id,
  security, topics.include, topics.exclude, topics.allow_missing), storage.*
  (backend, bucket, prefix, region, endpoint, path_style, path), backup.*
  (compression, source_cluster_id, segment_max_bytes, concurrency).
  S3 credentials come from the AWS default chain (AWS_* environment variables,
  shared config and credentials files, web identity / IRSA, instance roles).
  See "kafkastreams-dr config validate --help" for every key.`,
		Example: `  kafkastreams-dr backup -c order-processor.yaml
  AWS_PROFILE=backup kafkastreams-dr backup -c order-processor.yaml --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runBackup(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// backupOptionsFromConfig maps the config onto backup.Options; Source,
// Store and Logger are filled by the caller.
func backupOptionsFromConfig(cfg *config.Config) backup.Options {
	return backup.Options{
		ApplicationID:         cfg.ApplicationID,
		SourceChangelogTopics: cfg.SourceChangelogTopics,
		Include:               cfg.Source.Topics.Include,
		Exclude:               cfg.Source.Topics.Exclude,
		AllowMissingTopics:    cfg.Source.Topics.AllowMissing,
		SourceClusterID:       cfg.Backup.SourceClusterID,
		SegmentMaxBytes:       int64(cfg.Backup.SegmentMaxBytes),
		Concurrency:           cfg.Backup.Concurrency,
	}
}

func runBackup(ctx context.Context, o *backupOptions, s *iostreams) error {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	bo := backupOptionsFromConfig(cfg)
	if bo.Source, err = sourceClientOptions(cfg); err != nil {
		return err
	}
	bo.Logger = o.Logger
	if bo.Store, err = openStorage(ctx, cfg.Storage); err != nil {
		return withCode(exitError, fmt.Errorf("open storage %s: %w", cfg.Storage.Describe(), err), "")
	}
	backup.ToolVersion = version

	o.Logger.Info("backup starting", "application_id", cfg.ApplicationID, "repository", bo.Store.Location())
	res, err := backup.Run(ctx, bo)
	if err != nil {
		var missing *topicfilter.MissingTopicsError
		switch {
		case errors.As(err, &missing):
			return withCode(exitUsage, err, fmt.Sprintf("see what the filters match with: kafkastreams-dr topics -c %s", cfg.File()))
		case errors.Is(err, backup.ErrLocked):
			return withCode(exitUsage, err, "another backup of this repository is running; wait for it to finish")
		}
		return withCode(exitError, fmt.Errorf("backup: %w", err), fmt.Sprintf("run it again to resume; check the cluster with: kafkastreams-dr topics -c %s", cfg.File()))
	}

	if o.JSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(backupJSON{
			BackupID: res.BackupID, ParentID: res.ParentID, Repository: bo.Store.Location(),
			Manifest: res.Manifest, Topics: res.Topics, Partitions: res.Partitions,
			Records: res.Records, Bytes: res.Bytes,
		})
	}
	printBackupResult(s, res, bo.Store.Location())
	return nil
}

// backupJSON is the --json output of backup.
type backupJSON struct {
	BackupID   string `json:"backup_id"`
	ParentID   string `json:"parent_id,omitempty"`
	Repository string `json:"repository"`
	Manifest   string `json:"manifest"`
	Topics     int    `json:"topics"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records"`
	Bytes      int64  `json:"bytes"`
}

func printBackupResult(s *iostreams, r *backup.Result, location string) {
	fmt.Fprintf(s.Out, "backup %s complete\n", r.BackupID)
	if r.ParentID != "" {
		fmt.Fprintf(s.Out, "  parent       %s\n", r.ParentID)
	}
	fmt.Fprintf(s.Out, "  repository   %s\n", location)
	fmt.Fprintf(s.Out, "  manifest     %s\n", r.Manifest)
	fmt.Fprintf(s.Out, "  topics       %d (%d partitions)\n", r.Topics, r.Partitions)
	fmt.Fprintf(s.Out, "  records      %d\n", r.Records)
	fmt.Fprintf(s.Out, "  bytes        %d (compressed)\n", r.Bytes)
}
