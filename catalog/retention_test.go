package catalog_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want catalog.Duration
		err  string
	}{
		{in: "6m", want: catalog.Duration{Months: 6}},
		{in: "1y2m3d4h", want: catalog.Duration{Years: 1, Months: 2, Days: 3, Hours: 4}},
		{in: "30d", want: catalog.Duration{Days: 30}},
		{in: "2w", want: catalog.Duration{Weeks: 2}},
		{in: "1w2d12h", want: catalog.Duration{Weeks: 1, Days: 2, Hours: 12}},
		{in: "4h1y", want: catalog.Duration{Years: 1, Hours: 4}},
		{in: " 36h ", want: catalog.Duration{Hours: 36}},
		{in: "0d", want: catalog.Duration{}},
		{in: "90s", err: `unknown unit "s" after 90 (minutes and seconds are not units)`},
		{in: "6mo", err: `no number before "o"`},
		{in: "30", err: "no unit after 30"},
		{in: "d", err: `no number before "d"`},
		{in: "1d2d", err: `unit 'd' is given twice`},
		{in: "-1d", err: "must not be negative"},
		{in: "", err: "empty duration"},
		{in: "99999999999d", err: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := catalog.ParseDuration(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if again, err := catalog.ParseDuration(got.String()); !got.IsZero() && (err != nil || again != got) {
				t.Errorf("%q round-trips as %q: %+v, %v", tt.in, got.String(), again, err)
			}
		})
	}
}

// TestPolicyMatchesRestic applies each policy of restic's TestApplyPolicy
// (restic/restic internal/data/snapshot_policy_test.go, with its golden
// files; copied into testdata/restic_policy.json) to restic's snapshot
// times and expects restic's result: the same backups kept, for the same
// rules. Restic names a rule "daily snapshot", "oldest daily snapshot",
// "within 1d"; ours are "keep-daily", "oldest for keep-daily",
// "keep-within 1d".
func TestPolicyMatchesRestic(t *testing.T) {
	b, err := os.ReadFile("testdata/restic_policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Snapshots []time.Time `json:"snapshots"`
		Cases     []struct {
			Golden string `json:"golden"`
			Policy struct {
				Last, Hourly, Daily, Weekly, Monthly, Yearly int
				Within                                       string
			} `json:"policy"`
			Keep []struct {
				Time    time.Time `json:"time"`
				Matches []string  `json:"matches"`
			} `json:"keep"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Snapshots) != 103 || len(golden.Cases) != 30 {
		t.Fatalf("testdata/restic_policy.json holds %d snapshots and %d cases, want 103 and 30", len(golden.Snapshots), len(golden.Cases))
	}
	// Restic sorts newest first, stably.
	times := slices.Clone(golden.Snapshots)
	slices.SortStableFunc(times, func(a, b time.Time) int { return b.Compare(a) })
	resticRule := func(m string) string {
		m = strings.TrimSuffix(m, " snapshot")
		switch {
		case strings.HasPrefix(m, "within "):
			return "keep-" + m
		case strings.HasPrefix(m, "oldest "):
			return "oldest for keep-" + strings.TrimPrefix(m, "oldest ")
		}
		return "keep-" + m
	}
	for _, c := range golden.Cases {
		t.Run(c.Golden, func(t *testing.T) {
			p := catalog.Policy{Last: c.Policy.Last, Hourly: c.Policy.Hourly, Daily: c.Policy.Daily, Weekly: c.Policy.Weekly,
				Monthly: c.Policy.Monthly, Yearly: c.Policy.Yearly}
			if c.Policy.Within != "" {
				if p.Within, err = catalog.ParseDuration(c.Policy.Within); err != nil {
					t.Fatal(err)
				}
			}
			rules := catalog.ApplyPolicy(times, p, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var got, want []string
			for i, r := range rules {
				if len(r) > 0 {
					got = append(got, times[i].Format(time.RFC3339Nano)+" "+strings.Join(r, ", "))
				}
			}
			for _, k := range c.Keep {
				var rs []string
				for _, m := range k.Matches {
					rs = append(rs, resticRule(m))
				}
				want = append(want, k.Time.Format(time.RFC3339Nano)+" "+strings.Join(rs, ", "))
			}
			if !slices.Equal(got, want) {
				t.Errorf("policy %s: kept %d backups, restic %d\ngot:\n  %s\nrestic:\n  %s", p, len(got), len(want),
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
