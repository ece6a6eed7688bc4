package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		if o.JSON {
			return writeJSON(s.Out, &rep.Plan)
		}
		printPlan(s.Out, &rep.Plan, target)
		fmt.Fprintf(s.Out, "\ndry run: nothing was written to %s\n", target)
		return nil
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
	if err := writeReport(s, o.JSON, rep, target); err != nil {
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

// compareOffsets prints, for every committed offset of the backup, what the
// new cluster's group holds now ("orders/0: committed 12 on the lost
// cluster -> 12 on the new one"), and returns how it differs from the
// plan: a committed offset that is not the translated one, or an offset
// committed that the plan dropped.
func compareOffsets(w io.Writer, g *restorer.GroupPlan, fetched kadm.OffsetResponses) []string {
	fmt.Fprintf(w, "\ngroup %s, read back from the new cluster:\n", g.GroupID)
	var bad []string
	for _, op := range g.Offsets {
		got, ok := fetched.Lookup(op.Topic, op.Partition)
		have := ok && got.Err == nil && got.At >= 0
		tp := fmt.Sprintf("%s/%d", op.Topic, op.Partition)
		switch {
		case op.Action == "commit" && have:
			fmt.Fprintf(w, "  %s: committed %d on the lost cluster -> %d on the new one\n", tp, op.Committed, got.At)
			if got.At != op.Translated {
				bad = append(bad, fmt.Sprintf("%s is %d, the plan says %d", tp, got.At, op.Translated))
			}
		case op.Action == "commit":
			fmt.Fprintf(w, "  %s: committed %d on the lost cluster -> MISSING on the new one\n", tp, op.Committed)
			bad = append(bad, fmt.Sprintf("%s was not committed (the plan says %d)", tp, op.Translated))
		case have:
			fmt.Fprintf(w, "  %s: committed %d on the lost cluster -> %d on the new one, but the plan drops it\n", tp, op.Committed, got.At)
			bad = append(bad, fmt.Sprintf("%s is %d, the plan drops it", tp, got.At))
		default:
			why, _, _ := strings.Cut(op.Note, ":")
			fmt.Fprintf(w, "  %s: committed %d on the lost cluster -> none on the new one (dropped: %s)\n", tp, op.Committed, why)
		}
	}
	return bad
}
