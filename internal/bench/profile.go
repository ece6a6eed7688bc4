package bench

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// genericFrames are the functions every profile of the CLI has at the top
// by cumulative CPU and that say nothing of what bounds a run: the
// goroutine roots, main's and cobra's wiring, errgroup's goroutines.
var genericFrames = []string{"runtime.goexit", "runtime.main", "main.", "github.com/spf13/cobra.", "golang.org/x/sync/errgroup.", "sync.(*WaitGroup)."}

// readProfile reads a CPU profile with `go tool pprof -top -cum` and keeps
// its top five functions by cumulative CPU, generic frames left out, and
// with `go tool pprof -top` its top five by flat (own) CPU.
func readProfile(ctx context.Context, bin, file string) (Profile, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=60", bin, file).Output()
	if err != nil {
		return Profile{}, fmt.Errorf("go tool pprof -top -cum %s: %w", file, err)
	}
	p, err := parsePprofTop(string(out), 5)
	if err != nil {
		return Profile{}, err
	}
	out, err = exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=10", bin, file).Output()
	if err != nil {
		return Profile{}, fmt.Errorf("go tool pprof -top %s: %w", file, err)
	}
	flat, err := parsePprofTop(string(out), 5)
	if err != nil {
		return Profile{}, err
	}
	p.Flat = flat.Top
	return p, nil
}

var pprofTotal = regexp.MustCompile(`Total samples = ([0-9.]+[a-zµ]*)`)

// parsePprofDuration parses pprof's durations: Go's ("1.20s", "350ms",
// "0") and its "2.50mins" and "1.10hrs".
func parsePprofDuration(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"mins": time.Minute, "hrs": time.Hour} {
		if v, ok := strings.CutSuffix(s, suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(f * float64(unit)), nil
		}
	}
	return time.ParseDuration(s)
}

// parsePprofTop parses the text of `go tool pprof -top -cum`: the total
// from its "Total samples = D" header and, from the table (flat flat%
// sum% cum cum% function), the first n functions that are not generic
// frames.
func parsePprofTop(text string, n int) (Profile, error) {
	var p Profile
	if m := pprofTotal.FindStringSubmatch(text); m != nil {
		d, err := parsePprofDuration(m[1])
		if err != nil {
			return Profile{}, fmt.Errorf("pprof total %q: %w", m[1], err)
		}
		p.Total = d
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	table := false
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" && f[1] == "flat%" {
			table = true
			continue
		}
		if !table || len(f) < 6 {
			continue
		}
		fn := strings.Join(f[5:], " ")
		if isGeneric(fn) {
			continue
		}
		flatPct, err1 := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		cum, err2 := parsePprofDuration(f[3])
		cumPct, err3 := strconv.ParseFloat(strings.TrimSuffix(f[4], "%"), 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return Profile{}, fmt.Errorf("pprof line %q: not flat flat%% sum%% cum cum%% function", line)
		}
		p.Top = append(p.Top, ProfileLine{Func: fn, FlatPct: flatPct, Cum: cum, CumPct: cumPct})
		if len(p.Top) == n {
			break
		}
	}
	if !table {
		return Profile{}, fmt.Errorf("no table in the pprof output:\n%s", text)
	}
	return p, nil
}

func isGeneric(fn string) bool {
	for _, g := range genericFrames {
		if strings.HasPrefix(fn, g) {
			return true
		}
	}
	return false
}
