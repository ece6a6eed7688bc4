package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
)

// configKeysHelp documents every config key; config validate shows it.
const configKeysHelp = `CONFIG FILE (YAML; ${VAR} in a value expands from the environment, an unset
VAR is an error, a VAR set to "" a warning (an error in storage.path, prefix, bucket
and the TLS and password files), $${ is a literal "${"; a regular file of at most
1 MiB, as are the files it names; paths, prefixes and buckets are YAML strings)
  application_id            the Kafka Streams application.id (one application per file).
                            Optional: without it topics are classified by name suffix
                            only and no consumer-group offsets are read (a warning).
                            Present but empty (an empty ${APP}, "") is an error.
                            One repository (storage.prefix) per application.
  source_changelog_topics   input topics a store reuses as its changelog
                            (topology.optimization=all / reuse.ktable.source.topics)
  other_application_ids     application.ids of other Streams apps whose internal topics
                            start with this one's prefix (orders-app-v1 beside orders-app):
                            never selected (KAFKA-14922). Consumer groups on the cluster
                            count too; an app without a group is known only from here.
  internal_topic_prefixes   this app's internal-topic prefixes when not just application_id
                            (named topologies: <application.id>-<topology>); they replace it
  topology_file             a file holding the app's Topology#describe() text (relative to
                            the config file; needs application_id): it classifies topics
                            (a role each) and, without source.topics.include, selects them;
                            topics/backup --topology FILE overrides it. Without it a streams
                            group's topology on the broker serves (KIP-1071)
  dead_letter_queue_topics  the app's dead-letter queue topics (KIP-1034,
                            errors.dead.letter.queue.topic.name): outputs, role dead-letter
  source:                   the cluster to back up (required)
    bootstrap_servers       list of host:port (required)
    client_id               Kafka client.id (default kafkastreams-dr)
    request_timeout         bound on one broker request, a Go duration (default 30s,
                            Kafka's request.timeout.ms); connecting: at most 10s
    retry_timeout           how long retriable failures (broker away, no leader, no
                            coordinator, empty fetches) are retried before the run
                            fails naming the broker (default 2m; keep it above a
                            broker restart); an unreachable cluster (refused or
                            silent) fails no earlier than retry_timeout and no later
                            than retry_timeout + request_timeout
    security:
      tls:                  enabled, ca_file, cert_file, key_file, server_name,
                            insecure_skip_verify (any file turns TLS on)
      sasl:                 mechanism (PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512), username,
                            password (write ${KAFKA_PASSWORD}) or password_file
                            (relative file names are relative to the config file's
                            directory, like storage.path)
    topics:
      include               globs ("app-*-changelog") or ~regex, anchored; optional when a
                            topology is known (it selects then); neither: refused (exit 2)
      exclude               same syntax; exclude beats include (an exclude that removes
                            every include, e.g. include [clicks] and exclude [clicks], is an
                            error; one that removes a literal include, a warning)
      allow_missing         a literal include that does not exist is a warning (default false)
      allow_topology_mismatch  a topology input or changelog that include/exclude leave out
                            is a warning, not a refusal (default false)
  target:                   the cluster a restore writes to (optional; same keys as source,
                            without topics: restore --topics selects, target.topics is refused)
  storage:                  where the backup repository lives (required)
    backend                 s3 | filesystem (required)
    bucket, prefix, region  s3 (bucket required); credentials from the AWS default chain
    endpoint, path_style    s3: S3-compatible stores (MinIO, Ceph, ...)
    request_timeout         s3: each connect, header wait, read and write of a request
                            (a Go duration, default 30s)
    retry_timeout           s3: how long a failing request is retried with backoff and a
                            cut download resumed, then exit 1 (default 2m)
    upload_buffer_bytes     s3: memory all uploads share for 8 MiB part buffers, e.g.
                            "48MiB" (default; at least 8MiB); an upload waits for a free one
    path                    filesystem: the directory (required; prefix is a subdirectory;
                            a relative path is relative to the config file's directory;
                            a leading ~ is not expanded and is refused: write ${HOME}/...)
                            prefix: no ".." segment
  backup:
    compression             zstd (default; the only one for now)
    compression_level       the zstd level of the segments: fastest, default (the default),
                            better or best (klauspost/compress's levels, about zstd -1, -3,
                            -7, -11); restore needs no setting
    source_cluster_id       free-form name of the source cluster, kept in the manifest
    segment_kind            record (default: every record re-encoded into zstd segments) or
                            batch (the broker's record batches stored as fetched, compressed
                            by their producers: no compression work; format_version 2)
    segment_max_bytes       uncompressed bytes per segment, e.g. 67108864 or "64MiB" (default)
    concurrency             partitions copied at once (default 4)
    cut_attempts            tries to prove the cut consistent with the application's
                            transactions before keeping it unproven (default 100, at least 1)
    cut_timeout             time all those tries may take (a Go duration, default 30s,
                            at least 100ms; checked between tries, the first always runs)
  schema_registry:          back up the Schema Registry's storage topic with the app and
                            restore it before every other topic, so the schema ids in the
                            records resolve on the target (schema_registry: {} enables it)
    topic                   the storage topic (default _schemas: Confluent's kafkastore.topic);
                            selected whatever source.topics says; must exist on the source
`

// configValidateOptions are the flags of `config validate`.
type configValidateOptions struct {
	ConfigFile string
}

func newConfigCmd(g *globalOptions, s *iostreams, runF func(context.Context, *configValidateOptions, *iostreams) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check config files",
		Long:  "Check kafkastreams-dr config files.\n\n" + configKeysHelp,
	}
	commandGroup(cmd)
	cmd.AddCommand(newConfigValidateCmd(g, s, runF))
	return cmd
}

func newConfigValidateCmd(g *globalOptions, s *iostreams, runF func(context.Context, *configValidateOptions, *iostreams) error) *cobra.Command {
	o := &configValidateOptions{}
	cmd := &cobra.Command{
		Use:   "validate -c FILE",
		Short: "Check a config file without connecting to anything",
		Long: `Check a config file: YAML syntax, unknown keys, types, required keys, topic
patterns, ${VAR} references, and that the TLS and SASL password files it names can
be read. Nothing connects to Kafka or to storage.

Prints "config OK" and a summary on stdout, and warnings on stderr; or every
problem found, each with its key and line, and exits 2.

` + configKeysHelp,
		Example: `  kafkastreams-dr config validate -c order-processor.yaml`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runConfigValidate(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file to check (required)")
	return cmd
}

func runConfigValidate(_ context.Context, o *configValidateOptions, s *iostreams) error {
	// Also read the files the clients would read, so that a missing
	// password file shows up now rather than at 3 a.m., in the same list
	// as every other problem.
	cfg, err := config.LoadAndCheckFiles(o.ConfigFile)
	if err != nil {
		return withCode(exitUsage, err, "")
	}

	for _, w := range cfg.Warnings() {
		fmt.Fprintf(s.ErrOut, "warning: %s\n", w)
	}
	printConfigSummary(s.Out, cfg)
	return nil
}
