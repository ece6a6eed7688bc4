package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestPruneRefusedWhileLocked: a backup holding the lock (fresh heartbeat,
// another host) refuses prune with exit 11 (restic's "repository is
// already locked"; issue 9: it was 2, a refusal, so a CronJob could not
// tell the two apart), naming the holder; nothing is deleted.
func TestPruneRefusedWhileLocked(t *testing.T) {
	store, storageYAML := catalogRepos[0].open(t)
	_, cfg := threeBackups(t, store, storageYAML)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lock := fmt.Sprintf(`{"owner":"backup 20260101T000000.000Z-00000000","hostname":"other-host","pid":1,"created_at":%q,"heartbeat_at":%q}`, now, now)
	if err := store.Put(t.Context(), format.LockKey, strings.NewReader(lock), int64(len(lock))); err != nil {
		t.Fatal(err)
	}
	before := objectCount(t, store)
	code, stdout, stderr := runCLI(t, "prune", "-c", cfg, "--keep-last", "1")
	if code != 11 || !strings.Contains(stderr, "other-host") || !strings.Contains(stderr, "run prune again once") {
		t.Fatalf("prune of a locked repository: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if after := objectCount(t, store); after != before {
		t.Fatalf("refused prune changed the repository: %d objects, then %d", before, after)
	}
}

func TestPruneFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		want   *pruneOptions // nil: a usage error
		errMsg string
	}{
		{"keep-last", []string{"--keep-last", "3"}, &pruneOptions{Policy: catalog.Policy{Last: 3}}, ""},
		{"keep-within days", []string{"--keep-within", "30d", "--dry-run"}, &pruneOptions{Policy: catalog.Policy{Within: catalog.Duration{Days: 30}}, DryRun: true}, ""},
		{"both", []string{"--keep-last", "1", "--keep-within", "1w2d12h", "--json"}, &pruneOptions{Policy: catalog.Policy{Last: 1, Within: catalog.Duration{Weeks: 1, Days: 2, Hours: 12}}, JSON: true}, ""},
		{"m is months, as in restic", []string{"--keep-within", "90m"}, &pruneOptions{Policy: catalog.Policy{Within: catalog.Duration{Months: 90}}}, ""},
		{"every count rule", []string{"--keep-hourly", "24", "--keep-daily", "7", "--keep-weekly", "5", "--keep-monthly", "12", "--keep-yearly", "3"},
			&pruneOptions{Policy: catalog.Policy{Hourly: 24, Daily: 7, Weekly: 5, Monthly: 12, Yearly: 3}}, ""},
		{"unlimited, as in restic", []string{"--keep-daily", "7", "--keep-monthly", "unlimited"},
			&pruneOptions{Policy: catalog.Policy{Daily: 7, Monthly: catalog.Unlimited}}, ""},
		{"a negative count is not unlimited", []string{"--keep-last", "-1"}, nil, `want a count of at least 1 or "unlimited"`},
		{"neither", nil, nil, "say what to keep: --keep-last N, --keep-hourly N"},
		{"keep-last 0 would keep nothing", []string{"--keep-last", "0"}, nil, `invalid argument "0" for "--keep-last" flag: want a count of at least 1`},
		{"keep-daily 0 would keep nothing", []string{"--keep-daily", "0"}, nil, `invalid argument "0" for "--keep-daily" flag: want a count of at least 1`},
		{"bad duration", []string{"--keep-within", "a month"}, nil, "invalid --keep-within \"a month\": no number before \"a\"; write a number and a unit, or several: y (years), m (months)"},
		{"minutes are not a unit", []string{"--keep-within", "90s"}, nil, "unknown unit \"s\" after 90 (minutes and seconds are not units)"},
		{"zero duration", []string{"--keep-within", "0d"}, nil, "must be more than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &globalOptions{}
			s, _, _ := testStreams()
			var got *pruneOptions
			cmd := newPruneCmd(g, s, func(_ context.Context, o *pruneOptions, _ *iostreams) error { got = o; return nil })
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} }) // as the root command does
			cmd.SetArgs(append([]string{"-c", "app.yaml"}, tt.args...))
			cmd.SetOut(new(strings.Builder))
			cmd.SetErr(new(strings.Builder))
			err := cmd.ExecuteContext(t.Context())
			if tt.want == nil {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v; want a usage error with %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.ConfigFile, tt.want.Logger = "app.yaml", got.Logger
			if got.ConfigFile != tt.want.ConfigFile || got.Policy != tt.want.Policy || got.DryRun != tt.want.DryRun || got.JSON != tt.want.JSON {
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}
