package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// runEmbeddedBackup is `backup --embedded`: it starts an in-process
// 3-broker Kafka-protocol cluster (franz-go kfake) on loopback ports, seeds
// it with the sample Streams application order-processor, and backs that up
// into a local directory exactly as `backup -c FILE` would with the
// equivalent config (printed below).
func runEmbeddedBackup(ctx context.Context, o *backupOptions, s *iostreams) error {
	if err := checkEmptyRepository(o.Out); err != nil {
		return err
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID("kdr-embedded"))
	if err != nil {
		return withCode(exitError, fmt.Errorf("start the embedded cluster: %w", err), "")
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return withCode(exitError, err, "")
	}
	defer cl.Close()
	fmt.Fprintf(s.ErrOut, "embedded cluster: 3 brokers (kfake) at %s; seeding the sample application %q\n", strings.Join(seeds, ","), sample.AppID)
	if err := sample.Seed(ctx, cl); err != nil {
		return withCode(exitError, fmt.Errorf("seed the embedded cluster: %w", err), "")
	}
	cluster.Compact() // like the broker's log cleaner: holes in the compacted topics

	store, err := storage.NewFilesystem(o.Out)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--out %s: %w", o.Out, err), "choose a directory you can write to")
	}
	fmt.Fprintf(s.ErrOut, "the equivalent config:\n%s\n", indent(embeddedConfig(seeds, o.Out)))
	res, err := backup.Run(ctx, backup.Options{
		Source: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Store: store,
		ApplicationID: sample.AppID, SourceChangelogTopics: sample.SourceChangelogs,
		Include: sample.Include, Exclude: sample.Exclude, SourceClusterID: "embedded",
		ToolVersion: version, Logger: o.Logger,
	})
	if err != nil {
		return backupError(err, "<the equivalent config above>")
	}
	if err := reportBackup(ctx, s, o.JSON, store, res); err != nil {
		return err
	}
	if !o.JSON {
		fmt.Fprintf(s.Out, "\nlook inside: ls -R %s   (the manifest is JSON; docs/FORMAT.md describes every file)\n", o.Out)
	}
	return nil
}

// checkEmptyRepository refuses an --out that already holds something: each
// quickstart starts a new cluster, whose topics would not continue the
// earlier backups' chains.
func checkEmptyRepository(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--out %s: %w", dir, err), "")
	}
	if len(entries) > 0 {
		return withCode(exitUsage, fmt.Errorf("--out %s is not empty: each --embedded run starts a new cluster, so it needs a new repository", dir),
			fmt.Sprintf("choose another directory (--out DIR) or remove %s", dir))
	}
	return nil
}

func embeddedConfig(seeds []string, out string) string {
	return fmt.Sprintf(`application_id: %s
source_changelog_topics: [%s]
source:
  bootstrap_servers: [%s]
  topics:
    include: [%s]
storage:
  backend: filesystem
  path: %s
backup:
  source_cluster_id: embedded
`, sample.AppID, strings.Join(sample.SourceChangelogs, ", "), strings.Join(seeds, ", "), quoteAll(sample.Include), out)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
