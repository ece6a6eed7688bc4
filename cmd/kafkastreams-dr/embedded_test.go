package main

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestBackupEmbedded is the README's quickstart: no cluster, no cloud
// account, a backup of the sample application in a local directory and a
// table of what was backed up and what was not.
func TestBackupEmbedded(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kdr-quickstart")
	code, stdout, stderr := runCLI(t, "backup", "--embedded", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, topic := range sample.BackedUp {
		if !strings.Contains(stdout, "\n"+topic+" ") {
			t.Errorf("backed-up topic %q missing from the table:\n%s", topic, stdout)
		}
	}
	notBackedUp := stdout[strings.Index(stdout, "not backed up:"):]
	for _, topic := range []string{sample.Repartition, sample.FKTopic, sample.OtherTopic} {
		if !strings.Contains(notBackedUp, topic) {
			t.Errorf("%q not listed as not backed up:\n%s", topic, stdout)
		}
	}
	if !strings.Contains(stdout, "changelog (source topic)") || !strings.Contains(stdout, "group        order-processor: 6 committed offsets") {
		t.Errorf("summary:\n%s", stdout)
	}

	// The same directory again: refused, nothing touched.
	code, _, stderr = runCLI(t, "backup", "--embedded", "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "is not empty") {
		t.Fatalf("second run into the same --out: exit %d, stderr %q", code, stderr)
	}

	code, stdout, _ = runCLI(t, "backup", "--embedded", "--out", filepath.Join(t.TempDir(), "json"), "--json")
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, stdout)
	}
	if len(res.BackedUp) != len(sample.BackedUp) || res.Records == 0 || res.GroupOffsets != 6 || len(res.NotBackedUp) != 3 {
		t.Fatalf("--json result: %+v", res)
	}
}

func TestBackupEmbeddedFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"backup", "--embedded", "-c", "x.yaml"},
		{"backup", "--out", "dir"},
		{"backup"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, "Error: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestStartEmbeddedCluster: the one helper of every --embedded path starts
// 3 brokers on loopback with the given cluster ID and announces them; with
// seed it holds the quickstart scenario (the sample application's topics
// and its group's committed offsets), without it nothing at all.
func TestStartEmbeddedCluster(t *testing.T) {
	tests := []struct {
		name, role, id string
		seed           bool
		announce       string // the line on stderr, before the seeds
	}{
		{"backup: the seeded embedded cluster", "", "kdr-embedded", true, "embedded cluster: 3 brokers (kfake) at "},
		{"drill: the seeded source", "source", "kdr-drill-source", true, "source cluster: 3 brokers (kfake) at "},
		{"restore: a new, empty cluster", "", "kdr-embedded-restore", false, "embedded cluster: a new, empty cluster of 3 brokers (kfake) at "},
		{"drill: the empty target", "target", "kdr-drill-target", false, "target cluster: a new, empty cluster of 3 brokers (kfake) at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut strings.Builder
			cluster, seeds, err := startEmbeddedCluster(t.Context(), &errOut, tt.role, tt.id, tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cluster.Close)
			want := tt.announce + strings.Join(seeds, ",")
			if tt.seed {
				want += `; seeding the sample application "order-processor"`
			}
			if errOut.String() != want+"\n" {
				t.Errorf("stderr = %q, want %q", errOut.String(), want+"\n")
			}
			if len(seeds) != 3 {
				t.Errorf("seeds %v, want 3 brokers", seeds)
			}
			for _, s := range seeds {
				if host, _, err := net.SplitHostPort(s); err != nil || host != "127.0.0.1" {
					t.Errorf("broker %s is not on loopback", s)
				}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			bm, err := adm.BrokerMetadata(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if bm.Cluster != tt.id {
				t.Errorf("cluster id %q, want %q", bm.Cluster, tt.id)
			}
			topics, err := adm.ListTopics(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			offs, err := adm.FetchOffsets(t.Context(), sample.AppID)
			if !tt.seed {
				if len(topics) != 0 || !errors.Is(err, kerr.GroupIDNotFound) {
					t.Errorf("the new cluster holds topics %v and group offsets %v (%v), want nothing", topics.Names(), offs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range sample.BackedUp {
				if !topics.Has(name) {
					t.Errorf("seeded cluster lacks the sample topic %s (has %v)", name, topics.Names())
				}
			}
			n := 0
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.At >= 0 {
					n++
				}
			})
			if n != 6 {
				t.Errorf("group %s has %d committed offsets, want the sample's 6", sample.AppID, n)
			}
		})
	}
}

// TestSampleBackupOptions: the quickstart backup is the sample
// application's, with this build's version (what embeddedConfig prints).
func TestSampleBackupOptions(t *testing.T) {
	o := sampleBackupOptions([]string{"127.0.0.1:9092"})
	if o.ApplicationID != sample.AppID || !slices.Equal(o.SourceChangelogTopics, sample.SourceChangelogs) ||
		!slices.Equal(o.Include, sample.Include) || !slices.Equal(o.Exclude, sample.Exclude) ||
		o.SourceClusterID != "embedded" || o.ToolVersion != version || len(o.Source) != 1 {
		t.Errorf("sampleBackupOptions = %+v", o)
	}
	r := embeddedRestoreOptions([]string{"127.0.0.1:9093"}, "app", []string{"customers"})
	if r.Strategy != restorer.StrategyChangelog || r.ApplicationID != "app" || !slices.Equal(r.SourceChangelogTopics, []string{"customers"}) || len(r.Target) != 1 {
		t.Errorf("embeddedRestoreOptions = %+v", r)
	}
}
