package topicfilter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Filter is a compiled include/exclude topic filter. The zero value and a
// nil *Filter select nothing. A Filter is immutable and safe for concurrent use.
//
// Pattern syntax (the same for include and exclude):
//
//   - A glob, anchored to the whole topic name: "*" matches any run of
//     characters (also none), "?" exactly one character, "[...]" one
//     character of a class: ranges ("[a-z0-9]"), negation with "[!...]" or
//     "[^...]", a "]" right after "[" (or "[!", "[^") is a literal "]", a
//     "-" first or last is a literal "-". Every other character is literal,
//     including ".", "+", "(", "$", "^", "|" and "\" (there is no escape
//     character; write "[*]", "[?]" or "[[]" to match those literally).
//     So "audit.events" selects only audit.events, never audit-events, and
//     "orders" selects only orders, never orders-dlq.
//   - A pattern starting with "~" is a Go regular expression (RE2 syntax,
//     https://pkg.go.dev/regexp/syntax) after the "~", anchored to the whole
//     name: "~orders|payments" is compiled as "^(?:orders|payments)$".
//
// An empty include list selects nothing: there is no implicit "all topics".
// Write include: ["*"] to mean every topic. Exclude beats include. Topics
// whose name starts with "__" are never matched.
type Filter struct {
	include []*pattern
	exclude []*pattern
}

// PatternError is returned by [NewFilter] for an unusable pattern.
type PatternError struct {
	List    string // "include" or "exclude"
	Pattern string // the pattern as configured
	Err     error  // what is wrong and how to fix it
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("%s pattern %q: %v", e.List, e.Pattern, e.Err)
}

func (e *PatternError) Unwrap() error { return e.Err }

