package topicfilter

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestFilterGlobIsNotRegex is the filter table of field case 02
// (docs/DOMAIN.md#field-case-02: a filter read as a regex, an application id
// read as a prefix), checked with set equality. The case's list also holds
// audit_events, which "cannot coexist
// with audit.events on one Kafka cluster": the case table's rows are
// evaluated on the cluster without it (where "audit?events" selects exactly
// audit.events and audit-events), and one extra row over the whole list
// shows that "?" also matches the "_".
func TestFilterGlobIsNotRegex(t *testing.T) {
	all := names(loadTopics(t, "case02-topics.txt"))
	cluster := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "audit_events" })
	tests := []struct {
		name             string
		topics           []string
		include, exclude []string
		want             []string
	}{
		{"dot is literal, not regex any-char", cluster, []string{"audit.events"}, nil, []string{"audit.events"}},
		{"question mark is exactly one character", cluster, []string{"audit?events"}, nil, []string{"audit.events", "audit-events"}},
		{"literal has no implicit prefix", cluster, []string{"orders"}, nil, []string{"orders"}},
		{"exclude glob removes dead-letter topic", cluster, []string{"orders*"}, []string{"*-dlq"}, []string{"orders"}},
		{"exclude of longer application id wins over include", cluster, []string{"my-app-*"}, []string{"my-app-v1-*"}, []string{"my-app-counts-changelog"}},
		{"question mark also matches underscore (unit-test-only name)", all, []string{"audit?events"}, nil, []string{"audit.events", "audit-events", "audit_events"}},
		{"dot is literal even next to the underscore variant", all, []string{"audit.events"}, nil, []string{"audit.events"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, tt.include, tt.exclude)
			var got []string
			for _, n := range tt.topics {
				if f.Match(n) {
					got = append(got, n)
				}
			}
			if !slices.Equal(sorted(got), sorted(tt.want)) {
				t.Errorf("include %q exclude %q selected %q, want exactly %q", tt.include, tt.exclude, got, tt.want)
			}
		})
	}
}

func TestGlobSyntax(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		topic   string
		want    bool
	}{
		{"anchored at start", "orders", "my-orders", false},
		{"anchored at end", "orders", "orders-dlq", false},
		{"star matches empty run", "orders*", "orders", true},
		{"star matches any run", "orders*", "orders.v2-dlq", true},
		{"star in the middle", "my-*-changelog", "my-app-counts-changelog", true},
		{"star-dash-repartition-dash-star misses real repartition topics", "*-repartition-*", "app-x-repartition", false},
		{"star-dash-repartition matches real repartition topics", "*-repartition", "app-x-repartition", true},
		{"several stars backtrack", "*a*b*c", "xaybzbc", true},
		{"several stars fail cleanly", "*a*b*c", "xaybzb", false},
		{"question mark needs a character", "orders?", "orders", false},
		{"question mark is one rune, not one byte", "caf?", "café", true},
		{"question mark is not two runes", "ca?", "café", false},
		{"dot is literal", "a.b", "axb", false},
		{"plus is literal", "a+", "aa", false},
		{"plus matches itself", "a+", "a+", true},
		{"parenthesis and pipe are literal", "(a|b)", "a", false},
		{"parenthesis and pipe match themselves", "(a|b)", "(a|b)", true},
		{"caret and dollar are literal", "^a$", "a", false},
		{"caret and dollar match themselves", "^a$", "^a$", true},
		{"backslash is literal, not an escape", `a\*`, `a\bc`, true},
		{"backslash does not escape star", `a\*`, `a*`, false},
		{"tilde in the middle is literal", "a~b", "a~b", true},
		{"class matches a member", "v[12]", "v2", true},
		{"class rejects a non-member", "v[12]", "v3", false},
		{"class range", "p[0-9]", "p7", true},
		{"class range excludes outside", "p[0-9]", "px", false},
		{"class negated with bang", "p[!0-9]", "px", true},
		{"class negated with bang rejects member", "p[!0-9]", "p5", false},
		{"class negated with caret", "p[^0-9]", "px", true},
		{"class leading bracket is literal", "[]]", "]", true},
		{"class leading dash is literal", "[-a]", "-", true},
		{"class trailing dash is literal", "[a-]", "-", true},
		{"class matching a star literally", "a[*]", "a*", true},
		{"class matching a star does not glob", "a[*]", "ab", false},
		{"class matching a bracket literally", "[[]x", "[x", true},
		{"empty pattern parts around star", "*", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, err := compileGlob(tt.pattern)
			if err != nil {
				t.Fatalf("compileGlob(%q): %v", tt.pattern, err)
			}
			if got := globMatch(toks, tt.topic); got != tt.want {
				t.Errorf("glob %q on %q = %v, want %v", tt.pattern, tt.topic, got, tt.want)
			}
		})
	}
}

