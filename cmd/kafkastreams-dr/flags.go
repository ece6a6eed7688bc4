package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// durationValue is a pflag.Value of a duration flag that refuses what a
// duration flag of this tool never means: a negative duration, and zero
// when zero says nothing (zeroMeans == ""). The syntax is Go's
// time.ParseDuration ("30s", "2m", "1h30m"; a unit is required except for
// "0"). Every duration flag of every command is one (durationFlag), so that
// they are all checked alike.
type durationValue struct {
	d         *time.Duration
	zeroMeans string // what 0 does, for the message of a negative value; "" when 0 is refused
}

// durationError is the reason durationValue.Set refused a value; the flag
// error func (flagError) prints it as `--NAME "VALUE": reason`.
type durationError struct{ reason string }

func (e *durationError) Error() string { return e.reason }

// String is the duration as time.Duration prints it, "0" for zero (so
// that --help shows no default of 0, as for pflag's own duration flags).
func (v *durationValue) String() string {
	if *v.d == 0 {
		return "0"
	}
	return v.d.String()
}
func (v *durationValue) Type() string { return "duration" }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return &durationError{"not a duration (like 30s, 2m)"}
	case d < 0 && v.zeroMeans != "":
		return &durationError{fmt.Sprintf("a duration cannot be negative: give 0 or more, like 30s or 2m (0 %s)", v.zeroMeans)}
	case d < 0:
		return &durationError{"a duration cannot be negative: give one above zero, like 30s or 2m"}
	case d == 0 && v.zeroMeans == "":
		return &durationError{"zero leaves no time at all: give a duration above zero, like 30s or 2m, or leave the flag out"}
	}
	*v.d = d
	return nil
}

// durationFlag defines the duration flag name on fs with default value:
// a negative value is a usage error (exit 2) naming the flag and an
// example, and so is 0 unless zeroMeans says what 0 does (e.g. "refuses at
// once"); leaving the flag out keeps value, whatever it is.
func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, zeroMeans, usage string) {
	*p = value
	fs.Var(&durationValue{d: p, zeroMeans: zeroMeans}, name, usage)
}

// flagError is every command's flag error func: a usage error (exit 2);
// a value a flag refused reads `--NAME "VALUE": reason`, without pflag's
// `invalid argument ... flag:` and the parser's own words.
func flagError(_ *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	var de *durationError
	if errors.As(err, &iv) && errors.As(err, &de) {
		return &usageError{fmt.Errorf("--%s %q: %s", iv.GetFlag().Name, iv.GetValue(), de.reason)}
	}
	return &usageError{err}
}

// commandGroup makes cmd (offsets, config, state) a group that only runs its
// subcommands: called alone, with an unknown command, or with flags
// before any command ("offsets -c app.yaml"), it is a usage error naming
// the commands to run, with the flags as given (cobra would say "unknown
// shorthand flag: 'c' in -c": the group has no flags of its own). Flags
// are not parsed on the group itself, so that they reach that message;
// -h and --help still show its help.
func commandGroup(cmd *cobra.Command) {
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var subs []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				subs = append(subs, c.Name())
			}
		}
		var flags []string
		for _, a := range args {
			switch {
			case a == "-h" || a == "--help":
				return cmd.Help()
			case len(flags) == 0 && !strings.HasPrefix(a, "-"):
				return &usageError{fmt.Errorf("unknown command %q for %q", a, cmd.CommandPath())}
			}
			flags = append(flags, a)
		}
		// Name only the commands that take every flag given (state wipe
		// has no -c), unless none does.
		if takers := subsTaking(cmd, subs, flags); len(takers) > 0 {
			subs = takers
		}
		runs := make([]string, len(subs))
		var fill []string // "DIR: the instance's state.dir", once each
		for i, sub := range subs {
			run := append([]string{cmd.CommandPath(), sub}, quoteArgs(flags)...)
			// The required flags not given, as placeholders
			// (hintRequired), so that the hint says what is missing; a
			// command that marks none, given no flag: -c FILE.
			req := missingRequired(cmd, sub, flags)
			if len(req) == 0 && len(flags) == 0 {
				run = append(run, "-c FILE")
			}
			for _, r := range req {
				run = append(run, r[0])
				if len(flags) > 0 && !slices.Contains(fill, r[1]) {
					fill = append(fill, r[1])
				}
			}
			runs[i] = strings.Join(run, " ")
		}
		hint := strings.Join(runs, ", or ")
		if len(fill) > 0 {
			hint += " (" + strings.Join(fill, "; ") + ")"
		}
		if len(flags) == 0 {
			return &usageError{fmt.Errorf("missing command: run %s", hint)}
		}
		return &usageError{fmt.Errorf("%q needs a command before its flags: run %s", cmd.Name(), hint)}
	}
}

// hintPlaceholder is the flag annotation hintRequired sets: a required
// flag's placeholder ("DIR") and what to fill in ("the instance's
// state.dir").
const hintPlaceholder = "kdr-hint-placeholder"

// hintRequired marks cmd's flag name as required for commandGroup's hint:
// when the flags given to the group lack it, the hint adds "--name
// PLACEHOLDER" and says "PLACEHOLDER: meaning". It panics on a flag cmd
// does not define (a programming error).
func hintRequired(cmd *cobra.Command, name, placeholder, meaning string) {
	if err := cmd.Flags().SetAnnotation(name, hintPlaceholder, []string{placeholder, meaning}); err != nil {
		panic(err)
	}
}

// missingRequired returns, for the subcommand sub of cmd, the flags marked
// by hintRequired that args does not name: {"--state-dir DIR", "DIR: the
// instance's state.dir"}, in flag name order (pflag's VisitAll).
func missingRequired(cmd *cobra.Command, sub string, args []string) [][2]string {
	c, _, err := cmd.Find([]string{sub})
	if err != nil || c == cmd {
		return nil
	}
	var out [][2]string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		a := f.Annotations[hintPlaceholder]
		if len(a) != 2 {
			return
		}
		for _, g := range args {
			n, _, _ := strings.Cut(g, "=")
			if n == "--"+f.Name || (f.Shorthand != "" && strings.HasPrefix(g, "-"+f.Shorthand) && !strings.HasPrefix(g, "--")) {
				return
			}
		}
		flag := "--" + f.Name
		if f.Shorthand != "" {
			flag = "-" + f.Shorthand
		}
		out = append(out, [2]string{flag + " " + a[0], a[0] + ": " + a[1]})
	})
	return out
}

// subsTaking returns the subcommands of cmd, among subs, that define every
// flag named in args ("-c", "--config", "--config=FILE"; values are
// skipped), their own or inherited.
func subsTaking(cmd *cobra.Command, subs, args []string) []string {
	var out []string
	for _, name := range subs {
		sub, _, err := cmd.Find([]string{name})
		if err != nil || sub == cmd {
			continue
		}
		takes := true
		for _, a := range args {
			var f *pflag.Flag
			switch {
			case strings.HasPrefix(a, "--"):
				n, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if f = sub.Flags().Lookup(n); f == nil {
					f = sub.InheritedFlags().Lookup(n)
				}
			case strings.HasPrefix(a, "-") && len(a) >= 2:
				if f = sub.Flags().ShorthandLookup(a[1:2]); f == nil {
					f = sub.InheritedFlags().ShorthandLookup(a[1:2])
				}
			default:
				continue // a flag's value
			}
			if f == nil {
				takes = false
				break
			}
		}
		if takes {
			out = append(out, name)
		}
	}
	return out
}

// quoteArgs quotes, for a POSIX shell, the arguments that need it, so that
// a command printed as a hint runs as printed.
func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return q
}
