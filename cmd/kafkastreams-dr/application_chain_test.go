package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// appConfig writes a config of application appLine ("application_id: x",
// or "" for none) backing up topic events of brokers into the filesystem
// repository repo, restoring to target (none when "").
func appConfig(t *testing.T, appLine string, brokers []string, repo, target string) string {
	t.Helper()
	if appLine != "" {
		appLine += "\n"
	}
	if target != "" {
		target = "target:\n  bootstrap_servers: [" + target + "]\n"
	}
	return writeFile(t, "app.yaml", fmt.Sprintf(`%ssource:
  bootstrap_servers: [%s]
  topics:
    include: [events]
%sstorage:
  backend: filesystem
  path: %s
`, appLine, strings.Join(brokers, ", "), target, repo))
}

// eventsCluster is a one-broker kfake cluster with topic events (2
// partitions) holding a few records.
func eventsCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := testkit.Client(t, c.ListenAddrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 6 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// repoFiles lists the files under dir (relative paths, sorted).
func repoFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// TestBackupOfAnotherApplicationIsRefused: a backup whose application.id
// differs from that of the repository's latest backup (another id, or
// none) is refused before it writes anything, with exit 2 naming both ids
// and the fix (a storage.prefix of its own), --full included; the
// repository's own application then goes on with its chain (new-user test:
// `backup -c other.yaml` exited 0 as an incremental of myapp's backup, and
// myapp's next backup named otherapp's as its parent).
func TestBackupOfAnotherApplicationIsRefused(t *testing.T) {
	c := eventsCluster(t)
	repo := t.TempDir()
	mine := appConfig(t, "application_id: myapp", c.ListenAddrs(), repo, "")
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", mine); code != exitOK {
		t.Fatalf("myapp's backup: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	first, err := repository.Manifest(t.Context(), store, "latest")
	if err != nil {
		t.Fatal(err)
	}
	before := repoFiles(t, repo)

	for _, tc := range []struct {
		name, appLine, other string
		args                 []string
	}{
		{"another application.id", "application_id: otherapp", `"otherapp"`, nil},
		{"another application.id with --full", "application_id: otherapp", `"otherapp"`, []string{"--full"}},
		{"no application_id", "", `""`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := appConfig(t, tc.appLine, c.ListenAddrs(), repo, "")
			s, out, errOut := testStreams()
			err := run(t.Context(), append([]string{"--log-level", "error", "backup", "-c", cfg}, tc.args...), s)
			if code := exitCode(t.Context(), err); code != exitUsage {
				t.Fatalf("exit %d, want %d (refused)\nstdout: %s\nstderr: %s", code, exitUsage, out, errOut)
			}
			msg := err.Error() + "\n" + errorHint(err)
			t.Logf("refused: %s\nstderr: %s", msg, errOut)
			for _, want := range []string{first.BackupID, `application.id "myapp"`, tc.other, "storage.prefix"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error does not say %q:\n%s", want, msg)
				}
			}
			if after := repoFiles(t, repo); !slices.Equal(after, before) {
				t.Errorf("the refused backup changed the repository:\nbefore %q\nafter  %q", before, after)
			}
		})
	}

	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", mine); code != exitOK {
		t.Fatalf("myapp's second backup: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	second, err := repository.Manifest(t.Context(), store, "latest")
	if err != nil {
		t.Fatal(err)
	}
	if second.ApplicationID != "myapp" || second.ParentBackupID != first.BackupID {
		t.Fatalf("myapp's second backup is of application.id %q with parent %q; want myapp's, parent %s", second.ApplicationID, second.ParentBackupID, first.BackupID)
	}
}

// TestBackupWithEmptyApplicationIDVariableIsRefused: `application_id:
// ${APP}` with APP set but empty is a config error (exit 2) naming the
// variable, for backup and config validate alike, and nothing is written
// (new-user test: exit 0 with warnings, no group offsets).
func TestBackupWithEmptyApplicationIDVariableIsRefused(t *testing.T) {
	c := eventsCluster(t)
	repo := t.TempDir()
	t.Setenv("KDR_TEST_APP", "")
	cfg := appConfig(t, "application_id: ${KDR_TEST_APP}", c.ListenAddrs(), repo, "")
	for _, args := range [][]string{{"backup", "-c", cfg}, {"config", "validate", "-c", cfg}} {
		code, stdout, stderr := runCLI(t, append([]string{"--log-level", "error"}, args...)...)
		if code != exitUsage {
			t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", args[0], code, exitUsage, stdout, stderr)
		}
		for _, want := range []string{"application_id is empty", "KDR_TEST_APP is set but empty"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr does not say %q:\n%s", args[0], want, stderr)
			}
		}
	}
	if files := repoFiles(t, repo); len(files) != 0 {
		t.Fatalf("the refused backup wrote %q", files)
	}
}

