package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
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
	cluster, seeds, err := startEmbeddedCluster(ctx, s.ErrOut, "", "kdr-embedded", true)
	if err != nil {
		return err
	}
	defer cluster.Close()

	store, err := storage.NewFilesystem(o.Out)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--out %s: %w", o.Out, err), "choose a directory you can write to")
	}
	fmt.Fprintf(s.ErrOut, "the equivalent config:\n%s\n", indent(embeddedConfig(seeds, o.Out)))
	bo := sampleBackupOptions(seeds)
	bo.Store, bo.Logger = store, o.Logger
	res, err := backup.Run(ctx, bo)
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

// startEmbeddedCluster starts the cluster of an --embedded run, the one
// helper every embedded path (backup, restore and drill --embedded) starts
// its clusters with: 3 brokers (franz-go kfake) on loopback ports, with
// Kafka cluster ID id, announced on w. role is "" for the one cluster of
// backup or restore --embedded ("embedded cluster: ..."), "source" or
// "target" for the two of drill --embedded ("source cluster: ...").
//
// With seed the cluster holds the quickstart scenario: the sample Kafka
// Streams application order-processor (internal/sample: its input,
// changelog, repartition and output topics and its group's committed
// offsets), then the compacted topics are compacted as the broker's log
// cleaner would (holes in their offsets); sampleBackupOptions backs it up.
// Without seed it is a new, empty cluster to restore into.
//
// It returns the cluster, which the caller closes, and its bootstrap
// servers (host:port on 127.0.0.1). Errors carry exit code 1 and name the
// cluster ("start the embedded source cluster: ...").
func startEmbeddedCluster(ctx context.Context, w io.Writer, role, id string, seed bool) (*kfake.Cluster, []string, error) {
	label, what := "embedded cluster", "embedded cluster"
	if role != "" {
		label, what = role+" cluster", "embedded "+role+" cluster"
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID(id))
	if err != nil {
		return nil, nil, withCode(exitError, fmt.Errorf("start the %s: %w", what, err), "")
	}
	seeds := cluster.ListenAddrs()
	if !seed {
		fmt.Fprintf(w, "%s: a new, empty cluster of 3 brokers (kfake) at %s\n", label, strings.Join(seeds, ","))
		return cluster, seeds, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		cluster.Close()
		return nil, nil, withCode(exitError, err, "")
	}
	fmt.Fprintf(w, "%s: 3 brokers (kfake) at %s; seeding the sample application %q\n", label, strings.Join(seeds, ","), sample.AppID)
	err = sample.Seed(ctx, cl)
	cl.Close()
	if err != nil {
		cluster.Close()
		return nil, nil, withCode(exitError, fmt.Errorf("seed the %s: %w", what, err), "")
	}
	cluster.Compact() // like the broker's log cleaner: holes in the compacted topics
	return cluster, seeds, nil
}

// sampleBackupOptions are the backup.Options of the quickstart scenario
// (startEmbeddedCluster with seed) at seeds: the sample application's id,
// source changelogs and topic filters, source_cluster_id "embedded", this
// build's version; what embeddedConfig writes as YAML. Store and Logger are
// filled by the caller.
func sampleBackupOptions(seeds []string) backup.Options {
	return backup.Options{
		Source: []kgo.Opt{kgo.SeedBrokers(seeds...)}, ApplicationID: sample.AppID,
		SourceChangelogTopics: sample.SourceChangelogs, Include: sample.Include, Exclude: sample.Exclude,
		SourceClusterID: "embedded", ToolVersion: version,
	}
}

// embeddedRestoreOptions are the restorer.Options of an --embedded restore
// into the new cluster at seeds: every topic, the changelog strategy, the
// application and source changelogs the backup was taken with. Store,
// BackupID and Logger are filled by the caller.
func embeddedRestoreOptions(seeds []string, applicationID string, sourceChangelogs []string) restorer.Options {
	return restorer.Options{
		Target: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Strategy: restorer.StrategyChangelog,
		ApplicationID: applicationID, SourceChangelogTopics: sourceChangelogs,
	}
}

// checkEmptyRepository refuses an --out that already holds something: each
// quickstart starts a new cluster, whose topics would not continue the
// earlier backups' chains.
func checkEmptyRepository(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return withCode(exitUsage, notADirectory(dir), "choose a new directory for the repository (--out DIR); it is created")
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

// notADirectory is the error of an --out that is a file, or lies under
// one: it names the file (the nearest existing ancestor of dir).
func notADirectory(dir string) error {
	file := filepath.Clean(dir)
	for range 64 { // a path deeper than that is named as given
		if _, err := os.Stat(file); err == nil {
			break
		}
		parent := filepath.Dir(file)
		if parent == file {
			break
		}
		file = parent
	}
	if file == filepath.Clean(dir) {
		return fmt.Errorf("--out %s is a file, not a directory", dir)
	}
	return fmt.Errorf("--out %s: %s is a file, not a directory", dir, file)
}