func TestRegexPatternIsAnchored(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		topic   string
		want    bool
	}{
		{"whole name matches", "~orders", "orders", true},
		{"no implicit suffix", "~orders", "orders-dlq", false},
		{"no implicit prefix", "~orders", "old-orders", false},
		{"alternation anchored on both branches: first", "~orders|payments", "orders-dlq", false},
		{"alternation anchored on both branches: second", "~orders|payments", "old-payments", false},
		{"alternation matches a branch", "~orders|payments", "payments", true},
		{"regex dot is any character", "~audit.events", "audit-events", true},
		{"quoted dot is literal", `~audit\.events`, "audit-events", false},
		{"character class and repetition", `~orders-v[0-9]+`, "orders-v12", true},
		{"user anchors are harmless", "~^orders$", "orders", true},
		{"dot-star never reaches broker-internal topics", "~.*", "__consumer_offsets", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, []string{tt.pattern}, nil)
			if got := f.Match(tt.topic); got != tt.want {
				t.Errorf("%q on %q = %v, want %v", tt.pattern, tt.topic, got, tt.want)
			}
		})
	}
}

func TestNewFilterErrors(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		wantList         string
		wantPattern      string
		wantIn           []string // substrings of the message
	}{
		{"unclosed bracket", []string{"orders-[0-9"}, nil, "include", "orders-[0-9", []string{`"orders-[0-9"`, `unclosed "["`, `close the character class with "]"`}},
		{"bracket only", []string{"["}, nil, "include", "[", []string{`unclosed "["`}},
		{"empty class is unclosed", []string{"a[]"}, nil, "include", "a[]", []string{`unclosed "["`, `"[]]"`}},
		{"reversed range", []string{"p[9-0]"}, nil, "include", "p[9-0]", []string{"reversed range", `"[0-9]"`}},
		{"bad regex in exclude", []string{"*"}, []string{"~orders-(dlq"}, "exclude", "~orders-(dlq", []string{`"~orders-(dlq"`, "missing closing )", "RE2", `drop the "~"`}},
		{"empty pattern", []string{""}, nil, "include", "", []string{"empty pattern"}},
		{"empty regex", []string{"~"}, nil, "include", "~", []string{"empty pattern"}},
		{"literal broker-internal include", []string{"__consumer_offsets"}, nil, "include", "__consumer_offsets", []string{`broker-internal topic "__consumer_offsets"`, "remove it from include"}},
		{"glob that can only match broker-internal topics", []string{"__*"}, nil, "include", "__*", []string{"can only match broker-internal topics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.include, tt.exclude)
			if err == nil {
				t.Fatalf("NewFilter(%q, %q) = %v, nil; want error", tt.include, tt.exclude, f)
			}
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PatternError", err)
			}
			if pe.List != tt.wantList || pe.Pattern != tt.wantPattern {
				t.Errorf("PatternError{List: %q, Pattern: %q}, want {%q, %q}", pe.List, pe.Pattern, tt.wantList, tt.wantPattern)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestNewFilterReportsEveryBadPattern(t *testing.T) {
	_, err := NewFilter([]string{"a[", "ok", "~("}, []string{"b["})
	if err == nil {
		t.Fatal("want error")
	}
	for _, p := range []string{`include pattern "a["`, `include pattern "~("`, `exclude pattern "b["`} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %s", err, p)
		}
	}
}

func TestNewFilterAcceptsBrokerInternalExclude(t *testing.T) {
	f := mustFilter(t, []string{"*"}, []string{"__consumer_offsets", "__*"})
	if !f.Match("orders") {
		t.Error("orders not matched")
	}
}

func TestFilterMatch(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		topic            string
		want             bool
	}{
		{"exclude beats include for the same literal", []string{"orders"}, []string{"orders"}, "orders", false},
		{"exclude glob beats include literal", []string{"orders-dlq"}, []string{"*-dlq"}, "orders-dlq", false},
		{"exclude regex beats include glob", []string{"orders*"}, []string{"~.*-dlq"}, "orders-dlq", false},
		{"any include is enough", []string{"a", "orders*"}, nil, "orders-1", true},
		{"empty include selects nothing", nil, nil, "orders", false},
		{"empty include with exclude selects nothing", []string{}, []string{"x"}, "orders", false},
		{"star never matches broker-internal topics", []string{"*"}, nil, "__consumer_offsets", false},
		{"star matches single-underscore topics", []string{"*"}, nil, "_schemas", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, tt.include, tt.exclude)
			if got := f.Match(tt.topic); got != tt.want {
				t.Errorf("include %q exclude %q on %q = %v, want %v", tt.include, tt.exclude, tt.topic, got, tt.want)
			}
		})
	}
}

func TestNilFilterSelectsNothing(t *testing.T) {
	var f *Filter
	if f.Match("orders") || f.Literals() != nil {
		t.Error("nil filter selects something")
	}
	if (&Filter{}).Match("orders") {
		t.Error("zero filter selects something")
	}
}

func TestLiterals(t *testing.T) {
	f := mustFilter(t, []string{"orders", "orders-*", "a?", "v[12]", "~payments", "audit.events", "orders", "a+b(c)$"}, []string{"excluded"})
	want := []string{"orders", "audit.events", "a+b(c)$"}
	if got := f.Literals(); !slices.Equal(got, want) {
		t.Errorf("Literals() = %q, want %q", got, want)
	}
}

func TestIsPattern(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"orders", false},
		{"audit.events", false},
		{"a+b(c)|d$^", false},
		{"a]", false},
		{"orders*", true},
		{"a?", true},
		{"v[12]", true},
		{"~orders", true},
		{"a~b", false},
	}
	for _, tt := range tests {
		if got := IsPattern(tt.s); got != tt.want {
			t.Errorf("IsPattern(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
