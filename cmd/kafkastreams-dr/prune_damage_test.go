package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestPruneOfATruncatedLatestManifest is a new user's fault: prune
// --keep-last 1 (with --dry-run or not) on a repository whose latest
// manifest is truncated exited 1, the code of a storage or network
// failure, and its hint said "verify -c FILE --backup-id ID" with a
// literal ID. A manifest prune would keep that does not decode is damage
// (exit 2, as for list, verify and restore): the hint names the real id;
// nothing is deleted.
func TestPruneOfATruncatedLatestManifest(t *testing.T) {
	for _, dryRun := range []bool{true, false} {
		name := "prune"
		if dryRun {
			name = "prune --dry-run"
		}
		t.Run(name, func(t *testing.T) {
			store, storageYAML := catalogRepos[0].open(t)
			craftBackup(t, store, time.Date(2026, 6, 14, 12, 0, 0, 0, time.UTC), 1)
			bad := craftBackup(t, store, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), 2)
			broken := `{"format":"kafkastreams-dr/backup","form`
			if err := store.Put(t.Context(), format.ManifestKey(bad), strings.NewReader(broken), int64(len(broken))); err != nil {
				t.Fatal(err)
			}
			cfg := writeFile(t, "mtrunc.yaml", "source:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\n"+storageYAML)
			before := objectCount(t, store)
			args := []string{"prune", "-c", cfg, "--keep-last", "1"}
			if dryRun {
				args = append(args, "--dry-run")
			}
			code, stdout, stderr := runCLI(t, args...)
			t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
			if code != damageExitCode {
				t.Errorf("exit %d, want 2 (a damaged manifest)", code)
			}
			for _, want := range []string{format.ManifestKey(bad), "nothing was deleted", "verify -c " + cfg + " --backup-id " + bad} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
			for _, bad := range []string{"--backup-id ID", "run prune again", "storage or network"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr says %q", bad)
				}
			}
			if after := objectCount(t, store); after != before {
				t.Errorf("prune changed the repository: %d objects, then %d", before, after)
			}
		})
	}
}
