package topicfilter

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// globToRegexp translates compiled glob tokens to an RE2 expression; it is
// the independent oracle for FuzzGlob.
func globToRegexp(toks []token) string {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for _, t := range toks {
		switch t.kind {
		case tokLiteral:
			b.WriteString(regexp.QuoteMeta(t.lit))
		case tokAny:
			b.WriteString(`.`)
		case tokStar:
			b.WriteString(`.*`)
		case tokClass:
			b.WriteString("[")
			if t.negate {
				b.WriteString("^")
			}
			for _, r := range t.ranges {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r.lo, r.hi)
			}
			b.WriteString("]")
		}
	}
	b.WriteString(`)$`)
	return b.String()
}

// FuzzGlob checks that the glob matcher never panics, that a pattern
// without metacharacters matches only itself, and, for valid UTF-8, that it
// agrees with the same glob translated to a regular expression.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"audit.events", "audit-events"},
		{"audit?events", "audit.events"},
		{"orders*", "orders-dlq"},
		{"*-repartition-*", "app-x-repartition"},
		{"my-app-*", "my-app-v1-counts-changelog"},
		{"p[!0-9]", "px"},
		{"[]]", "]"},
		{"[a-", "a"},
		{"*a*b*c", "xaybzbc"},
		{"ca?", "café"},
		{"\xe2\x82", "\xe2\x82\xac"},
		{"[\xff-\xfe]", "\xff"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		var toks []token
		var err error
		var got bool
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		toks, err = compileGlob(pattern)
		if err == nil {
			got = globMatch(toks, name)
		}
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20+64*uint64(len(pattern)+len(name)) {
			t.Fatalf("glob %q on %q allocated %d bytes", pattern, name, grown)
		}
		if err != nil {
			return
		}
		if !strings.ContainsAny(pattern, "*?[") {
			if got != (name == pattern) {
				t.Fatalf("literal glob %q on %q = %v", pattern, name, got)
			}
			if !globMatch(toks, pattern) {
				t.Fatalf("literal glob %q does not match itself", pattern)
			}
		}
		if utf8.ValidString(pattern) && utf8.ValidString(name) {
			re, err := regexp.Compile(globToRegexp(toks))
			if err != nil {
				t.Fatalf("oracle for %q: %v", pattern, err)
			}
			if want := re.MatchString(name); got != want {
				t.Fatalf("glob %q on %q = %v, regexp %s says %v", pattern, name, got, re, want)
			}
		}
		// The public entry points must not panic either.
		if fl, err := NewFilter([]string{pattern}, []string{pattern}); err == nil {
			fl.Match(name)
			fl.Literals()
		}
		Classifier{ApplicationID: pattern, OtherApplicationIDs: []string{name}}.Classify(name)
	})
}
