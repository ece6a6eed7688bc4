package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestDrillStreamsGroupNotReady drills the real drill app run as a streams
// group (group.protocol=streams, KIP-1071) on real Kafka 4.4: a changelog
// drill into a new broker passes and says when the group left NotReady
// (app.ready_at); a drill whose target has the app's repartition topic
// repartitioned after the restore (3 partitions where the topology needs
// the input's 2; done by the application command, on the test's scratch
// broker, before the app starts) keeps the group NotReady, as the broker
// then needs 3 partitions for the changelogs of the sub-topology reading it:
// the drill fails (exit 1; the app itself exits on the broker's status)
// naming the group, the changelog and the repartition topic, and --json's
// app.not_ready says the same.
func TestDrillStreamsGroupNotReady(t *testing.T) {
	t.Parallel()
	const (
		app = testkit.StreamsAppDefaultID
		rep = app + "-by-category-repartition"
	)
	streams := []testkit.StreamsAppOpt{testkit.StreamsAppProperty("group.protocol", "streams")}
	repo, dir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "drill-app.yaml")
	t.Run("source", func(t *testing.T) {
		src := testkit.StartKafka(t)
		testkit.CreateStreamsAppTopics(t, src.Bootstrap(), 2)
		cl := testkit.Client(t, src.Addrs())
		cats := []string{"books", "games", "music"}
		var recs []*kgo.Record
		for _, c := range cats {
			recs = append(recs, &kgo.Record{Topic: testkit.StreamsAppCategoriesTopic, Key: []byte(c), Value: []byte(strings.ToUpper(c))})
		}
		for i := range 60 {
			recs = append(recs, &kgo.Record{Topic: testkit.StreamsAppEventsTopic, Key: fmt.Appendf(nil, "u%02d", i%7), Value: fmt.Appendf(nil, "%s:%d", cats[i%len(cats)], i)})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		a := testkit.StartStreamsApp(t, src.Bootstrap(), streams...)
		waitGroupAtEnd(t, testkit.Admin(t, src.Addrs()), app, testkit.StreamsAppEventsTopic, 2*time.Minute)
		a.Stop(t)
		writeFileIn(t, dir, "drill-app.yaml", fmt.Sprintf(`application_id: %s
source:
  bootstrap_servers: [%s]
  topics:
    include: [%s, "%s-*"]
storage:
  backend: filesystem
  path: %s
`, app, src.Bootstrap(), strings.Join(testkit.StreamsAppTopics, ", "), app, repo))
		if code, _, stderr := runCLI(t, "--log-level", "error", "backup", "-c", cfg); code != exitOK {
			t.Fatalf("backup: exit %d\n%s", code, stderr)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, tt := range []struct {
		name          string
		damage        bool
		missingSource bool
		timeout       string
	}{
		{name: "passes", timeout: "4m"},
		{name: "repartition topic misconfigured", damage: true, timeout: "40s"},
		// A second new-user fault of issue 12: with a source topic left out
		// (--topics) the message named the repartition topics and
		// changelogs as missing too, and said to create them.
		{name: "source topic left out", missingSource: true, timeout: "40s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := testkit.StartKafka(t)
			command := testkit.StreamsAppCommand(t, streams, "--bootstrap-servers", `"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"`,
				"--application-id", `"$KAFKASTREAMS_DR_APPLICATION_ID"`, "--state-dir", t.TempDir())
			if tt.damage {
				command = dst.ToolCommand("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", `"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"`,
					"--alter", "--topic", rep, "--partitions", "3") + " && " + command
			}
			began := time.Now()
			args := []string{"--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
				"--target-bootstrap-servers", dst.Bootstrap(), "--app-command", command, "--app-timeout", tt.timeout, "--json"}
			if tt.missingSource {
				var keep []string
				for _, tp := range testkit.StreamsAppTopics {
					if tp != testkit.StreamsAppCategoriesTopic {
						keep = append(keep, tp)
					}
				}
				args = append(args, "--topics", strings.Join(append(keep, app+"-*"), ","))
			}
			code, stdout, stderr := runCLI(t, args...)
			took := time.Since(began)
			if tt.missingSource {
				if code != exitError {
					t.Fatalf("drill without source topic %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", testkit.StreamsAppCategoriesTopic, code, exitError, stdout, stderr)
				}
				for _, w := range []string{fmt.Sprintf("source topic %q", testkit.StreamsAppCategoriesTopic), "does not exist on the target", "the broker creates the repartition topics and changelogs"} {
					if !strings.Contains(stderr, w) {
						t.Errorf("drill error does not say %q:\n%s", w, stderr)
					}
				}
				for _, no := range []string{"repartition topic \"" + rep + "\" (read by", "create or repartition those topics", "give it longer"} {
					if strings.Contains(stderr, no) {
						t.Errorf("drill error says %q though the missing source topic explains it:\n%s", no, stderr)
					}
				}
				t.Logf("the drill without a source topic failed after %s:\n%s", took.Round(time.Second), stderr)
				return
			}
			if !tt.damage {
				if code != exitOK {
					t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				d := decodeDrillJSON(t, stdout)
				if d.App == nil || d.App.GroupType != "streams" || d.App.ReadyAt == "" || d.App.NotReady != "" {
					t.Errorf("app report %+v: want a streams group with ready_at and no not_ready", d.App)
				}
				return
			}
			if code != exitError {
				t.Fatalf("drill on a target with %s repartitioned: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", rep, code, exitError, stdout, stderr)
			}
			want := []string{fmt.Sprintf("streams group %q stayed NotReady", app),
				fmt.Sprintf(`changelog %q has 2 partitions, sub-topology 1 has 3 tasks (the partitions of %q)`, app+"-counts-store-changelog", rep)}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("drill error does not say %q:\n%s", w, stderr)
				}
			}
			d := decodeDrillJSON(t, stdout)
			if d.OK || d.App == nil || d.App.ReadyAt != "" || !strings.Contains(d.App.NotReady, want[1]) {
				t.Errorf("--json ok %v app %+v: want not ok, no ready_at, not_ready naming %s", d.OK, d.App, rep)
			}
			t.Logf("the NotReady drill failed after %s (app timeout %s)", took.Round(time.Second), tt.timeout)
		})
	}
}
