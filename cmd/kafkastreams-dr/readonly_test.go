package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// treeSnapshot is every file and directory under root with its mode, size,
// modification time and (files) SHA-256: two equal snapshots mean nothing
// under root was created, replaced, removed or touched.
func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		snap[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestReadCommandsWriteNothing: every command that only reads the
// repository opens it read-only (storage.ReadOnly) and leaves it exactly as
// it was, on a repository that holds a backup, a restore report and a
// restore journal: list, describe, offsets show and translate, verify
// (--deep too), estimate, state check, and the dry runs of prune and
// restore.
func TestReadCommandsWriteNothing(t *testing.T) {
	repo := embeddedRepository(t)
	target := testkit.StartKfake(t, 3)
	cfg := restoreConfig(t, target.Addrs(), repo)
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", cfg, "--yes"); code != exitOK {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stateDir := t.TempDir()
	writeState(t, filepath.Join(stateDir, "order-processor", "1_0", ".checkpoint"),
		"0\n1\norder-processor-order-totals-store-changelog 0 2\n")
	before := treeSnapshot(t, repo)

	tests := []struct {
		name string
		args []string
		code int
	}{
		{"list", []string{"list", "-c", cfg}, exitOK},
		{"describe", []string{"describe", "-c", cfg}, exitOK},
		{"offsets show", []string{"offsets", "show", "-c", cfg}, exitOK},
		{"offsets translate", []string{"offsets", "translate", "-c", cfg}, exitOK},
		{"verify", []string{"verify", "-c", cfg}, exitOK},
		{"verify --deep", []string{"verify", "-c", cfg, "--deep"}, exitOK},
		{"estimate", []string{"estimate", "-c", cfg, "--no-cluster"}, exitOK},
		{"state check", []string{"state", "check", "--state-dir", stateDir, "-c", cfg}, exitUndecided}, // written after the restore: unknown (exit 4)
		{"prune --dry-run", []string{"prune", "-c", cfg, "--keep-last", "1", "--dry-run"}, exitOK},
		{"restore --dry-run", []string{"restore", "-c", cfg, "--dry-run"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--log-level", "warn"}, tt.args...)...)
			if code != tt.code || strings.Contains(stdout+stderr, storage.ErrReadOnly.Error()) {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			after := treeSnapshot(t, repo)
			for p, v := range after {
				if before[p] != v {
					t.Errorf("%s changed %s: %q, was %q", tt.name, p, v, before[p])
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					t.Errorf("%s removed %s", tt.name, p)
				}
			}
		})
	}
}

// TestRestoreDryRunStoreIsReadOnly: restore --dry-run hands the restorer a
// store that refuses every write, naming the command; a restore (--yes)
// gets one it can write its lock, journal and report to.
func TestRestoreDryRunStoreIsReadOnly(t *testing.T) {
	tests := []struct {
		name     string
		dryRun   bool
		readOnly bool
	}{
		{"--dry-run", true, true},
		{"--yes", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			cfg := restoreConfig(t, []string{"dr-kafka:9092"}, repo)
			s, _, _ := testStreams()
			fake := &fakeRestorer{rep: sampleReport()}
			o := &restoreOptions{ConfigFile: cfg, BackupID: "latest", Strategy: restorer.StrategyChangelog,
				DryRun: tt.dryRun, Yes: !tt.dryRun, Logger: g0.Logger(), restore: fake.run}
			if err := runRestore(t.Context(), o, s); err != nil {
				t.Fatal(err)
			}
			if len(fake.calls) != 1 {
				t.Fatalf("restorer called %d times, want once", len(fake.calls))
			}
			err := fake.calls[0].Store.Put(t.Context(), "restores/probe", bytes.NewReader([]byte("x")), 1)
			_, statErr := os.Stat(filepath.Join(repo, "restores", "probe"))
			switch {
			case tt.readOnly && (!errors.Is(err, storage.ErrReadOnly) || !strings.Contains(err.Error(), "restore --dry-run")):
				t.Errorf("Put through the dry run's store = %v, want ErrReadOnly naming restore --dry-run", err)
			case tt.readOnly && statErr == nil:
				t.Error("the dry run's store wrote restores/probe")
			case !tt.readOnly && (err != nil || statErr != nil):
				t.Errorf("Put through the restore's store = %v (stat %v), want it written", err, statErr)
			}
		})
	}
}
