package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// TestPruneRefusedWhileLocked: a backup holding the lock (fresh heartbeat,
// another host) refuses prune with exit 2, naming the holder; nothing is
// deleted.
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
	if code != exitUsage || !strings.Contains(stderr, "other-host") || !strings.Contains(stderr, "run prune again once") {
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
		{"keep-last", []string{"--keep-last", "3"}, &pruneOptions{KeepLast: 3}, ""},
		{"keep-within days", []string{"--keep-within", "30d", "--dry-run"}, &pruneOptions{KeepWithin: 30 * 24 * time.Hour, DryRun: true}, ""},
		{"both", []string{"--keep-last", "1", "--keep-within", "1w2d12h", "--json"}, &pruneOptions{KeepLast: 1, KeepWithin: (9*24 + 12) * time.Hour, JSON: true}, ""},
		{"go duration", []string{"--keep-within", "90m"}, &pruneOptions{KeepWithin: 90 * time.Minute}, ""},
		{"neither", nil, nil, "--keep-last N, --keep-within DURATION, or both"},
		{"keep-last 0 would keep nothing", []string{"--keep-last", "0"}, nil, "at least 1"},
		{"bad duration", []string{"--keep-within", "a month"}, nil, "like 30d"},
		{"zero duration", []string{"--keep-within", "0d"}, nil, "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &globalOptions{}
			s, _, _ := testStreams()
			var got *pruneOptions
			cmd := newPruneCmd(g, s, func(_ context.Context, o *pruneOptions, _ *iostreams) error { got = o; return nil })
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
			if *got != *tt.want {
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}
