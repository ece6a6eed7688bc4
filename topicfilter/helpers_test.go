package topicfilter

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// loadTopics reads a topic list copied verbatim from a case file: one topic
// per line, optionally followed by a "(...)" annotation such as
// "(50 partitions, internal)" or "(compact, 6 partitions)". Lines starting
// with "#", "#" comments, a leading "topics:" and "no topic ..." lines are
// ignored.
func loadTopics(t *testing.T, name string) []TopicInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []TopicInfo
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "topics:"))
		if line == "" || strings.HasPrefix(line, "no topic ") {
			continue
		}
		name, annot, _ := strings.Cut(line, " ")
		ti := TopicInfo{Name: name, Partitions: 1}
		annot = strings.TrimSpace(annot)
		if strings.HasPrefix(annot, "(") {
			annot = strings.TrimSuffix(strings.TrimPrefix(annot, "("), ")")
			for _, a := range strings.Split(annot, ",") {
				a = strings.TrimSpace(a)
				switch {
				case a == "internal":
					ti.Internal = true
				case a == "compact":
					ti.Compacted = true
				case strings.HasSuffix(a, " partitions"):
					n, err := strconv.Atoi(strings.TrimSuffix(a, " partitions"))
					if err != nil {
						t.Fatalf("%s: bad annotation %q", name, a)
					}
					ti.Partitions = n
				}
			}
		}
		out = append(out, ti)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no topics", name)
	}
	return out
}

func names(ts []TopicInfo) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func mustFilter(t *testing.T, include, exclude []string) *Filter {
	t.Helper()
	f, err := NewFilter(include, exclude)
	if err != nil {
		t.Fatalf("NewFilter(%q, %q): %v", include, exclude, err)
	}
	return f
}

// selectedNames returns the sorted names of the selected decisions.
func selectedNames(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Selected {
			out = append(out, d.Topic)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