// NewFilter compiles include and exclude patterns (syntax: see [Filter]).
//
// It returns an error, wrapping one *[PatternError] per bad pattern (all
// of them, joined with errors.Join), when a pattern is empty, a glob has an
// unclosed "[" or a reversed range, a "~" regular expression does not
// compile, or an include names a broker-internal topic (a literal starting
// with "__", or a glob whose literal start is "__": such topics are never
// backed up, so the include can only be a mistake).
func NewFilter(include, exclude []string) (*Filter, error) {
	f := &Filter{}
	var errs []error
	for _, s := range include {
		p, err := compilePattern(s)
		if err == nil && isBrokerInternalName(s) {
			err = fmt.Errorf("names broker-internal topic %q; topics starting with \"__\" are never backed up or restored (consumer-group offsets are carried separately); remove it from include", s)
			if p.glob != nil && IsPattern(s) {
				err = fmt.Errorf("can only match broker-internal topics (names starting with \"__\"), which are never backed up or restored; remove it from include")
			}
		}
		if err != nil {
			errs = append(errs, &PatternError{List: "include", Pattern: s, Err: err})
			continue
		}
		f.include = append(f.include, p)
	}
	for _, s := range exclude {
		p, err := compilePattern(s)
		if err != nil {
			errs = append(errs, &PatternError{List: "exclude", Pattern: s, Err: err})
			continue
		}
		f.exclude = append(f.exclude, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// Match reports whether the filter selects the topic name: it does not start
// with "__", an include pattern matches it, and no exclude pattern does.
// Match knows nothing of topic classes; [Plan] also drops repartition topics.
func (f *Filter) Match(name string) bool {
	if f == nil || isBrokerInternalName(name) {
		return false
	}
	return f.firstInclude(name) != "" && f.firstExclude(name) == ""
}

// Literals returns the include entries that contain no pattern
// metacharacter (see [IsPattern]), in configured order without duplicates:
// the topics the configuration names exactly, each of which must exist.
func (f *Filter) Literals() []string {
	if f == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range f.include {
		if !IsPattern(p.src) && !seen[p.src] {
			seen[p.src] = true
			out = append(out, p.src)
		}
	}
	return out
}

// IsPattern reports whether s is a pattern rather than a literal topic name:
// it starts with "~" (regular expression) or contains one of the glob
// metacharacters "*", "?" or "[".
func IsPattern(s string) bool {
	return strings.HasPrefix(s, "~") || strings.ContainsAny(s, "*?[")
}

// firstInclude returns the first include pattern matching name, or "".
// It ignores the "__" rule; callers apply it.
func (f *Filter) firstInclude(name string) string { return firstMatch(f.include, name) }

// firstExclude returns the first exclude pattern matching name, or "".
func (f *Filter) firstExclude(name string) string { return firstMatch(f.exclude, name) }

func firstMatch(ps []*pattern, name string) string {
	for _, p := range ps {
		if p.match(name) {
			return p.src
		}
	}
	return ""
}

func isBrokerInternalName(name string) bool { return strings.HasPrefix(name, "__") }

// pattern is one compiled include or exclude entry: a glob or a regexp.
type pattern struct {
	src  string
	re   *regexp.Regexp // set for "~" patterns
	glob []token        // set for globs (non-nil, possibly empty)
}

func (p *pattern) match(name string) bool {
	if p.re != nil {
		return p.re.MatchString(name)
	}
	return globMatch(p.glob, name)
}

func compilePattern(s string) (*pattern, error) {
	if s == "" || s == "~" {
		return nil, errors.New("empty pattern matches no topic; remove it or write a topic name or glob such as \"orders-*\"")
	}
	if expr, ok := strings.CutPrefix(s, "~"); ok {
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("%v; a pattern starting with \"~\" is a Go RE2 regular expression (https://pkg.go.dev/regexp/syntax), anchored to the whole topic name; fix the expression, or drop the \"~\" to write a glob", err)
		}
		return &pattern{src: s, re: re}, nil
	}
	toks, err := compileGlob(s)
	if err != nil {
		return nil, err
	}
	return &pattern{src: s, glob: toks}, nil
}

type tokenKind uint8

const (
	tokLiteral tokenKind = iota // lit, byte for byte
	tokAny                      // "?": one character
	tokStar                     // "*": any run of characters
	tokClass                    // "[...]": one character in (or, negated, not in) ranges
)

type runeRange struct{ lo, hi rune }

type token struct {
	kind   tokenKind
	lit    string
	negate bool
	ranges []runeRange
}

// compileGlob splits a glob into tokens. Consecutive stars collapse into one.
// The result is non-nil even for a pattern without tokens.
func compileGlob(s string) ([]token, error) {
	toks := []token{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, token{kind: tokLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '*':
			flush()
			if len(toks) == 0 || toks[len(toks)-1].kind != tokStar {
				toks = append(toks, token{kind: tokStar})
			}
			i++
		case '?':
			flush()
			toks = append(toks, token{kind: tokAny})
			i++
		case '[':
			flush()
			t, n, err := compileClass(s, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += n
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return toks, nil
}

// compileClass parses the character class starting at s[start] == '[' and
// returns it with the number of bytes it spans.
func compileClass(s string, start int) (token, int, error) {
	t := token{kind: tokClass}
	i := start + 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		t.negate = true
		i++
	}
	for first := true; ; first = false {
		if i >= len(s) {
			return token{}, 0, fmt.Errorf("unclosed \"[\" at byte %d: close the character class with \"]\" (a \"]\" right after \"[\" is a literal \"]\", as in \"[]]\"), or write \"[[]\" to match a literal \"[\"", start)
		}
		if s[i] == ']' && !first {
			return t, i + 1 - start, nil
		}
		lo, n := utf8.DecodeRuneInString(s[i:])
		i += n
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			var m int
			hi, m = utf8.DecodeRuneInString(s[i+1:])
			i += 1 + m
			if hi < lo {
				return token{}, 0, fmt.Errorf("reversed range %q in character class at byte %d: write the lower bound first, as in \"[%c-%c]\"", string(lo)+"-"+string(hi), start, hi, lo)
			}
		}
		t.ranges = append(t.ranges, runeRange{lo, hi})
	}
}

// matchOne matches a single-character token at the start of s and returns
// the number of bytes it consumed. Invalid UTF-8 counts as one character
// per byte.
func (t *token) matchOne(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	r, n := utf8.DecodeRuneInString(s)
	if t.kind == tokAny {
		return n, true
	}
	in := false
	for _, rg := range t.ranges {
		if rg.lo <= r && r <= rg.hi {
			in = true
			break
		}
	}
	return n, in != t.negate
}

// globMatch matches the whole name against tokens. Each non-star token
// matches deterministically, so retrying only the most recent star (one
// character further each time) finds a match if there is one, in
// O(len(tokens)*len(name)).
func globMatch(toks []token, name string) bool {
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for {
		if ti < len(toks) {
			t := &toks[ti]
			switch t.kind {
			case tokStar:
				starTi, starNi = ti, ni
				ti++
				continue
			case tokLiteral:
				if strings.HasPrefix(name[ni:], t.lit) {
					ti++
					ni += len(t.lit)
					continue
				}
			default:
				if n, ok := t.matchOne(name[ni:]); ok {
					ti++
					ni += n
					continue
				}
			}
		} else if ni == len(name) {
			return true
		}
		if starTi < 0 || starNi >= len(name) {
			return false
		}
		_, n := utf8.DecodeRuneInString(name[starNi:])
		starNi += n
		ti, ni = starTi+1, starNi
	}
}
