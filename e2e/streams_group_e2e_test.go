package e2e

// Issue 12's first acceptance item: on real Kafka 4.4 with the real drill
// Kafka Streams application (e2e/streams-app) run as a streams group
// (KIP-1071, group.protocol=streams), the broker is the authority on the
// application's topics: `topics` classifies them with no include pattern,
// `init` writes a config that backs up exactly the right topics, and a
// changelog drill with that config passes, the app resuming as a streams
// group on the target. Everything goes through the built binary, as an
// operator runs it; the expected table is derived here from the drill app's
// Topology#describe() text, not by the code under test.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

const (
	// sgEvents are processed on the source while `topics` and `init`
	// run; sgMore are produced after the app stopped, before the drill's
	// backup: the app on the target must process exactly those.
	sgEvents = 200
	sgMore   = 60
	// sgCollidingApp is another application whose application.id extends
	// the drill app's ("drill-app-" is a prefix of its internal topics,
	// KAFKA-14922); sgCollidingTopic is one of its changelogs. No group of
	// it exists and no config names it: only the drill app's topology
	// tells that the topic is not the drill app's.
	sgCollidingApp   = drillApp + "-v1"
	sgCollidingTopic = sgCollidingApp + "-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
	// sgUnrelatedTopic belongs to no Streams application.
	sgUnrelatedTopic = "payments-ledger"
	// sgDescriptionPluginKey names the broker's store of topology
	// descriptions (KIP-1331); sgDescriptionPlugin is the one Kafka 4.4
	// ships (kafka-server jar). Without one the broker answers
	// StreamsGroupDescribe v1 with TopologyDescriptionStatus NOT_STORED.
	sgDescriptionPluginKey = "group.streams.topology.description.plugin.class"
	sgDescriptionPlugin    = "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"
	// sgWait bounds each wait on the source (group Stable).
	sgWait = 90 * time.Second
)

// sgTopologyFiles hold the drill app's Topology#describe() text: the copy
// the app's build checks and the one topicfilter's tests pin.
var sgTopologyFiles = []string{"streams-app/topology.txt", "../topicfilter/testdata/topologies/drill-app.txt"}

// sgTable is an application's topics by role, broker names, each sorted.
type sgTable struct {
	Inputs, Outputs, Changelogs, Repartition []string
}

var (
	sgSourceLine = regexp.MustCompile(`^Source:\s+\S+\s+\(topics:\s+\[(.*)\]\)$`)
	sgSinkLine   = regexp.MustCompile(`^Sink:\s+\S+\s+\(topic:\s+(.+)\)$`)
	sgStores     = regexp.MustCompile(`\(stores:\s+\[(.*)\]\)`)
)

// sgTopologyTable derives the table from a Topology#describe() text (the
// multi-line format) by Kafka Streams' own rules, with a parser of its own
// (not topicfilter.ParseTopology): a topic both written by a sink and read
// by a source of the topology is internal (a repartition or foreign-key
// join topic, named "<application.id>-<name>" on the broker; true of the
// drill app, which writes and reads back no topic of its own, not of every
// topology: a user topic written with to() and read back is an input); other
// sources' topics are inputs, other sinks' topics outputs; every store is
// logged (the drill app disables no changelog and uses no optimization),
// its changelog is "<application.id>-<store>-changelog"
// (ProcessorStateManager.storeChangelogTopic).
func sgTopologyTable(t *testing.T, text, appID string) sgTable {
	t.Helper()
	sources, sinks, stores := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := sgSourceLine.FindStringSubmatch(line); m != nil {
			for _, s := range strings.Split(m[1], ",") {
				sources[strings.TrimSpace(s)] = true
			}
		}
		if m := sgSinkLine.FindStringSubmatch(line); m != nil {
			sinks[strings.TrimSpace(m[1])] = true
		}
		if m := sgStores.FindStringSubmatch(line); m != nil && m[1] != "" {
			for _, s := range strings.Split(m[1], ",") {
				stores[strings.TrimSpace(s)] = true
			}
		}
	}
	var tab sgTable
	for s := range sources {
		if sinks[s] {
			tab.Repartition = append(tab.Repartition, appID+"-"+s)
		} else {
			tab.Inputs = append(tab.Inputs, s)
		}
	}
	for s := range sinks {
		if !sources[s] {
			tab.Outputs = append(tab.Outputs, s)
		}
	}
	for s := range stores {
		tab.Changelogs = append(tab.Changelogs, appID+"-"+s+"-changelog")
	}
	for _, l := range []*[]string{&tab.Inputs, &tab.Outputs, &tab.Changelogs, &tab.Repartition} {
		slices.Sort(*l)
	}
	return tab
}

