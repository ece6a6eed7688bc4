package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ByteSize is a size in bytes. In the file it is an integer (67108864) or a
// string with a unit: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB
// (powers of 1024), e.g. "64MiB".
type ByteSize int64

// String formats the size with the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		size ByteSize
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(b))
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1000, "kb": 1000, "kib": 1 << 10,
	"m": 1000 * 1000, "mb": 1000 * 1000, "mib": 1 << 20,
	"g": 1000 * 1000 * 1000, "gb": 1000 * 1000 * 1000, "gib": 1 << 30,
}

// parseByteSize parses "67108864", "64MiB", "64 MiB", "1GB".
func parseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with B, KB, KiB, MB, MiB, GB, GiB)", s)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s[:i], "_", ""), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	mult, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit (want B, KB, KiB, MB, MiB, GB or GiB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(n * mult), nil
}

var byteSizeType = reflect.TypeFor[ByteSize]()

var durationType = reflect.TypeFor[time.Duration]()

// decoder fills a struct from a yaml.Node tree, recording the line of every
// key path it sees and collecting every problem rather than stopping at the
// first.
type decoder struct {
	file   string
	lookup func(string) (string, bool)
	errs   ErrorList
	lines  map[string]int  // key path -> line of the key or list item
	bad    map[string]bool // key paths whose value could not be decoded
	envRef map[string]bool // key paths whose value referenced ${VAR}
	// null lists the key paths written without a value ("cut_attempts:"):
	// decoded as the zero value, which validate must not report as if
	// the zero had been written.
	null map[string]bool
	// emptyEnv lists, per key path, the ${VAR} references that expanded
	// to "" (set but empty): a warning, and the likely cause of an error
	// at that key.
	emptyEnv map[string][]string
	// location lists the key paths of fields tagged config:"location":
	// a path, a directory prefix, a bucket or a file the tool reads,
	// writes or deletes in. See (*decoder).locationScalar.
	location map[string]bool
}

// locationTag is the struct tag (config:"location") of a string field
// that names where data is read, written or deleted: storage.path,
// storage.prefix, storage.bucket, the TLS files, the SASL password file.
const locationTag = "location"

func (d *decoder) errorf(path string, line int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if names := d.emptyEnv[path]; len(names) > 0 {
		msg += fmt.Sprintf(" (environment variable %s is set but empty)", strings.Join(names, ", "))
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Key: path, Msg: msg})
}

func (d *decoder) fail(path string, line int, format string, args ...any) {
	d.bad[path] = true
	d.errorf(path, line, format, args...)
}

func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "nothing"
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "an unexpected node"
}

func typeName(t reflect.Type) string {
	if t == byteSizeType {
		return `a size (bytes, or e.g. "64MiB")`
	}
	if t == durationType {
		return `a duration (e.g. "30s", "2m")`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Struct, reflect.Pointer:
		return "a mapping"
	}
	return t.String()
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Style == 0
}

// decode fills v from n. path is n's key path; line is where it is named.
func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		d.null[path] = true
		return // an empty value leaves the zero value (and its default)
	}
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(path, n, v.Elem())
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.fail(path, n.Line, "%s must be %s, not %s", path, typeName(t), kindName(n))
			return
		}
		d.mapping(path, n, v)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n.Line, "%s must be %s, not %s", path, typeName(t), kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = item.Line
			d.decode(p, item, s.Index(i))
		}
		v.Set(s)
	default:
		d.scalar(path, n, v)
	}
}

// notKeysOf lists, per section, the fields of its Go type that are not
// keys of that section: Cluster is the type of source and target, and only
// the source selects topics. They are decoded (validate refuses them by
// name, with the reason) but never offered as known keys or suggestions.
var notKeysOf = map[string][]string{"target": {"topics"}}

func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value) {
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		if !slices.Contains(notKeysOf[path], tag) {
			names = append(names, tag)
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(path, k.Line, "%s has a key that is %s; keys are plain names", orRoot(path), kindName(k))
			continue
		}
		p := joinKey(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown key %s", p)
			if s := nearest(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", joinKey(path, s))
			} else {
				msg += fmt.Sprintf(" (known keys in %s: %s)", orRoot(path), strings.Join(names, ", "))
			}
			d.fail(p, k.Line, "%s", msg)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(p, k.Line, "%s is set twice (first on line %d)", p, first)
			continue
		}
		seen[k.Value] = k.Line
		d.lines[p] = k.Line
		if t.Field(idx).Tag.Get("config") == locationTag {
			d.location[p] = true
		}
		d.decode(p, val, v.Field(idx))
	}
}

func orRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// scalar decodes a string, bool, integer or ByteSize after expanding
// ${VAR} references in the value.
func (d *decoder) scalar(path string, n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n.Line, "%s must be %s, not %s", path, typeName(t), kindName(n))
		return
	}
	if d.location[path] && !d.locationScalar(path, n) {
		return
	}
	var empty []string
	lookup := func(name string) (string, bool) {
		v, ok := d.lookup(name)
		if ok && v == "" && !slices.Contains(empty, name) {
			empty = append(empty, name)
		}
		return v, ok
	}
	s, refs, err := expandEnv(n.Value, lookup)
	if len(empty) > 0 {
		d.emptyEnv[path] = empty
	}
	if err != nil {
		d.fail(path, n.Line, "%s: %v", path, err)
		return
	}
	if refs {
		d.envRef[path] = true
	}
	if d.location[path] && len(empty) > 0 {
		// A location built from an empty variable is another location:
		// "${EV}/r" is "/r", a directory under the root; "apps/${EV}"
		// is the prefix of every application. Refused, as an empty
		// application_id is.
		d.fail(path, n.Line, "%s %q expands to %q: a location is never built from an empty variable; set the variable or write %s without it", path, n.Value, s, path)
		return
	}
	switch {
	case t == byteSizeType:
		b, err := parseByteSize(s)
		if err != nil {
			d.fail(path, n.Line, "%s must be %s: %v", path, typeName(t), err)
			return
		}
		v.SetInt(int64(b))
	case t == durationType:
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || dur <= 0 {
			d.fail(path, n.Line, "%s must be %s greater than zero, not %q", path, typeName(t), s)
			return
		}
		v.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		v.SetString(s)
	case t.Kind() == reflect.Bool:
		switch strings.ToLower(s) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.fail(path, n.Line, "%s must be true or false, not %q", path, s)
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if errors.Is(err, strconv.ErrRange) || err == nil && v.OverflowInt(i) {
			d.fail(path, n.Line, "%s %s is too large (at most %d)", path, s, maxInt(t))
			return
		}
		if err != nil {
			d.fail(path, n.Line, "%s must be an integer, not %q", path, s)
			return
		}
		v.SetInt(i)
	default:
		d.fail(path, n.Line, "%s: cannot decode into %s", path, t)
	}
}

// locationScalar reports whether n can be a location's value: a YAML
// string. yaml.v3 hands a string field the text of any scalar, so
// `path: 5` would be the relative path "5" and `prefix: 2024` the prefix
// "2024"; an integer, a number or a boolean is refused (quoted, "5" is a
// string).
func (d *decoder) locationScalar(path string, n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!str" {
		return true // a mapping or list is refused below, as for any string
	}
	d.fail(path, n.Line, "%s must be a string, not %s: quote it (%s: \"%s\") if %s is meant", path, kindName(n), path[strings.LastIndexByte(path, '.')+1:], n.Value, n.Value)
	return false
}

// expandEnv replaces ${NAME} with the environment variable NAME and $${
// with a literal "${". refs reports whether any variable was referenced.
// An unset variable, an unterminated ${ and a bad name are errors; a
// variable set to "" expands to "" (the decoder warns about it).
func expandEnv(s string, lookup func(string) (string, bool)) (out string, refs bool, err error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", refs, fmt.Errorf("unterminated ${ in %q (write $${ for a literal ${)", s)
			}
			name := s[i+2 : i+2+end]
			if !ValidEnvName(name) {
				return "", refs, fmt.Errorf("${%s} is not a valid environment variable reference (write $${ for a literal ${)", name)
			}
			val, ok := lookup(name)
			if !ok && strings.HasPrefix(name, drillEnvPrefix) {
				// ${...} is expanded when the config is read, before the
				// drill sets its variables for the application it starts.
				return "", refs, fmt.Errorf("environment variable %s is not set: the drill sets $%s for the application it starts (drill.app.command), so write $%s without braces and the shell expands it", name, name, name)
			}
			if !ok {
				return "", refs, fmt.Errorf("environment variable %s is not set", name)
			}
			refs = true
			b.WriteString(val)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), refs, nil
}

// drillEnvPrefix begins the names of the variables the drill sets for the
// application it starts (KAFKASTREAMS_DR_BOOTSTRAP_SERVERS,
// KAFKASTREAMS_DR_APPLICATION_ID); see DrillApp.Command.
const drillEnvPrefix = "KAFKASTREAMS_DR_"

// maxInt is the largest value of the integer type t.
func maxInt(t reflect.Type) int64 {
	return int64(1)<<(t.Bits()-1) - 1
}

// ValidEnvName reports whether name is a portable environment variable
// (and shell variable) name: a letter or "_", then letters, digits and
// "_" (POSIX, IEEE Std 1003.1 XBD 3.235 "Name"), as ${NAME} in a config
// value and NAME=value before a drill.app.command program need.
func ValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// nearest returns the candidate closest to s by edit distance, if close
// enough to be a likely typo.
func nearest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