// TestRestoreRefusesBackupWithoutApplicationID: restoring, with a config of
// application.id myapp, a backup taken without one (manifest
// application_id "") is refused as a backup of another application is,
// naming both (new-user test: restore --dry-run listed no mismatch).
func TestRestoreRefusesBackupWithoutApplicationID(t *testing.T) {
	c := eventsCluster(t)
	target := testkit.StartKfake(t, 1)
	repo := t.TempDir()
	none := appConfig(t, "", c.ListenAddrs(), repo, "")
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", none); code != exitOK {
		t.Fatalf("backup without application_id: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	mine := appConfig(t, "application_id: myapp", c.ListenAddrs(), repo, target.Bootstrap())
	code, stdout, stderr := runCLI(t, "--log-level", "error", "restore", "-c", mine, "--dry-run")
	if code != exitUsage {
		t.Fatalf("restore --dry-run: exit %d, want %d (refused)\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
	}
	out := stdout + stderr
	for _, want := range []string{`application.id ""`, `"myapp"`} {
		if !strings.Contains(out, want) {
			t.Errorf("restore does not say %q:\nstdout: %s\nstderr: %s", want, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "restores")); err == nil {
		t.Errorf("the refused dry run wrote under restores/: %q", repoFiles(t, filepath.Join(repo, "restores")))
	}
}

// TestBackupRefusesToResumeAnotherApplicationsRun: an interrupted run of
// another application.id, newer than the repository's latest backup, is
// not resumed: the backup is refused with exit 2 like a parent of another
// application (it exited 1, "check the repository"), and the run's
// progress.json is left as it was.
func TestBackupRefusesToResumeAnotherApplicationsRun(t *testing.T) {
	c := eventsCluster(t)
	repo := t.TempDir()
	mine := appConfig(t, "application_id: myapp", c.ListenAddrs(), repo, "")
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", mine); code != exitOK {
		t.Fatalf("myapp's backup: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Manifest(t.Context(), store, "latest")
	if err != nil {
		t.Fatal(err)
	}
	// otherapp's run, interrupted after its cut: myapp's manifest as a
	// progress manifest of a newer id and another application.id.
	runID := format.NextBackupID(m.StartedAt, m.BackupID, [4]byte{1, 2, 3, 4})
	m.BackupID, m.ParentBackupID, m.ApplicationID, m.State, m.Group = runID, "", "otherapp", format.StateRunning, nil
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), format.ProgressKey(runID), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	before := repoFiles(t, repo)

	s, out, errOut := testStreams()
	err = run(t.Context(), []string{"--log-level", "error", "backup", "-c", mine}, s)
	if code := exitCode(t.Context(), err); code != exitUsage {
		t.Fatalf("exit %d, want %d (refused)\nstdout: %s\nstderr: %s", code, exitUsage, out, errOut)
	}
	msg := err.Error() + "\n" + errorHint(err)
	for _, want := range []string{"interrupted backup " + runID, `application.id "otherapp"`, `"myapp"`, "storage.prefix"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if after := repoFiles(t, repo); !slices.Equal(after, before) {
		t.Errorf("the refused backup changed the repository:\nbefore %q\nafter  %q", before, after)
	}
}
