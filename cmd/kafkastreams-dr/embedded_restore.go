package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// runEmbeddedRestore is `restore --embedded`: it starts a new, empty
// in-process 3-broker Kafka-protocol cluster (franz-go kfake), restores the
// repository that `backup --embedded` wrote into it exactly as
// `restore -c FILE --yes` would (changelog strategy, every topic), then
// reads the group's committed offsets back from the new cluster and shows
// them next to the offsets the backup holds: the translation, visible.
func runEmbeddedRestore(ctx context.Context, o *restoreOptions, s *iostreams) error {
	fi, err := os.Stat(o.From)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return withCode(exitUsage, fmt.Errorf("--from %s does not exist", o.From), listBackupsHint(o.From, "embedded"))
	case err != nil:
		return withCode(exitUsage, fmt.Errorf("--from %s: %w", o.From, err), "")
	case !fi.IsDir():
		return withCode(exitUsage, fmt.Errorf("--from %s is not a directory", o.From), listBackupsHint(o.From, "embedded"))
	}
	store, err := storage.NewFilesystem(o.From)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--from %s: %w", o.From, err), "")
	}
	m, err := loadBackupManifest(ctx, store, o.BackupID)
	if err != nil {
		return restoreError(err, o.From, "embedded", true)
	}

	cluster, seeds, err := startEmbeddedCluster(ctx, s.ErrOut, "", "kdr-embedded-restore", false)
	if err != nil {
		return err
	}
	defer cluster.Close()
	target := strings.Join(seeds, ",")
	fmt.Fprintf(s.ErrOut, "restoring backup %s of %q from %s (strategy changelog); the same with a config:\n  kafkastreams-dr restore -c FILE --yes   # FILE: target.bootstrap_servers [%s], storage.path %s\n",
		m.BackupID, m.ApplicationID, o.From, strings.Join(seeds, ", "), o.From)

	var changelogs []string
	if m.Selection != nil {
		changelogs = m.Selection.SourceChangelogTopics
	}
	ro := embeddedRestoreOptions(seeds, m.ApplicationID, changelogs)
	ro.Store, ro.BackupID, ro.Logger = store, m.BackupID, o.Logger
	restore := o.restore
	if restore == nil {
		restore = restorer.Run
	}
	if o.DryRun {
		ro.DryRun = true
		rep, err := restore(ctx, ro)
		if err != nil {
			return restoreError(err, o.From, "embedded", true)
		}
		return writeDryRun(s.Out, o.JSON, &rep.Plan, target)
	}
	rep, err := restore(ctx, ro)
	if err != nil {
		// The cluster goes away with this process: running again starts over.
		var refused *restorer.RefusedError
		if errors.As(err, &refused) {
			return withCode(exitUsage, err, refused.Hint)
		}
		return withCode(exitError, fmt.Errorf("restore: %w", err), "")
	}
	if err := writeReport(s.Out, s.ErrOut, o.JSON, rep, target); err != nil {
		return err
	}
	if rep.Group == nil {
		return nil
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return withCode(exitError, err, "")
	}
	defer cl.Close()
	fetched, err := kadm.NewClient(cl).FetchOffsets(ctx, rep.Group.GroupID)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("read the group %q's offsets back from the new cluster: %w", rep.Group.GroupID, err), "")
	}
	w := s.Out
	if o.JSON {
		w = s.ErrOut
	}
	if mismatches := compareOffsets(w, rep.Group, fetched); len(mismatches) > 0 {
		return withCode(exitError, fmt.Errorf("the new cluster's committed offsets differ from the plan: %s", strings.Join(mismatches, "; ")), "")
	}
	if !o.JSON {
		fmt.Fprintln(w, "\nthe embedded cluster stops with this command; on a real target the application starts next, after its state is wiped (above).")
	}
	return nil
}
