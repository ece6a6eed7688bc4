package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/config"
)

func TestBackupOptionsFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(goodConfig+"source_changelog_topics: [customers]\nbackup:\n  source_cluster_id: prod\n  segment_max_bytes: 1MiB\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := backupOptionsFromConfig(c)
	if o.ApplicationID != "order-processor" || o.SourceClusterID != "prod" || o.SegmentMaxBytes != 1<<20 ||
		o.Concurrency != config.DefaultConcurrency || len(o.Include) != 2 || len(o.Exclude) != 1 ||
		len(o.SourceChangelogTopics) != 1 || o.AllowMissingTopics {
		t.Errorf("options = %+v", o)
	}
}

func TestBackupToDirectory(t *testing.T) {
	brokers := startCluster(t, map[string]string{
		"orders":                           "",
		"order-processor-totals-changelog": "compact",
	}, "order-processor")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, "order-processor-*-changelog"]
storage:
  backend: filesystem
  path: %s
`, strings.Join(brokers, ", "), repo))

	code, stdout, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var res backupJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if res.BackupID == "" || res.Topics != 2 || res.Partitions != 4 || res.Records != 10 || res.Repository != repo {
		t.Errorf("result = %+v, want 2 topics, 4 partitions, 10 records in %s", res, repo)
	}
}
