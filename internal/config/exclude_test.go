package config

import (
	"strings"
	"testing"
)

// TestExcludeThatRemovesEveryInclude: include [clicks] with exclude
// [clicks] passed config validate, and the backup then said the include
// "matches no topic" without naming the exclude. An exclude that removes
// every include (a literal it matches, or the same pattern) is an error
// naming the exclude item; one that removes some includes is a warning.
func TestExcludeThatRemovesEveryInclude(t *testing.T) {
	topics := func(include, exclude string) string {
		return strings.Replace(base, `    include: [orders, "app-*-changelog"]`, "    include: "+include+"\n    exclude: "+exclude, 1)
	}
	for _, tt := range []struct {
		name, yaml string
		err        []string // substrings of the error, nil: no error
		warning    string   // substring of a warning, "": none about exclude
	}{
		{"literal excluded by the same literal", topics("[clicks]", "[clicks]"),
			[]string{`source.topics.exclude[0] "clicks" removes every included topic`, "source.topics.include [clicks]", "line 6"}, ""},
		{"literal excluded by a glob", topics("[clicks]", `["click*"]`),
			[]string{`source.topics.exclude[0] "click*" removes every included topic`}, ""},
		{"glob excluded by the same glob", topics(`["click-*", clicks]`, `[views, "click-*", clicks]`),
			[]string{`source.topics.exclude[1] "click-*" removes every included topic`}, ""},
		{"one of two includes excluded", topics("[clicks, views]", "[clicks]"),
			nil, `source.topics.include[0] "clicks" is excluded by source.topics.exclude[0] "clicks"`},
		{"a glob include narrowed by an exclude", topics(`["click-*"]`, `["click-test-*"]`), nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.err == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				w := strings.Join(c.Warnings(), "\n")
				if tt.warning == "" && strings.Contains(w, "exclude") || !strings.Contains(w, tt.warning) {
					t.Errorf("warnings %q, want %q", w, tt.warning)
				}
				return
			}
			if err == nil {
				t.Fatal("Parse accepted a config whose exclude removes every include")
			}
			for _, w := range tt.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
