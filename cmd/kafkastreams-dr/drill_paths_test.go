package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrillChecksOutputPathsFirst is a new user's fault: drill --embedded
// --junit DIR ran the whole drill, printed "drill PASSED ... JUnit XML:
// DIR", and only then failed "open DIR: is a directory"; --junit
// /missing/dir/x.xml created /missing/dir/. --junit and --out are checked
// before anything starts: a directory, a missing parent directory (never
// created) or a file as --out exit 2 naming the flag and the fix. So is
// --report (the HTML report), and --report and --junit naming one file.
func TestDrillChecksOutputPathsFirst(t *testing.T) {
	tmp := t.TempDir()
	aDir := filepath.Join(tmp, "reports")
	if err := os.Mkdir(aDir, 0o755); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(tmp, "a-file")
	writeFileIn(t, tmp, "a-file", "x")
	missing := filepath.Join(tmp, "nonexistent")
	cfg := writeFile(t, "app.yaml", "application_id: order-processor\nsource:\n  bootstrap_servers: [127.0.0.1:9]\n  topics:\n    include: [orders]\n"+
		"target:\n  bootstrap_servers: [127.0.0.1:10]\nstorage:\n  backend: filesystem\n  path: "+filepath.Join(tmp, "repo")+"\n")
	for _, tt := range []struct {
		name    string
		args    []string
		want    []string
		created string // must not exist afterwards
	}{
		{"embedded, junit is a directory", []string{"--embedded", "--out", filepath.Join(tmp, "out1"), "--junit", aDir},
			[]string{"--junit " + aDir, "is a directory", "drill-junit.xml"}, filepath.Join(tmp, "out1")},
		{"embedded, junit's directory is missing", []string{"--embedded", "--out", filepath.Join(tmp, "out2"), "--junit", filepath.Join(missing, "dir", "x.xml")},
			[]string{"--junit", missing, "does not exist", "mkdir -p"}, missing},
		{"embedded, junit's directory is a file", []string{"--embedded", "--out", filepath.Join(tmp, "out3"), "--junit", filepath.Join(aFile, "x.xml")},
			[]string{"--junit", aFile, "is not a directory"}, filepath.Join(tmp, "out3")},
		{"embedded, out is a file", []string{"--embedded", "--out", aFile},
			[]string{"--out " + aFile, "not a directory"}, ""},
		{"config, junit is a directory", []string{"-c", cfg, "--junit", aDir},
			[]string{"--junit " + aDir, "is a directory"}, filepath.Join(tmp, "repo")},
		{"config, junit's directory is missing", []string{"-c", cfg, "--junit", filepath.Join(missing, "x.xml")},
			[]string{"--junit", missing, "does not exist"}, missing},
		{"embedded, report is a directory", []string{"--embedded", "--out", filepath.Join(tmp, "out4"), "--report", aDir},
			[]string{"--report " + aDir, "is a directory", "drill-report.html"}, filepath.Join(tmp, "out4")},
		{"config, report's directory is missing", []string{"-c", cfg, "--report", filepath.Join(missing, "drill.html")},
			[]string{"--report", missing, "does not exist", "mkdir -p"}, missing},
		{"config, report's directory is a file", []string{"-c", cfg, "--report", filepath.Join(aFile, "drill.html")},
			[]string{"--report", aFile, "is not a directory"}, filepath.Join(tmp, "repo")},
		{"config, report and junit are one file", []string{"-c", cfg, "--report", filepath.Join(tmp, "r.out"), "--junit", filepath.Join(tmp, "r.out")},
			[]string{"--report and --junit name the same file"}, filepath.Join(tmp, "repo")},
		// Issue 15: --scorecard silently overwrote --report or --junit.
		{"config, scorecard and report are one file", []string{"-c", cfg, "--scorecard", filepath.Join(tmp, "s.out"), "--report", filepath.Join(tmp, "s.out")},
			[]string{"--scorecard and --report name the same file " + filepath.Join(tmp, "s.out")}, filepath.Join(tmp, "repo")},
		{"config, scorecard and junit are one file", []string{"-c", cfg, "--scorecard", filepath.Join(tmp, "s.out"), "--junit", filepath.Join(tmp, "s.out")},
			[]string{"--scorecard and --junit name the same file"}, filepath.Join(tmp, "repo")},
		{"embedded, scorecard and junit are one file", []string{"--embedded", "--out", filepath.Join(tmp, "out5"), "--scorecard", filepath.Join(tmp, "s.out"), "--junit", filepath.Join(tmp, "s.out")},
			[]string{"--scorecard and --junit name the same file"}, filepath.Join(tmp, "out5")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runBounded(t, append([]string{"drill"}, tt.args...)...)
			t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q", w)
				}
			}
			if strings.Contains(stdout, "drill") || strings.Contains(stderr, "cluster") {
				t.Errorf("the drill started")
			}
			if tt.created != "" {
				if _, err := os.Stat(tt.created); !os.IsNotExist(err) {
					t.Errorf("%s was created (%v)", tt.created, err)
				}
			}
		})
	}
	if fi, err := os.Stat(aFile); err != nil || fi.IsDir() || fi.Size() != 1 {
		t.Errorf("--out or --junit changed the file %s: %v", aFile, err)
	}
}
