package configs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDomainReferencesResolve: every reference to the domain rules and the
// field cases resolves inside the repository. A link into docs/DOMAIN.md
// names one of its anchors; "field case NN" names a field case that page
// has; no reference points outside (a section of the shared domain page, a
// shared case file, a bare case number); and every test docs/DOMAIN.md names
// as pinning a case exists.
func TestDomainReferencesResolve(t *testing.T) {
	domain, err := os.ReadFile(filepath.Join(root, "docs", "DOMAIN.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([a-z0-9-]+)"></a>`).FindAllStringSubmatch(string(domain), -1) {
		if anchors[m[1]] {
			t.Errorf("docs/DOMAIN.md: anchor %q twice", m[1])
		}
		anchors[m[1]] = true
	}
	if len(anchors) < 20 {
		t.Fatalf("docs/DOMAIN.md has %d anchors; the test reads <a id=\"...\"></a> lines", len(anchors))
	}

	var (
		anchorRef  = regexp.MustCompile(`DOMAIN\.md#([A-Za-z0-9-]+)`)
		fieldCase  = regexp.MustCompile(`(?i)\bfield cases? ((?:\d\d(?:,? | and |/| or )?)+)`)
		anyCase    = regexp.MustCompile(`(?i)\bcases? \d\d\b`)
		goCase     = regexp.MustCompile(`^\s*case \d+[,:]`)
		outside    = regexp.MustCompile(`DOMAIN\.md §|\bcases/\d\d|\bseeds/\d`)
		testName   = regexp.MustCompile("`(?:[a-z]+\\.)?(Test[A-Za-z0-9_]+)")
		funcDecl   = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
		twoDigits  = regexp.MustCompile(`\d\d`)
		tests      = map[string]bool{}
		references int
	)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "target", "kdr-quickstart", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".txt", ".yaml", ".yml", ".java":
		default:
			if d.Name() != "Makefile" && filepath.Base(filepath.Dir(p)) != ".ci" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range funcDecl.FindAllStringSubmatch(string(b), -1) {
			tests[m[1]] = true
		}
		for i, line := range strings.Split(string(b), "\n") {
			where := func() string { return rel + ":" + strconv.Itoa(i+1) }
			for _, m := range anchorRef.FindAllStringSubmatch(line, -1) {
				references++
				if !anchors[m[1]] {
					t.Errorf("%s: docs/DOMAIN.md has no anchor %q", where(), m[1])
				}
			}
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s: %q points outside the repository; cite docs/DOMAIN.md#<anchor>: %s", where(), m, strings.TrimSpace(line))
			}
			for _, m := range fieldCase.FindAllStringSubmatch(line, -1) {
				for _, n := range twoDigits.FindAllString(m[1], -1) {
					references++
					if !anchors["field-case-"+n] {
						t.Errorf("%s: docs/DOMAIN.md has no field case %s", where(), n)
					}
				}
			}
			if goCase.MatchString(line) {
				continue
			}
			for _, loc := range anyCase.FindAllStringIndex(line, -1) {
				before := strings.ToLower(line[:loc[0]])
				if !strings.HasSuffix(before, "field ") {
					t.Errorf("%s: %q is a number only: say \"field case NN\" and what the case is (docs/DOMAIN.md#field-cases): %s",
						where(), line[loc[0]:loc[1]], strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if references < 50 {
		t.Errorf("found %d references to docs/DOMAIN.md; the walk missed the code", references)
	}
	for _, m := range testName.FindAllStringSubmatch(string(domain), -1) {
		if !tests[m[1]] {
			t.Errorf("docs/DOMAIN.md names test %s, which does not exist (renamed? update the page)", m[1])
		}
	}
}
