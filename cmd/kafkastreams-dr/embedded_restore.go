package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// runEmbeddedRestore is `restore --embedded`: it starts a new, empty
// in-process 3-broker Kafka-protocol cluster (franz-go kfake), restores the
// repository that `backup --embedded` wrote into it exactly as
// `restore -c FILE --yes` would (changelog strategy, every topic), then
// reads the group's committed offsets back from the new cluster and shows
// them next to the offsets the backup holds: the translation, visible.
// It writes nothing into the repository: the restore's lock, journal and
// report are the throwaway cluster's and go away with it (overlayStore).
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
	fs, err := storage.NewFilesystem(o.From)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--from %s: %w", o.From, err), "")
	}
	// No key: an encrypted repository is refused naming its key id
	// (storage.ErrNoKey) instead of being read as damage.
	base := storage.Encrypt(fs, nil, format.IsLockKey)
	// The restore's lock, journal and report go to a scratch directory
	// that goes away with the embedded cluster (overlayStore).
	scratchDir, err := os.MkdirTemp("", "kdr-embedded-restore-")
	if err != nil {
		return withCode(exitError, fmt.Errorf("scratch directory for the embedded restore: %w", err), "")
	}
	defer os.RemoveAll(scratchDir)
	scratch, err := storage.NewFilesystem(scratchDir)
	if err != nil {
		return withCode(exitError, fmt.Errorf("scratch directory for the embedded restore: %w", err), "")
	}
	store := &overlayStore{base: base, scratch: scratch}
	m, err := loadBackupManifest(ctx, store, o.BackupID)
	if ke, ok := errors.AsType[*storage.KeyError](err); ok {
		// Not wrapped: keyHint would name a config file there is none of.
		return withCode(exitUsage, fmt.Errorf("--from %s: the repository is encrypted (%s needs key id %s): restore --embedded reads plaintext repositories only", o.From, ke.Key, ke.KeyID),
			fmt.Sprintf("restore it with a config: kafkastreams-dr restore -c CONFIG --yes, CONFIG with storage.path %s, storage.encryption.key_file (or key_env) set to the key with id %s and target.bootstrap_servers", o.From, ke.KeyID))
	}
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
	ro.Precheck = o.Precheck
	restore := o.restore
	if restore == nil {
		restore = restorer.Run
	}
	if o.DryRun {
		ro.DryRun, ro.DryRunPrecheck = true, o.precheckGiven
		rep, err := restore(ctx, ro)
		if err != nil {
			return embeddedRestoreError(err, o.From, true)
		}
		return writeDryRun(s.Out, o.JSON, &rep.Plan, target, ro)
	}
	rep, err := restore(ctx, ro)
	if sde, ok := errors.AsType[*restorer.StateDigestError](err); ok && rep != nil {
		if werr := writeReport(s.Out, s.ErrOut, o.JSON, rep, target); werr != nil {
			return werr
		}
		return withCode(exitError, fmt.Errorf("restore: %w", err), stateDigestHint("", sde.BackupID))
	}
	if err != nil {
		return embeddedRestoreError(err, o.From, false)
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

// embeddedRestoreError maps a failed embedded restore of the repository
// directory from as restoreError maps a restore with a config: a damaged
// backup exits 2 when found before the first write (1 after it), with the
// verify and older --backup-id steps, the backup's id and a config for the
// directory; a refusal exits 2 with its hint. Other errors exit 1 with no
// resume hint: the cluster goes away with this process, so running again
// starts over.
func embeddedRestoreError(err error, from string, dryRun bool) error {
	if damage, ok := errors.AsType[*restorer.DamageError](err); ok {
		id := damage.BackupID
		if id == "" {
			id = "ID"
		}
		h := fmt.Sprintf("the backup is damaged: the same restore fails again. See every problem with kafkastreams-dr verify -c FILE --deep --backup-id %s "+
			"(FILE: a config with storage.backend filesystem and storage.path %s), and restore an older backup with --backup-id (ls %s/%s shows them)",
			id, from, strings.TrimSuffix(from, "/"), format.BackupsPrefix())
		if damage.Written {
			h += "; the embedded cluster held part of this restore and is gone with it (--precheck deep checks every record before the first write)"
		} else {
			h += "; nothing was written"
		}
		return withCode(damageExit(damage), fmt.Errorf("restore: %w", err), h)
	}
	if dryRun {
		return restoreError(err, from, "embedded", true)
	}
	var refused *restorer.RefusedError
	if errors.As(err, &refused) {
		return withCode(exitUsage, err, refused.Hint)
	}
	return withCode(exitError, fmt.Errorf("restore: %w", err), "")
}
