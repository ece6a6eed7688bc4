package storage

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidKey is returned (wrapped, with the key quoted) by every backend
// method given a key that breaks the rules in ValidateKey. Test with errors.Is.
var ErrInvalidKey = errors.New("invalid key")

// TempPrefix begins the names of the filesystem backend's temporary files.
// A key element starting with it is reserved and rejected by ValidateKey on
// every backend, so that a repository can move between backends unchanged.
const TempPrefix = ".tmp-"

// ValidateKey reports whether key is a valid object key. A valid key is
// non-empty, at most 1024 bytes (the S3 limit), slash-separated, does not
// start or end with '/', has no empty, "." or ".." elements, no element
// starting with TempPrefix, and contains no backslash, no control
// character (U+0000..U+001F, U+007F: S3 servers list such keys back
// altered, so a repository under one would look empty) and only valid
// UTF-8.
// The error wraps ErrInvalidKey and names the key.
func ValidateKey(key string) error {
	reason := keyProblem(key)
	if reason == "" {
		return nil
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, reason)
}

func keyProblem(key string) string {
	switch {
	case key == "":
		return "empty"
	case len(key) > 1024:
		return "longer than 1024 bytes"
	case strings.HasPrefix(key, "/"):
		return "starts with '/'"
	case strings.HasSuffix(key, "/"):
		return "ends with '/'"
	case strings.ContainsRune(key, '\\'):
		return "contains a backslash"
	case strings.ContainsRune(key, 0):
		return "contains a NUL byte"
	case strings.ContainsFunc(key, isControl):
		return "contains a control character"
	case !utf8.ValidString(key):
		return "is not valid UTF-8"
	}
	for _, elem := range strings.Split(key, "/") {
		switch {
		case elem == "":
			return "has an empty path element (\"//\")"
		case elem == "." || elem == "..":
			return fmt.Sprintf("has a %q path element", elem)
		case strings.HasPrefix(elem, TempPrefix):
			return fmt.Sprintf("has a path element starting with the reserved %q", TempPrefix)
		}
	}
	return ""
}

// S3Prefix returns the key prefix an S3 repository uses for prefix (the
// storage.prefix setting, S3Options.Prefix): prefix without leading and
// trailing '/', "" for none. The rest must be a valid key (ValidateKey:
// no empty, "." or ".." element, no backslash, ...); otherwise the error
// wraps ErrInvalidKey and names the prefix. NewS3 applies it, and so does
// config validation, so that a prefix is refused before any command runs.
func S3Prefix(prefix string) (string, error) {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return "", nil
	}
	if err := ValidateKey(p); err != nil {
		return "", err
	}
	return p, nil
}

// validatePrefix checks a List prefix: it may be empty, may end with '/'
// and its last element may be partial ("dir/seg-" or "."), but complete
// elements follow the key rules.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	fail := func(reason string) error {
		return fmt.Errorf("%w: list prefix %q: %s", ErrInvalidKey, prefix, reason)
	}
	switch {
	case strings.HasPrefix(prefix, "/"):
		return fail("starts with '/'")
	case strings.ContainsRune(prefix, '\\'):
		return fail("contains a backslash")
	case strings.ContainsRune(prefix, 0):
		return fail("contains a NUL byte")
	case strings.ContainsFunc(prefix, isControl):
		return fail("contains a control character")
	case !utf8.ValidString(prefix):
		return fail("is not valid UTF-8")
	}
	elems := strings.Split(prefix, "/")
	for _, elem := range elems[:len(elems)-1] { // the last element may be partial
		switch {
		case elem == "":
			return fail("has an empty path element (\"//\")")
		case elem == "." || elem == "..":
			return fail(fmt.Sprintf("has a %q path element", elem))
		case strings.HasPrefix(elem, TempPrefix):
			return fail(fmt.Sprintf("has a path element starting with the reserved %q", TempPrefix))
		}
	}
	return nil
}

// isControl reports the C0 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
