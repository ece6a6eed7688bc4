package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OSO kafka-backup (github.com/osodevops/kafka-backup) is the Rust tool
// issue 13 compares kafkastreams-dr with. The harness runs it as a user
// would, with its own defaults: `kafka-backup backup --config FILE` (a
// one-shot backup, zstd segments) of the case's topics into a new local
// directory each round, and `kafka-backup restore --config FILE` of that
// backup with restore.create_topics: true (the topics created with the
// backup's partition counts and the broker's default configs) after the
// topics and the group were deleted. It restores keys, values, headers
// and timestamps at new offsets, and no group offsets (its
// consumer_group_strategy defaults to skip). Its metrics server (on
// 0.0.0.0:8080 by default) is turned off, the one setting changed.
const (
	// OSOEnv names the environment variable that names OSO's kafka-backup
	// binary; without it, kafka-backup on $PATH is used, if any.
	OSOEnv = "KDR_OSO_KAFKA_BACKUP"
	// OSOHowTo says how to get OSO measured.
	OSOHowTo = "build it from its repository with cargo (`git clone https://github.com/osodevops/kafka-backup`, then `cargo build --release -p kafka-backup-cli` in it), then `" + OSOEnv + "=PATH/target/release/kafka-backup make bench`"

	osoName        = "OSO kafka-backup"
	osoBackupTool  = osoName + " backup → dir"
	osoRestoreTool = osoName + " restore → dir"
)

// FindOSO is the OSO kafka-backup binary to measure, as an absolute path:
// env (the value of OSOEnv) when set, else kafka-backup on $PATH, else ""
// (OSO is not measured). The binary found must answer `--version` as
// kafka-backup does; the error names the variable or the path and how to
// build the binary.
func FindOSO(ctx context.Context, env string) (string, error) {
	p := env
	if p == "" {
		var err error
		if p, err = exec.LookPath("kafka-backup"); err != nil {
			return "", nil
		}
	} else if _, err := exec.LookPath(p); err != nil {
		return "", fmt.Errorf("%s=%q is not an executable file (%v): %s", OSOEnv, env, err, OSOHowTo)
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := osoVersion(ctx, p); err != nil {
		return "", err
	}
	return p, nil
}

// osoVersion is the first line of `bin --version`, e.g. "kafka-backup
// 0.17.4"; an error when it does not run or names another program.
func osoVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil || !strings.HasPrefix(line, "kafka-backup ") {
		return "", fmt.Errorf("%s --version: %q (%v): want OSO's kafka-backup (%s)", bin, line, err, OSOHowTo)
	}
	return line, nil
}

// osoDir is the directory of OSO's backup of round (its configs and, under
// repo, its storage).
func (b *bench) osoDir(round int) string {
	return filepath.Join(b.e.dir, "case-"+b.c.ID, fmt.Sprintf("oso-r%d", round))
}

// osoConfig writes OSO's config of mode (backup or restore) for round's
// backup and returns its path.
func (b *bench) osoConfig(mode string, round int) (string, error) {
	dir := b.osoDir(round)
	if err := os.MkdirAll(filepath.Join(dir, "repo"), 0o755); err != nil {
		return "", err
	}
	var names []string
	for _, t := range b.ds.Topics {
		names = append(names, t.Name)
	}
	cluster := "source"
	if mode == "restore" {
		cluster = "target"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "mode: %s\nbackup_id: kdrbench-%s-r%d\n", mode, b.c.ID, round)
	fmt.Fprintf(&sb, "%s:\n  bootstrap_servers: [%s]\n  topics:\n    include: [%s]\n", cluster, strings.Join(b.e.kafka.Addrs(), ", "), strings.Join(names, ", "))
	fmt.Fprintf(&sb, "storage:\n  backend: filesystem\n  path: %s\n", filepath.Join(dir, "repo"))
	if mode == "restore" {
		sb.WriteString("restore:\n  create_topics: true\n")
	}
	sb.WriteString("metrics:\n  enabled: false\n")
	f := filepath.Join(dir, mode+".yaml")
	return f, os.WriteFile(f, []byte(sb.String()), 0o644)
}

