package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestOtherApplicationWithoutGroup: orders-app-v1's changelog matches
// orders-app's include "orders-app-*", and orders-app-v1 has no consumer
// group on the cluster (never committed, or its group was deleted), so
// nothing on the cluster says the topic is not orders-app's (issue 9). The
// topics report warns that its store name is a generated name after a
// prefix and names other_application_ids; with orders-app-v1 listed there,
// neither topics nor backup selects it, and the backup holds only
// orders-app's topics.
func TestOtherApplicationWithoutGroup(t *testing.T) {
	kf := testkit.StartKfake(t, 1)
	cl := testkit.Client(t, kf.Addrs())
	own := "orders-app-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"
	other := "orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"
	if _, err := kadm.NewClient(cl).CreateTopics(t.Context(), 1, 1, nil, "orders", own, other); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"orders", own, other} {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	store, storageYAML := catalogRepos[0].open(t)
	config := func(extra string) string {
		return writeFile(t, "app.yaml", fmt.Sprintf("application_id: orders-app\n%ssource:\n  bootstrap_servers: [%s]\n  topics:\n    include: [orders, \"orders-app-*\"]\n%s",
			extra, kf.Addrs()[0], storageYAML))
	}
	selected := func(t *testing.T, cfg string) (map[string]bool, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "topics", "-c", cfg, "--json")
		if code != exitOK {
			t.Fatalf("topics: exit %d\n%s\n%s", code, stdout, stderr)
		}
		var ds []struct {
			Topic    string `json:"topic"`
			Selected bool   `json:"selected"`
			Reason   string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(stdout), &ds); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		sel := map[string]bool{}
		for _, d := range ds {
			sel[d.Topic] = d.Selected
		}
		return sel, stderr
	}

	sel, stderr := selected(t, config(""))
	if !sel[other] || !strings.Contains(stderr, `probably an internal topic of application.id "orders-app-v1" (add it to other_application_ids)`) {
		t.Errorf("without other_application_ids: %s selected %v; want it selected with a warning naming orders-app-v1:\n%s", other, sel[other], stderr)
	}

	cfg := config("other_application_ids: [orders-app-v1]\n")
	sel, stderr = selected(t, cfg)
	if sel[other] || !sel[own] || !sel["orders"] || strings.Contains(stderr, "Kafka Streams generates") {
		t.Fatalf("with other_application_ids: selected %v; want orders and %s only, without the warning:\n%s", sel, own, stderr)
	}
	code, stdout, stderr := runCLI(t, "backup", "-c", cfg)
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s\n%s", code, stdout, stderr)
	}
	list, err := catalog.List(t.Context(), store)
	if err != nil || len(list) != 1 {
		t.Fatalf("backups %v, %v", list, err)
	}
	rc, err := store.Get(t.Context(), format.ManifestKey(list[0].BackupID))
	if err != nil {
		t.Fatal(err)
	}
	m, err := format.ReadManifest(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, tp := range m.Topics {
		topics = append(topics, tp.Name)
	}
	if strings.Join(topics, ",") != "orders,"+own {
		t.Errorf("the backup holds %v, want orders and %s", topics, own)
	}
}
