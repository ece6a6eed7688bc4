package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// writeHTMLReport writes rep as the HTML page of --report (drill.Report.HTML)
// to o.Report, whose directory must exist (checkOutputPath): into a
// temporary file of that directory first, renamed over FILE once complete,
// so that FILE is never half-written. The page's history section is the
// drills of rep's application recorded in store (pageHistory); nil store:
// no history section.
func writeHTMLReport(ctx context.Context, o *drillOptions, store storage.Backend, rep *drill.Report, errOut io.Writer) error {
	run := drill.HTMLRun{Version: version, GoVersion: runtime.Version(), Command: o.commandLine, ConfigFile: o.ConfigFile}
	if store != nil {
		run.History, run.Trend, run.HistoryWarnings = pageHistory(ctx, store, rep.ApplicationID, o.RTOGrowthThreshold/100)
		for _, w := range run.HistoryWarnings {
			fmt.Fprintf(errOut, "warning: the HTML report's history: %s\n", w)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(o.Report), ".drill-report-*.html")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename: nothing to remove
	if err := rep.HTML(f, run); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", o.Report, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", o.Report, err)
	}
	return os.Rename(tmp, o.Report)
}

// pageHistoryTimeout bounds reading the history for the HTML report: 30
// seconds, after which the page says so and the drill goes on.
const pageHistoryTimeout = 30 * time.Second

// pageHistory reads the drills of applicationID recorded in store
// (drill.History) and their trend at threshold (a fraction: 0.2 is 20%)
// for the HTML report, within pageHistoryTimeout of ctx. A history that
// cannot be read is no error: its warnings say why (a report that does
// not decode is left out and named; a listing or storage error leaves no
// rows), for the page and stderr.
func pageHistory(ctx context.Context, store storage.Backend, applicationID string, threshold float64) ([]drill.HistoryRow, drill.RTOTrend, []string) {
	ctx, cancel := context.WithTimeout(ctx, pageHistoryTimeout)
	defer cancel()
	rows, warnings, err := drill.History(ctx, store, applicationID)
	for i, w := range warnings {
		warnings[i] = "skipped an unreadable drill report: " + w
	}
	if err != nil {
		return nil, drill.RTOTrend{Threshold: threshold}, append(warnings, fmt.Sprintf("the drills recorded in %s could not be read (kafkastreams-dr drill history -c FILE tells more): %v", store.Location(), err))
	}
	return rows, drill.Trend(rows, threshold), warnings
}

// drillCommandLine is the command as it ran, for the HTML report, quoted
// for a POSIX shell: the program, the global flags given, the command's
// name and its flags given, each with its value. It is rebuilt from the
// parsed flags (never os.Args), so it holds flags only: the config file's
// path, never its contents. A value that is a URL with user information
// (for example --push-gateway https://user:password@host) has its password
// replaced by "xxxxx", or its user name when it has no password (a token).
func drillCommandLine(cmd *cobra.Command) string {
	args := []string{"kafkastreams-dr"}
	flags := func(fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Changed {
				return
			}
			name := "--" + f.Name
			switch sv, ok := f.Value.(pflag.SliceValue); {
			case f.Value.Type() == "bool":
				if f.Value.String() == "true" {
					args = append(args, name)
				} else {
					args = append(args, name+"=false")
				}
			case ok && f.Value.Type() == "stringArray":
				for _, v := range sv.GetSlice() {
					args = append(args, name, redactURL(v))
				}
			case ok:
				vs := sv.GetSlice()
				for i := range vs {
					vs[i] = redactURL(vs[i])
				}
				args = append(args, name, strings.Join(vs, ","))
			default:
				args = append(args, name, redactURL(f.Value.String()))
			}
		})
	}
	flags(cmd.InheritedFlags())
	args = append(args, cmd.Name())
	flags(cmd.LocalFlags())
	return strings.Join(quoteArgs(args), " ")
}

// redactURL is v with the password of a URL replaced by "xxxxx" (its user
// name when it has no password: a token); any other value as it is.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	} else {
		u.User = url.User("xxxxx")
	}
	return u.String()
}