// runOSO runs `kafka-backup MODE --config FILE` for round's backup and
// returns the end of its log (stdout and stderr) too, for the errors.
func (b *bench) runOSO(ctx context.Context, mode string, round int) (Sample, string, error) {
	cfg, err := b.osoConfig(mode, round)
	if err != nil {
		return Sample{}, "", err
	}
	cmd := exec.CommandContext(ctx, b.e.oso, mode, "--config", cfg)
	// Its offset database, when it makes one, goes to $TMPDIR.
	cmd.Env = append(os.Environ(), "TMPDIR="+b.osoDir(round))
	var log tailBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	s, err := Measure(ctx, b.e.o.Wrapper, cmd)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w; its log ends:\n%s", err, log.String())
	}
	return s, log.String(), err
}

func (b *bench) osoBackup(ctx context.Context, round int) (Sample, int64, map[string]float64, error) {
	s, _, err := b.runOSO(ctx, "backup", round)
	if err != nil {
		return Sample{}, 0, nil, err
	}
	stored, err := duBytes(filepath.Join(b.osoDir(round), "repo"))
	return s, stored, nil, err
}

// osoRestore restores round's backup into the deleted and recreated
// topics and checks that they hold as many records as the source: a
// restore that leaves fewer (or more) is an error, never a ratio.
func (b *bench) osoRestore(ctx context.Context, round int) (Sample, int64, map[string]float64, error) {
	if err := b.e.reset(ctx, b.ds); err != nil {
		return Sample{}, 0, nil, err
	}
	s, log, err := b.runOSO(ctx, "restore", round)
	if err != nil {
		return Sample{}, 0, nil, err
	}
	if err := checkRecordCount(ctx, b.e.adm, b.ds, b.c.Records); err != nil {
		return Sample{}, 0, nil, fmt.Errorf("after %s of round %d's backup: %w; its log ends:\n%s", osoRestoreTool, round+1, err, log)
	}
	return s, 0, nil, nil
}

// errWrongCount marks checkRecordCount's finding that the topics hold
// another number of records than the source (or other partitions): a
// restore that did so is not run again.
var errWrongCount = errors.New("not the source's records")

// checkRecordCount checks that ds's topics have their partitions and hold
// want records: the sum over partitions of high watermark minus log start
// offset (records produced without transactions take one offset each).
// Listing the offsets is retried for at most 30 s while it fails with a
// retriable error: the topics were just created by another client, and
// the harness's client may still know the deleted ones.
func checkRecordCount(ctx context.Context, adm *kadm.Client, ds Dataset, want int64) error {
	var names []string
	parts := map[string]int32{}
	for _, t := range ds.Topics {
		names = append(names, t.Name)
		parts[t.Name] = t.Partitions
	}
	var starts, ends kadm.ListedOffsets
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		starts, err = adm.ListStartOffsets(ctx, names...)
		if err == nil {
			err = starts.Error()
		}
		if err != nil {
			err = fmt.Errorf("list the log start offsets of %v: %w", names, err)
		} else {
			ends, err = adm.ListEndOffsets(ctx, names...)
			if err == nil {
				err = ends.Error()
			}
			if err != nil {
				err = fmt.Errorf("list the high watermarks of %v: %w", names, err)
			}
		}
		if err == nil {
			break
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	var got int64
	var errs []error
	for _, name := range names {
		n := int32(len(ends[name]))
		if n != parts[name] {
			errs = append(errs, fmt.Errorf("topic %s has %d partitions, the source %d", name, n, parts[name]))
		}
		for p, end := range ends[name] {
			start, ok := starts.Lookup(name, p)
			if !ok {
				return fmt.Errorf("topic %s partition %d: no log start offset listed", name, p)
			}
			got += end.Offset - start.Offset
		}
	}
	if got != want {
		errs = append(errs, fmt.Errorf("topics %v hold %d records (high watermarks minus log start offsets), the source %d", names, got, want))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", errWrongCount, errors.Join(errs...))
	}
	return nil
}