// sgPinned is the drill app's classification as topicfilter's tests pin it
// (topicfilter/topology_test.go, drill-app.txt without optimization): the
// derivation above must agree with it.
var sgPinned = sgTable{
	Inputs:  []string{"drill-categories", "drill-events"},
	Outputs: []string{"drill-counts", "drill-labeled", "drill-window-counts"},
	Changelogs: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000024-changelog", "drill-app-category-labels-store-changelog",
		"drill-app-counts-store-changelog", "drill-app-latest-by-user-store-changelog", "drill-app-window-counts-store-changelog"},
	Repartition: []string{"drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000020-topic", "drill-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000028-topic", "drill-app-by-category-repartition"},
}

// sgDecision is what the test reads of one row of `topics --json`.
type sgDecision struct {
	Topic              string `json:"topic"`
	Class              string `json:"class"`
	Role               string `json:"role"`
	Selected           bool   `json:"selected"`
	Reason             string `json:"reason"`
	OtherApplicationID string `json:"other_application_id"`
	BrokerInternal     bool   `json:"broker_internal"`
}

// sgCLI runs the built binary in dir and returns its exit status, stdout
// and stderr; it fails the test if the binary cannot run or runs over 5
// minutes.
func sgCLI(t *testing.T, bin, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ctx.Err() == nil:
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("kafkastreams-dr %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// sgTopics runs `topics -c cfg --json` and returns its rows by topic, its
// exit status and its stderr; when it exits non-zero, no rows and its
// stderr and stdout.
func sgTopics(t *testing.T, bin, dir, cfg string) (map[string]sgDecision, int, string) {
	t.Helper()
	code, stdout, stderr := sgCLI(t, bin, dir, "--log-level", "error", "topics", "-c", cfg, "--json")
	if code != 0 {
		return nil, code, fmt.Sprintf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	}
	var rows []sgDecision
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("topics -c %s --json: stdout is not a JSON array (%v)\nstdout:\n%s\nstderr:\n%s", cfg, err, stdout, stderr)
	}
	byTopic := map[string]sgDecision{}
	for _, r := range rows {
		byTopic[r.Topic] = r
	}
	return byTopic, code, stderr
}

// sgRow is what a row of `topics` must say of one of the app's topics: its
// role (topicfilter.Decision.Role) and whether a backup selects it.
type sgRow struct {
	role     string
	selected bool
}

// sgExpect is the row of every topic of tab from a streams group's
// topology: outputs are known only when the broker holds the topology
// description (KIP-1331); without it they are not called outputs and not
// selected (topicfilter.AppTopology.OutputsKnown).
func sgExpect(tab sgTable, outputsKnown bool) map[string]sgRow {
	expect := map[string]sgRow{}
	for _, n := range tab.Inputs {
		expect[n] = sgRow{"input", true}
	}
	for _, n := range tab.Outputs {
		expect[n] = sgRow{"", false}
		if outputsKnown {
			expect[n] = sgRow{"output", true}
		}
	}
	for _, n := range tab.Changelogs {
		expect[n] = sgRow{"changelog", true}
	}
	for _, n := range tab.Repartition {
		expect[n] = sgRow{"repartition", false}
	}
	return expect
}

// sgCheckRows checks the rows of `topics` against expect; every other
// topic must be left out, and with decoys the two decoys must have rows,
// sgCollidingTopic's naming the other application.id.
func sgCheckRows(t *testing.T, what string, rows map[string]sgDecision, expect map[string]sgRow, decoys bool) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(expect)) {
		e := expect[name]
		r, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("%s: no row for %s", what, name)
		case r.Role != e.role || r.Selected != e.selected:
			t.Errorf("%s: %s has role %q, selected %v (class %s, reason %q); want role %q, selected %v (from the broker's streams group topology)",
				what, name, r.Role, r.Selected, r.Class, r.Reason, e.role, e.selected)
		}
	}
	for name, r := range rows {
		if _, ok := expect[name]; !ok && r.Selected {
			t.Errorf("%s: %s selected (class %s, role %q, reason %q), want it left out: it is not the drill app's", what, name, r.Class, r.Role, r.Reason)
		}
	}
	if !decoys {
		return
	}
	if r, ok := rows[sgCollidingTopic]; !ok {
		t.Errorf("%s: no row for %s", what, sgCollidingTopic)
	} else if !strings.Contains(r.Reason, sgCollidingApp) && r.OtherApplicationID != sgCollidingApp {
		t.Errorf("%s: %s's reason %q names no other application.id, want %q (the drill app's topology does not name the topic)", what, sgCollidingTopic, r.Reason, sgCollidingApp)
	}
	if _, ok := rows[sgUnrelatedTopic]; !ok {
		t.Errorf("%s: no row for %s", what, sgUnrelatedTopic)
	}
}

