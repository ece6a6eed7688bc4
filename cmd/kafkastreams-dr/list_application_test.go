package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the files under src into dst, keeping their paths.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestListNamesTheApplication: list names the application.id of the
// backups: a line after the summary when they all share one, an APPLICATION column
// and a warning naming every application.id when the repository mixes
// several (as a version without the one-application rule left it; "" is
// none), and --json gives every readable backup's application_id, ""
// included, and the repository's application_ids (new-user test: a mixed
// repository was invisible in list).
func TestListNamesTheApplication(t *testing.T) {
	c := eventsCluster(t)
	repo, other := t.TempDir(), t.TempDir()
	mine := appConfig(t, "application_id: myapp", c.ListenAddrs(), repo, "")
	for _, cfg := range []string{mine, appConfig(t, "", c.ListenAddrs(), other, "")} {
		if code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
			t.Fatalf("backup: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
	}

	code, stdout, stderr := runCLI(t, "list", "-c", mine)
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasSuffix(stdout, "\napplication.id: myapp\n") || strings.Contains(stdout, "APPLICATION") {
		t.Errorf("list of one application: want a last line naming it and no column:\n%s", stdout)
	}

	// The backup without an application_id, moved into myapp's repository
	// as an older version of backup would have chained it.
	copyTree(t, other, repo)
	code, stdout, stderr = runCLI(t, "list", "-c", mine)
	if code != exitOK {
		t.Fatalf("list of a mixed repository: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("list:\n%s", stdout)
	header, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(header, "BACKUP ID") || !strings.Contains(header, "APPLICATION") {
		t.Errorf("list of a mixed repository: the first line %q is not the table's header with an APPLICATION column", header)
	}
	for _, want := range []string{"myapp", "(none)", `2 application.ids ("" (none), "myapp")`, "storage.prefix"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("list of a mixed repository does not say %q:\n%s", want, stdout)
		}
	}

	code, stdout, _ = runCLI(t, "list", "-c", mine, "--json")
	var lj struct {
		ApplicationIDs []string `json:"application_ids"`
		Backups        []map[string]any
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &lj) != nil || len(lj.Backups) != 2 {
		t.Fatalf("list --json: exit %d\n%s", code, stdout)
	}
	var apps []any
	for _, b := range lj.Backups {
		app, ok := b["application_id"]
		if !ok {
			t.Errorf("list --json: backup %v has no application_id", b["backup_id"])
		}
		apps = append(apps, app)
	}
	if len(apps) != 2 || apps[0] == apps[1] || strings.Join(lj.ApplicationIDs, ",") != "myapp," && strings.Join(lj.ApplicationIDs, ",") != ",myapp" {
		t.Errorf("list --json: application ids %v, application_ids %q; want myapp and \"\"", apps, lj.ApplicationIDs)
	}
}
