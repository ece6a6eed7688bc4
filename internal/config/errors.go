package config

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a config file.
type Error struct {
	File string // the name given to Load or Parse
	Line int    // 1-based line of the key or list item; 0 if unknown
	Key  string // key path, e.g. "storage.bucket" or "source.topics.include[2]"; "" for the whole file
	Msg  string // the problem as a sentence that names Key
}

// Error returns "FILE: MSG (line N)".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %s (line %d)", e.File, e.Msg, e.Line)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ErrorList is every problem found in one config file, in line order. Parse
// and Load return it (as an error) when the file is invalid.
type ErrorList []*Error

// Error lists the problems, one a line.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", l[0].File, len(l))
	for _, e := range l {
		b.WriteString("\n  ")
		b.WriteString(e.Msg)
		if e.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
	}
	return b.String()
}

// Unwrap returns the individual errors, for errors.As and errors.Is.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Line < l[j].Line })
	return l
}
