package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestInitOnKafka: on a real Kafka 4.4 broker (where StreamsGroupDescribe
// is served), an application run with a classic group is discovered from
// its committed offsets: the broker's "not a streams group" answer is no
// error and no note; __consumer_offsets is summarised, not listed; and an
// application.id the broker knows nothing of is exit 2 naming the streams
// group it looked for too.
func TestInitOnKafka(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	repartition := "orders-app-KSTREAM-REPARTITION-0000000003-repartition"
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopics(t.Context(), 1, 1, nil, "orders", "orders-app-counts-changelog", repartition, "orders-app-v1-counts-changelog"); err != nil {
		t.Fatal(err)
	}
	for g, topics := range map[string][]string{"orders-app": {"orders", repartition}, "orders-app-v1": {"orders"}} {
		var os kadm.Offsets
		for _, topic := range topics {
			os.AddOffset(topic, 0, 0, -1)
		}
		resp, err := adm.CommitOffsets(t.Context(), g, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit offsets of group %s: %v", g, err)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "orders-app.yaml")
	code, stdout, stderr := runCLI(t, "init", "--application-id", "orders-app", "--bootstrap-servers", k.Bootstrap(), "-o", out)
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(out)
	text := string(b)
	if got, want := topicsSelected(t, out), []string{"orders", "orders-app-counts-changelog"}; !reflect.DeepEqual(got, want) {
		t.Errorf("topics -c selects %v, want %v\n%s", got, want, text)
	}
	for _, w := range []string{
		`discovered from the committed offsets of consumer group "orders-app"`,
		"of the broker's own (named \"__*\" or flagged internal, e.g. __consumer_offsets): never backed up",
		"#   " + repartition + ": ",
		"#   orders-app-v1-counts-changelog: internal topic of application.id orders-app-v1",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the file lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "# Note:") || strings.Contains(text, "__consumer_offsets:") {
		t.Errorf("a note, or a broker topic listed:\n%s", text)
	}

	code, stdout, stderr = runCLI(t, "init", "--application-id", "ghost", "--bootstrap-servers", k.Bootstrap(), "-o", filepath.Join(dir, "ghost.yaml"))
	if code != exitUsage || !strings.Contains(stderr, `application.id "ghost" not found`) || !strings.Contains(stderr, `no streams group "ghost" (StreamsGroupDescribe)`) {
		t.Errorf("ghost: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
