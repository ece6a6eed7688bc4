package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// TestTopicsFromTheStreamsGroup: `topics` with no include and no topology
// file, on a real Kafka 4.4 broker where the drill app runs as a streams
// group and the broker keeps topology descriptions, classifies by the
// group's topology: exit 0, every drill topic with its role, the
// repartition topics not selected, and the summary names the streams group
// (issue 12).
func TestTopicsFromTheStreamsGroup(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t, testkit.KafkaProperty("group.streams.topology.description.plugin.class", "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"))
	testkit.CreateStreamsAppTopics(t, k.Bootstrap(), 1)
	testkit.StartStreamsApp(t, k.Bootstrap(), testkit.StreamsAppProperty("group.protocol", "streams"))
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: %s
source:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, testkit.StreamsAppDefaultID, k.Bootstrap(), t.TempDir()))

	want := map[string]string{ // topic -> role; selected unless repartition
		"drill-events": "input", "drill-categories": "input",
		"drill-counts": "output", "drill-window-counts": "output", "drill-labeled": "output",
		"drill-app-latest-by-user-store-changelog":                               "changelog",
		"drill-app-by-category-repartition":                                      "repartition",
		"drill-app-counts-store-changelog":                                       "changelog",
		"drill-app-window-counts-store-changelog":                                "changelog",
		"drill-app-category-labels-store-changelog":                              "changelog",
		"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog": "changelog",
		"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic":    "repartition",
		"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic":        "repartition",
	}
	// The members send the description with their first heartbeats: ask
	// until the outputs have their role, at most 30 times, half a second
	// apart.
	var got map[string]topicfilter.Decision
	var stderr string
	for try := 0; try < 30; try++ {
		code, stdout, errOut := runCLI(t, "--log-level", "error", "topics", "-c", cfg, "--json")
		stderr = errOut
		if code != exitOK {
			t.Fatalf("topics: exit %d\n%s", code, stderr)
		}
		var ds []topicfilter.Decision
		if err := json.Unmarshal([]byte(stdout), &ds); err != nil {
			t.Fatalf("topics --json: %v\n%s", err, stdout)
		}
		got = map[string]topicfilter.Decision{}
		for _, d := range ds {
			got[d.Topic] = d
		}
		if got["drill-counts"].Role == "output" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for topic, role := range want {
		d, ok := got[topic]
		if !ok || d.Role != role || d.Selected != (role != "repartition") {
			t.Errorf("%s: %+v, want role %s, selected %v", topic, d, role, role != "repartition")
		}
	}
	if !strings.Contains(stderr, `streams group "drill-app" on the source cluster (StreamsGroupDescribe)`) {
		t.Errorf("the summary does not name the streams group:\n%s", stderr)
	}
}
