package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusedBackupCreatesNoRepository: a backup refused for its
// selection (nothing selected, no include and no topology) exits 2 and
// creates no repository directory (new-user pass, issue 12: storage.path
// was created, empty, by a backup that then refused).
func TestRefusedBackupCreatesNoRepository(t *testing.T) {
	brokers := startCluster(t, map[string]string{"orders": ""}, "")
	for _, c := range []struct{ name, topics, want string }{
		{"nothing selected", "  topics:\n    include: [\"no-such-*\"]\n", "match no topic"},
		{"no include and no topology", "", "no source.topics.include and no topology"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			cfg := writeFile(t, "app.yaml", fmt.Sprintf("application_id: order-processor\nsource:\n  bootstrap_servers: [%s]\n%sstorage:\n  backend: filesystem\n  path: %s\n",
				strings.Join(brokers, ", "), c.topics, repo))
			code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, c.want)
			}
			if _, err := os.Stat(repo); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused backup created %s (%v)", repo, err)
			}
		})
	}
}