// sgSelected lists the selected topics of rows, sorted.
func sgSelected(rows map[string]sgDecision) []string {
	var out []string
	for name, r := range rows {
		if r.Selected {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// sgGroupStates records the states of a streams group on a cluster while
// something else runs: every state seen, in order, with repeats dropped;
// "none" while the group does not exist.
type sgGroupStates struct {
	mu     sync.Mutex
	states []string
	stop   chan struct{}
	done   chan struct{}
}

// sgWatchGroup polls group on addrs every 200 ms until stop.
func sgWatchGroup(t *testing.T, addrs []string, group string) *sgGroupStates {
	w := &sgGroupStates{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			state := "none"
			g, err := testkit.TryDescribeStreamsGroup(addrs, group)
			switch {
			case err != nil:
				state = "" // the target not up yet, or a request that failed: not a state
			case g.ErrorCode == kerr.GroupIDNotFound.Code:
			case g.ErrorCode != 0:
				state = "error " + kerr.ErrorForCode(g.ErrorCode).Error()
			default:
				state = g.State
			}
			w.mu.Lock()
			if state != "" && (len(w.states) == 0 || w.states[len(w.states)-1] != state) {
				w.states = append(w.states, state)
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.end() })
	return w
}

// end stops the watch and returns the states seen.
func (w *sgGroupStates) end() []string {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.states)
}

// TestStreamsGroupAcceptance is issue 12's first acceptance item, on one
// real Kafka 4.4 source broker with the drill app as a streams group
// (group.protocol=streams) that has processed sgEvents events, and two
// decoys: sgCollidingTopic (another application's changelog under the
// drill app's prefix, with no group) and sgUnrelatedTopic.
//
//   - topics: a config with application_id and source.bootstrap_servers and
//     no source.topics.include; every topic of the app gets its role from
//     the broker (the expected table: sgTopologyTable over the app's
//     topology text, checked against topicfilter's pinned table and the
//     cluster's topic list); the decoys are not selected; stderr names the
//     streams group as the source of the classification.
//   - init: `init --application-id drill-app --bootstrap-servers ...`
//     writes a config that parses, whose literal include list is exactly the
//     app's inputs, outputs and changelogs, that `topics` selects exactly
//     those with, and whose comments name what it left out.
//   - drill: the app is stopped, sgMore events are produced on the source
//     (unprocessed), and `drill -c <init's config> --strategy changelog`
//     with the app (group.protocol=streams, empty state dir) as its
//     --app-command passes: the backup holds exactly the table's topics,
//     the group on the target is a streams group that left NOT_READY (seen
//     by the test itself while the drill ran, and said by the report), and
//     the target's outputs are those of the sgEvents + sgMore events
//     processed exactly once (drillWant, read by kcat).
//   - topics-without-description: the target's broker has Kafka 4.4's
//     defaults (no description plugin) and keeps the Empty streams group
//     the drill left with its topology: `topics` there, with no include,
//     classifies inputs, changelogs and repartition topics from the broker
//     and selects no output (it cannot know them).
//
// Measured on Kafka 4.4.0: the broker keeps a streams group's topology
// description (KIP-1331) only with sgDescriptionPluginKey set (status
// NOT_STORED without it); an Empty streams group keeps its topology; the
// states are the broker's mixed-case names ("Stable"); a changelog drill's
// target group went none, Assigning, Reconciling, Stable, Empty (never
// NotReady: the restore creates every internal topic first).
//
// Observed against main at 1521e45 (this test as first committed): topics
// exits 2, "source.topics.include is required"; init exits 2, 'unknown
// command "init"'; the drill, run on a hand-written config instead, passes
// (a streams group on the target, outputs exactly once) but its report has
// no app.ready_at.
func TestStreamsGroupAcceptance(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	work := t.TempDir()
	bin := filepath.Join(work, "bin", "kafkastreams-dr")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kafkastreams-dr").CombinedOutput(); err != nil {
		t.Fatalf("build kafkastreams-dr: %v\n%s", err, out)
	}

	var text string
	for i, f := range sgTopologyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && string(b) != text {
			t.Fatalf("%s differs from %s: the drill app's topology has two copies that must be the same", f, sgTopologyFiles[0])
		}
		text = string(b)
	}
	want := sgTopologyTable(t, text, drillApp)
	if fmt.Sprint(want) != fmt.Sprint(sgPinned) {
		t.Fatalf("the table derived from %s:\n  %+v\ndiffers from topicfilter's pinned one:\n  %+v", sgTopologyFiles[0], want, sgPinned)
	}
	backedUp := slices.Sorted(slices.Values(slices.Concat(want.Inputs, want.Outputs, want.Changelogs)))

	// The broker stores the topology description only with a plugin
	// (KIP-1331; off by default in Kafka 4.4): with it, the outputs are
	// known from the broker too.
	src := testkit.StartKafka(t, testkit.KafkaProperty(sgDescriptionPluginKey, sgDescriptionPlugin))
	testkit.CreateStreamsAppTopics(t, src.Bootstrap(), drillPartitions)
	createTopic(t, src, sgCollidingTopic, 1, map[string]*string{"cleanup.policy": ptr("compact")})
	createTopic(t, src, sgUnrelatedTopic, 1, nil)
	cl := testkit.Client(t, src.Addrs())
	base := time.Now().Add(-15 * time.Minute).Truncate(time.Minute).Add(11 * time.Second)
	events := drillEvents(12, 0, sgEvents, base, time.Second)                                 // 3m20s: 4 windows
	more := drillEvents(12, sgEvents, sgMore, base.Add(2*time.Minute), 1700*time.Millisecond) // partly in the same windows
	drillProduce(t, cl, drillCategoryRecords(base.Add(-time.Minute)))
	drillProduce(t, cl, events)
	streams := testkit.StreamsAppProperty("group.protocol", "streams")
	app := testkit.StartStreamsApp(t, src.Bootstrap(), streams)
	drillWaitOutputs(t, src, drillWant(events))
	g := testkit.WaitStreamsGroupState(t, src.Addrs(), drillApp, "Stable", sgWait)
	t.Logf("source: streams group %s Stable, epoch %d, %d members, topology description status %d (3: the broker holds it, KIP-1331)",
		drillApp, g.Epoch, len(g.Members), g.TopologyDescriptionStatus)
	if g.TopologyDescriptionStatus != testkit.StreamsGroupDescriptionAvailable {
		t.Fatalf("the source broker (%s=%s) holds no topology description of streams group %s: status %d, want %d (AVAILABLE)",
			sgDescriptionPluginKey, sgDescriptionPlugin, drillApp, g.TopologyDescriptionStatus, testkit.StreamsGroupDescriptionAvailable)
	}

	// The cluster holds the table's topics (the app created its internal
	// ones), and under the app's prefix nothing else but the decoy.
	onCluster := map[string]bool{}
	listed, err := admin(t, src).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed.Names() {
		onCluster[name] = true
	}
	tabled := map[string]bool{}
	for _, name := range slices.Concat(want.Inputs, want.Outputs, want.Changelogs, want.Repartition) {
		tabled[name] = true
		if !onCluster[name] {
			t.Errorf("topic %s of the drill app's topology is not on the source cluster", name)
		}
	}
	for name := range onCluster {
		if strings.HasPrefix(name, drillApp+"-") && !tabled[name] && name != sgCollidingTopic {
			t.Errorf("topic %s under the app's prefix is in no row of the derived table", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	expect := sgExpect(want, true)

	t.Run("topics", func(t *testing.T) {
		cfg := filepath.Join(work, "no-include.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "application_id: %s\nsource:\n  bootstrap_servers: [%q]\nstorage:\n  backend: filesystem\n  path: %s\n",
			drillApp, src.Bootstrap(), filepath.Join(work, "repo-topics")), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, code, stderr := sgTopics(t, bin, work, cfg)
		if code != 0 {
			t.Fatalf("topics -c %s --json (no source.topics.include, the app a streams group on the source): exit %d, want 0: "+
				"the streams group's topology on the broker must make the include pattern unnecessary (issue 12)\n%s", cfg, code, stderr)
		}
		sgCheckRows(t, "topics without an include pattern", rows, expect, true)
		if from := fmt.Sprintf("streams group %q", drillApp); !strings.Contains(stderr, from) {
			t.Errorf("topics' stderr does not name %s as the source of the classification:\n%s", from, stderr)
		}
		t.Logf("topics: %d rows, selected %v; stderr:\n%s", len(rows), sgSelected(rows), stderr)
	})

	var initCfg string // the config init wrote, "" when it did not
	t.Run("init", func(t *testing.T) {
		const name = "drill-app.yaml"
		code, stdout, stderr := sgCLI(t, bin, work, "init", "--application-id", drillApp, "--bootstrap-servers", src.Bootstrap(), "-o", name)
		if code != 0 {
			t.Fatalf("init --application-id %s --bootstrap-servers %s -o %s: exit %d, want 0 and a config discovered from the streams group (issue 12)\nstdout:\n%s\nstderr:\n%s",
				drillApp, src.Bootstrap(), name, code, stdout, stderr)
		}
		path := filepath.Join(work, name)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("init exited 0 and wrote no %s: %v", name, err)
		}
		t.Logf("init wrote %s:\n%s", name, body)
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("the config init wrote does not load: %v", err)
		}
		if cfg.ApplicationID != drillApp {
			t.Errorf("init's config: application_id %q, want %q", cfg.ApplicationID, drillApp)
		}
		if got := slices.Sorted(slices.Values(cfg.Source.Topics.Include)); !slices.Equal(got, backedUp) {
			t.Errorf("init's source.topics.include %q, want exactly the app's inputs, outputs and changelogs %q", cfg.Source.Topics.Include, backedUp)
		}
		// The comments name what init left out.
		var comments strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			if _, c, ok := strings.Cut(line, "#"); ok {
				comments.WriteString(c + "\n")
			}
		}
		for _, name := range append(slices.Clone(want.Repartition), sgCollidingTopic) {
			if !strings.Contains(comments.String(), name) {
				t.Errorf("no comment of init's config names %s, which it left out", name)
			}
		}
		rows, code, stderr := sgTopics(t, bin, work, path)
		if code != 0 {
			t.Fatalf("topics -c %s (init's config): exit %d, want 0\n%s", path, code, stderr)
		}
		if got := sgSelected(rows); !slices.Equal(got, backedUp) {
			t.Errorf("topics -c %s (init's config) selects %q, want exactly %q", path, got, backedUp)
		}
		initCfg = path
	})

	// The app stops; sgMore events arrive that it has not processed: the
	// drill's backup holds them, and the app on the target must process
	// exactly those.
	app.Stop(t)
	drillProduce(t, cl, more)
	wantOut := drillWant(slices.Concat(events, more))

	// The drill target: a broker with Kafka 4.4's defaults, which keep no
	// topology description.
	dst := testkit.StartKafka(t)
	drilled := false // the drill exited 0: the app ran on the target
	t.Run("drill", func(t *testing.T) {
		cfg := initCfg
		if cfg == "" {
			// Without init's config the drill still runs, on the config
			// init should have written, so that its own checks are seen;
			// the test has failed already.
			t.Errorf("init wrote no config: the drill runs on a hand-written one with the expected include list")
			cfg = filepath.Join(work, "hand-written.yaml")
			if err := os.WriteFile(cfg, fmt.Appendf(nil, "application_id: %s\nsource:\n  bootstrap_servers: [%q]\n  topics:\n    include: [%s]\nstorage:\n  backend: filesystem\n  path: %s\n",
				drillApp, src.Bootstrap(), strings.Join(backedUp, ", "), filepath.Join(work, "backups")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		appCmd := testkit.StreamsAppCommand(t, []testkit.StreamsAppOpt{streams}, "--bootstrap-servers", `"$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"`,
			"--application-id", `"$KAFKASTREAMS_DR_APPLICATION_ID"`, "--state-dir", t.TempDir())
		watch := sgWatchGroup(t, dst.Addrs(), drillApp)
		code, stdout, stderr := sgCLI(t, bin, work, "--log-level", "error", "drill", "-c", cfg, "--strategy", "changelog",
			"--target-bootstrap-servers", dst.Bootstrap(), "--app-command", appCmd, "--app-timeout", "3m", "--json")
		states := watch.end()
		t.Logf("streams group %s on the target while the drill ran: %v", drillApp, states)
		if code != 0 {
			t.Fatalf("drill -c %s --strategy changelog: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", cfg, code, stdout, stderr)
		}
		drilled = true
		var rep struct {
			OK       bool   `json:"ok"`
			BackupID string `json:"backup_id"`
			App      *struct {
				GroupType  string `json:"group_type"`
				GroupState string `json:"group_state"`
				Lag        int64  `json:"lag"`
				Partitions int    `json:"partitions"`
			} `json:"app"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("drill --json does not decode: %v\n%s", err, stdout)
		}
		if !rep.OK || rep.App == nil || rep.App.GroupType != "streams" || rep.App.Lag != 0 || rep.App.Partitions == 0 {
			t.Errorf("drill report: ok %v, app %+v; want ok, a streams group caught up (lag 0)", rep.OK, rep.App)
		}

		// The backup holds exactly the app's inputs, outputs and changelogs.
		c, err := config.Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dir := c.Storage.FilesystemDir()
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(work, dir)
		}
		store, err := storage.NewFilesystem(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := backupcheck.Latest(t, store, rep.BackupID)
		var copied []string
		for _, tp := range m.Topics {
			copied = append(copied, tp.Name)
		}
		slices.Sort(copied)
		if !slices.Equal(copied, backedUp) {
			t.Errorf("backup %s holds %q, want exactly the app's inputs, outputs and changelogs %q", rep.BackupID, copied, backedUp)
		}
		if m.Group == nil || m.Group.Type != "streams" {
			t.Errorf("backup %s's group %+v, want type streams", rep.BackupID, m.Group)
		}

		// On the target: a streams group, seen to leave NOT_READY.
		groups, err := admin(t, dst).ListGroups(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if lg, ok := groups[drillApp]; !ok || lg.GroupType != "streams" {
			t.Errorf("group %s on the target after the drill: %+v (listed %v), want type streams", drillApp, lg, ok)
		}
		if d := testkit.DescribeStreamsGroup(t, dst.Addrs(), drillApp); d.ErrorCode != 0 {
			t.Errorf("StreamsGroupDescribe %s on the target: %v, want the streams group", drillApp, kerr.ErrorForCode(d.ErrorCode))
		}
		if i := slices.IndexFunc(states, func(s string) bool { return s == "Assigning" || s == "Reconciling" || s == "Stable" }); i < 0 {
			t.Errorf("the streams group on the target was seen in %v while the drill ran, never past NotReady (Assigning, Reconciling, Stable)", states)
		}
		sgCheckReady(t, stdout)

		// Exactly once: the outputs are those of every event processed once.
		drillCheckFinal(t, dst, wantOut)
	})

	// The target's broker holds the streams group the drill left (Empty)
	// with its topology but no description: `topics` there classifies the
	// inputs, changelogs and repartition topics from the broker, and does
	// not call the outputs outputs (they are written by the topology's
	// sinks, which only the description names).
	t.Run("topics-without-description", func(t *testing.T) {
		if !drilled {
			t.Fatal("the drill did not pass: no streams group on the target to classify from")
		}
		g := testkit.DescribeStreamsGroup(t, dst.Addrs(), drillApp)
		t.Logf("target: streams group %s %s, topology description status %d, topology held %v", drillApp, g.State, g.TopologyDescriptionStatus, g.Topology != nil)
		if g.ErrorCode != 0 || g.Topology == nil || g.TopologyDescriptionStatus == testkit.StreamsGroupDescriptionAvailable {
			t.Fatalf("streams group %s on the target: error %v, topology %v, description status %d; want a topology without its description",
				drillApp, kerr.ErrorForCode(g.ErrorCode), g.Topology != nil, g.TopologyDescriptionStatus)
		}
		cfg := filepath.Join(work, "no-include-target.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "application_id: %s\nsource:\n  bootstrap_servers: [%q]\nstorage:\n  backend: filesystem\n  path: %s\n",
			drillApp, dst.Bootstrap(), filepath.Join(work, "repo-target")), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, code, stderr := sgTopics(t, bin, work, cfg)
		if code != 0 {
			t.Fatalf("topics -c %s --json (no source.topics.include, a streams group without description): exit %d, want 0\n%s", cfg, code, stderr)
		}
		sgCheckRows(t, "topics from a streams group without description", rows, sgExpect(want, false), false)
		if from := fmt.Sprintf("streams group %q", drillApp); !strings.Contains(stderr, from) {
			t.Errorf("topics' stderr does not name %s as the source of the classification:\n%s", from, stderr)
		}
	})
	t.Logf("TestStreamsGroupAcceptance took %v", time.Since(begin).Round(time.Millisecond))
}

// sgCheckReady checks that the drill's --json report says the streams
// group left NotReady on the target (the drill's own check, issue 12):
// app.ready_at, the time the drill first saw the group out of NotReady (the
// broker validated its internal topics), after the app started and before
// the drill ended, and no
// app.not_ready (the failure: the group stayed NotReady).
func sgCheckReady(t *testing.T, report string) {
	t.Helper()
	var rep struct {
		FinishedAt time.Time `json:"finished_at"`
		App        *struct {
			StartedAt time.Time `json:"started_at"`
			ReadyAt   string    `json:"ready_at"`
			NotReady  string    `json:"not_ready"`
		} `json:"app"`
	}
	if err := json.Unmarshal([]byte(report), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.App == nil {
		t.Fatalf("the drill report has no app: %s", report)
	}
	if rep.App.NotReady != "" {
		t.Errorf("the drill report says the streams group stayed NotReady: %s", rep.App.NotReady)
	}
	if rep.App.ReadyAt == "" {
		t.Fatalf("the drill report's app has no ready_at: it does not say that the streams group left NotReady (issue 12: the drill checks it)\n%s", report)
	}
	ready, err := time.Parse(time.RFC3339Nano, rep.App.ReadyAt)
	if err != nil {
		t.Fatalf("the drill report's app.ready_at %q is not an RFC 3339 time: %v", rep.App.ReadyAt, err)
	}
	if ready.Before(rep.App.StartedAt) || ready.After(rep.FinishedAt) {
		t.Errorf("the drill report's app.ready_at %s is not between the app's start %s and the drill's end %s",
			ready, rep.App.StartedAt, rep.FinishedAt)
	}
}
