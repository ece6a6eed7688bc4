package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a retention period in calendar units, restic's
// (internal/data.Duration, "restic forget --keep-within"): years, months,
// days and hours, plus weeks (7 days each, which restic does not have).
// There are no minutes or seconds: "m" is months. The zero value is "not
// set".
type Duration struct {
	Years, Months, Weeks, Days, Hours int
}

// DurationUnits names the units ParseDuration accepts, for messages.
const DurationUnits = "y (years), m (months), w (weeks), d (days), h (hours)"

// ParseDuration parses a retention period: numbers each followed by a unit
// of DurationUnits, largest first or in any order, e.g. "6m", "30d", "2w",
// "1y2m3d4h" (restic's syntax). Each unit appears at most once (restic
// keeps the last silently; a repeated unit is more likely a typo). Errors
// name the problem: a number without a unit, a unit without a number, an
// unknown unit (minutes and seconds are not units), a negative number.
func ParseDuration(s string) (Duration, error) {
	var d Duration
	rest := strings.TrimSpace(s)
	if rest == "" {
		return d, errors.New("empty duration")
	}
	seen := map[byte]bool{}
	for rest != "" {
		if rest[0] == '-' {
			return Duration{}, errors.New("a duration must not be negative")
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return Duration{}, fmt.Errorf("no number before %q", rest[:1])
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n > 1e6 {
			return Duration{}, fmt.Errorf("%s is too large", rest[:i])
		}
		if i == len(rest) {
			return Duration{}, fmt.Errorf("no unit after %d", n)
		}
		u := rest[i]
		if seen[u] {
			return Duration{}, fmt.Errorf("unit %q is given twice", u)
		}
		seen[u] = true
		switch u {
		case 'y':
			d.Years = n
		case 'm':
			d.Months = n
		case 'w':
			d.Weeks = n
		case 'd':
			d.Days = n
		case 'h':
			d.Hours = n
		default:
			return Duration{}, fmt.Errorf("unknown unit %q after %d (minutes and seconds are not units)", rest[i:], n)
		}
		rest = rest[i+1:]
	}
	return d, nil
}

// String formats d as ParseDuration reads it, largest unit first: "1y2m3d4h".
func (d Duration) String() string {
	var b strings.Builder
	for _, p := range []struct {
		n    int
		unit string
	}{{d.Years, "y"}, {d.Months, "m"}, {d.Weeks, "w"}, {d.Days, "d"}, {d.Hours, "h"}} {
		if p.n != 0 {
			fmt.Fprintf(&b, "%d%s", p.n, p.unit)
		}
	}
	return b.String()
}

// IsZero reports whether every unit is 0 (the rule is not used).
func (d Duration) IsZero() bool { return d == Duration{} }

func (d Duration) negative() bool {
	return d.Years < 0 || d.Months < 0 || d.Weeks < 0 || d.Days < 0 || d.Hours < 0
}

// before returns t minus d, in calendar arithmetic (time.Time.AddDate, as
// restic): one month before March 31 is March 3 (February 31 normalized).
func (d Duration) before(t time.Time) time.Time {
	return t.AddDate(-d.Years, -d.Months, -(7*d.Weeks + d.Days)).Add(-time.Duration(d.Hours) * time.Hour)
}

// Policy is a retention policy in restic's terms ("restic forget",
// internal/data.ExpirePolicy). A backup is kept when any rule keeps it
// (the union); the rules are applied to the complete backups, newest
// (greatest backup id, which starts with the start time) first, as restic
// applies them to snapshots sorted by time.
//
//   - Last keeps the Last newest backups.
//   - Hourly, Daily, Weekly, Monthly and Yearly keep the newest backup of
//     each of the last N hours, days, ISO weeks, months or years that have
//     backups (periods without one do not count), in UTC. When the backups
//     run out before N periods are counted, the oldest backup is kept too
//     (restic: this keeps the longest history the count allows).
//   - Within keeps the backups taken after the newest backup's time minus
//     Within (not after now minus Within: a repository whose backups
//     stopped keeps its last ones). A backup's time is Summary.Time.
//
// A count of 0 leaves its rule unused; Unlimited (-1, restic's
// "unlimited") keeps the newest backup of every period (keep-last: every
// backup). Other negative counts are refused.
type Policy struct {
	Last    int
	Hourly  int
	Daily   int
	Weekly  int
	Monthly int
	Yearly  int
	Within  Duration
}

// Unlimited is the count of a Policy rule that keeps every period.
const Unlimited = -1

// IsZero reports whether no rule is used.
func (p Policy) IsZero() bool { return p == Policy{} }

func (p Policy) validate() error {
	for _, c := range []struct {
		n    int
		flag string
	}{{p.Last, "keep-last"}, {p.Hourly, "keep-hourly"}, {p.Daily, "keep-daily"}, {p.Weekly, "keep-weekly"}, {p.Monthly, "keep-monthly"}, {p.Yearly, "keep-yearly"}} {
		if c.n < Unlimited {
			return fmt.Errorf("%s %d: must not be negative (Unlimited, -1, keeps every period)", c.flag, c.n)
		}
	}
	if p.Within.negative() {
		return fmt.Errorf("keep-within %s: must not be negative", p.Within)
	}
	if p.IsZero() {
		return ErrNoPolicy
	}
	return nil
}

// String describes the policy for people: "keep-last 3, keep-daily 7".
func (p Policy) String() string {
	var parts []string
	for _, c := range []struct {
		n    int
		flag string
	}{{p.Last, "keep-last"}, {p.Hourly, "keep-hourly"}, {p.Daily, "keep-daily"}, {p.Weekly, "keep-weekly"}, {p.Monthly, "keep-monthly"}, {p.Yearly, "keep-yearly"}} {
		switch {
		case c.n == Unlimited:
			parts = append(parts, c.flag+" unlimited")
		case c.n > 0:
			parts = append(parts, fmt.Sprintf("%s %d", c.flag, c.n))
		}
	}
	if !p.Within.IsZero() {
		parts = append(parts, "keep-within "+p.Within.String())
	}
	return strings.Join(parts, ", ")
}

// The period of a backup time for each count rule, as restic's buckers.
func hourOf(t time.Time) int  { return t.Year()*1000000 + int(t.Month())*10000 + t.Day()*100 + t.Hour() }
func dayOf(t time.Time) int   { return t.Year()*10000 + int(t.Month())*100 + t.Day() }
func weekOf(t time.Time) int  { y, w := t.ISOWeek(); return y*100 + w }
func monthOf(t time.Time) int { return t.Year()*100 + int(t.Month()) }
func yearOf(t time.Time) int  { return t.Year() }

// applyPolicy returns, for each backup time (newest first), the rules that
// keep it: none means forget. It is restic's ApplyPolicy
// (internal/data/snapshot_policy.go) without tags and keep-within-<period>:
// the same buckets, the same "oldest" rule, keep-within counted back from
// the newest time that is not after now.
func applyPolicy(times []time.Time, p Policy, now time.Time) [][]string {
	out := make([][]string, len(times))
	if len(times) == 0 {
		return out
	}
	var latest time.Time
	for _, t := range times {
		if t.After(latest) && t.Before(now) {
			latest = t
		}
	}
	buckets := []struct {
		count  int
		period func(time.Time) int
		rule   string
		last   int
	}{
		{p.Last, nil, "keep-last", -1},
		{p.Hourly, hourOf, "keep-hourly", -1},
		{p.Daily, dayOf, "keep-daily", -1},
		{p.Weekly, weekOf, "keep-weekly", -1},
		{p.Monthly, monthOf, "keep-monthly", -1},
		{p.Yearly, yearOf, "keep-yearly", -1},
	}
	cutoff := p.Within.before(latest)
	for nr, cur := range times {
		cur = cur.UTC()
		var rules []string
		if !p.Within.IsZero() && cur.After(cutoff) {
			rules = append(rules, "keep-within "+p.Within.String())
		}
		for i := range buckets {
			b := &buckets[i]
			if b.count == 0 { // unused, or the count is used up
				continue
			}
			val := nr // keep-last: every backup is a period of its own
			if b.period != nil {
				val = b.period(cur)
			}
			if val != b.last || nr == len(times)-1 {
				rule := b.rule
				if val == b.last { // the oldest backup, while the count lasts
					rule = "oldest for " + b.rule
				}
				b.last = val
				if b.count > 0 { // Unlimited stays
					b.count--
				}
				rules = append(rules, rule)
			}
		}
		out[nr] = rules
	}
	return out
}
