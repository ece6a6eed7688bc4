package testkit

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var update = flag.Bool("update", false, "rewrite e2e/streams-app/topology.txt from the drill app's --describe")

const streamsAppTopologyFile = "../../e2e/streams-app/topology.txt"

// The jar's topology is the one kept in the repository as a test input for
// topology parsing; a change to the app shows up here.
func TestStreamsAppTopologyMatchesFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	got := StreamsAppTopology(t)
	if *update {
		if err := os.WriteFile(streamsAppTopologyFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(streamsAppTopologyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the jar's --describe differs from %s (rebuild the jar with `make tools`, then rerun with -update if the change is intended):\n%s",
			streamsAppTopologyFile, got)
	}
}

// drill.slow.downstream.ms slows the count without changing the topology,
// and a value that is not a whole number of milliseconds >= 0 is refused
// with exit status 2, naming the property.
func TestStreamsAppSlowDownstream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	want, err := os.ReadFile(streamsAppTopologyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := StreamsAppTopology(t, StreamsAppProperty(StreamsAppSlowDownstreamMs, "25")); got != string(want) {
		t.Errorf("--describe with %s=25 differs from %s:\n%s", StreamsAppSlowDownstreamMs, streamsAppTopologyFile, got)
	}
	for _, bad := range []string{"-1", "soon", "1.5"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := streamsAppCmd(ctx, t, streamsAppConfig{props: []string{StreamsAppSlowDownstreamMs + "=" + bad}}, "--describe")
		out, err := cmd.CombinedOutput()
		cancel()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		if code != 2 || !strings.Contains(string(out), StreamsAppSlowDownstreamMs+" wants milliseconds") {
			t.Errorf("%s=%s: exit %d, output:\n%s\nwant exit 2 naming the property", StreamsAppSlowDownstreamMs, bad, code, out)
		}
	}
}

// drillCategories are the drill's categories and their labels.
var drillCategories = map[string]string{"books": "Books", "games": "Games", "music": "Music", "garden": "Garden", "food": "Food"}

// drillEvents makes n events of 30 users over the 5 drillCategories,
// timestamped over 3 minutes (4 one-minute windows) a few minutes ago.
func drillEvents(n int) []*kgo.Record {
	cats := slices.Sorted(maps.Keys(drillCategories))
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now().Add(-8 * time.Minute).Truncate(time.Minute).Add(17 * time.Second)
	var events []*kgo.Record
	for i := range n {
		events = append(events, &kgo.Record{
			Topic:     StreamsAppEventsTopic,
			Key:       fmt.Appendf(nil, "u%02d", rng.IntN(30)),
			Value:     fmt.Appendf(nil, "%s:%d", cats[rng.IntN(len(cats))], rng.IntN(10)+1),
			Timestamp: start.Add(time.Duration(i) * 3 * time.Minute / time.Duration(n)),
		})
	}
	return events
}

// drillWant computes, from the events alone, the latest value per key the
// app must have written to each output topic once it has processed them.
func drillWant(events []*kgo.Record) map[string]map[string]string {
	counts := map[string]int{}
	windowCounts := map[string]int{}
	labeled := map[string]string{}
	for _, r := range events {
		cat, amount, _ := strings.Cut(string(r.Value), ":")
		counts[cat]++
		windowCounts[cat+"@"+r.Timestamp.UTC().Truncate(time.Minute).Format("2006-01-02T15:04:05Z")]++
		labeled[string(r.Key)] = drillCategories[cat] + ":" + amount
	}
	itoa := func(m map[string]int) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = strconv.Itoa(v)
		}
		return out
	}
	return map[string]map[string]string{
		StreamsAppCountsTopic:       itoa(counts),
		StreamsAppWindowCountsTopic: itoa(windowCounts),
		StreamsAppLabeledTopic:      labeled,
	}
}

// A real Kafka Streams application on a real broker: it counts, windows and
// joins what it is given, creates its internal topics, stops cleanly, and
// continues from its local state when started again. Kafka 4.4's RocksDB
// stores keep their changelog offsets inside the store (KIP-1035), so the
// task directories have no .checkpoint file, unless the app runs with
// upgrade.from <= 4.2: then closing writes one for a downgrade.
func TestStreamsApp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	begin := time.Now()
	k := StartKafka(t)
	CreateStreamsAppTopics(t, k.Bootstrap(), 3)
	adm := Admin(t, k.Addrs())

	cl := Client(t, k.Addrs())
	produce := func(recs []*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	var cats []*kgo.Record
	for c, label := range drillCategories {
		cats = append(cats, &kgo.Record{Topic: StreamsAppCategoriesTopic, Key: []byte(c), Value: []byte(label)})
	}
	produce(cats)
	// A third of the events wait for the app, a third arrive while it runs,
	// a third while the second app (same state dir) runs.
	events := drillEvents(600)
	third := len(events) / 3
	produce(events[:third])

	app := StartStreamsApp(t, k.Bootstrap())
	produce(events[third : 2*third])
	waitForOutputs(t, k, drillWant(events[:2*third]), 45*time.Second)

	internal := appTopics(t, adm, app.ApplicationID())
	t.Logf("topics the app created:\n  %s", strings.Join(internal, "\n  "))
	checkInternalTopics(t, adm, app.ApplicationID(), internal)

	app.Stop(t)
	if cps := checkTaskDirs(t, app); len(cps) > 0 {
		t.Errorf(".checkpoint files after a clean stop without upgrade.from: %q; Kafka 4.4 RocksDB stores keep their offsets themselves (KIP-1035), has that changed?", cps)
	}

	app = StartStreamsApp(t, k.Bootstrap(), StreamsAppStateDir(app.StateDir()), StreamsAppProperty("upgrade.from", "4.2"))
	produce(events[2*third:])
	waitForOutputs(t, k, drillWant(events), 45*time.Second)
	app.Stop(t)
	cps := checkTaskDirs(t, app)
	if len(cps) != 9 {
		t.Errorf("want a .checkpoint file in each of the 9 task directories after a clean stop with upgrade.from=4.2, have %q", cps)
	}
	checkCheckpoints(t, adm, cps, internal)

	// A crash: no close.
	app = StartStreamsApp(t, k.Bootstrap(), StreamsAppStateDir(app.StateDir()))
	app.Kill(t)
	if strings.Contains(app.Output(), "CLOSED") {
		t.Errorf("a killed app closed:\n%s", app.Output())
	}
	// Not asserted: whether the tasks had migrated the downgrade checkpoints
	// into their stores (and deleted them) before the kill.
	t.Logf(".checkpoint files after the kill: %q", checkTaskDirs(t, app))
	t.Logf("test body took %v", time.Since(begin).Round(time.Millisecond))
}

// waitForOutputs reads the output topics (read_committed, from the start)
// until the latest value of every key is the wanted one.
func waitForOutputs(t *testing.T, k *Kafka, want map[string]map[string]string, timeout time.Duration) {
	t.Helper()
	begin := time.Now()
	cl := Client(t, k.Addrs(),
		kgo.ConsumeTopics(slices.Sorted(maps.Keys(want))...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	got := map[string]map[string]string{}
	for topic := range want {
		got[topic] = map[string]string{}
	}
	for !outputsEqual(got, want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			for topic := range want {
				if !maps.Equal(got[topic], want[topic]) {
					t.Errorf("%s: latest values\n got %v\nwant %v", topic, got[topic], want[topic])
				}
			}
			t.Fatalf("outputs not as expected after %v", timeout)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic][string(r.Key)] = string(r.Value) })
	}
	t.Logf("outputs complete %v after the app was RUNNING: %d categories, %d windows, %d users",
		time.Since(begin).Round(time.Millisecond), len(want[StreamsAppCountsTopic]),
		len(want[StreamsAppWindowCountsTopic]), len(want[StreamsAppLabeledTopic]))
}

func outputsEqual(got, want map[string]map[string]string) bool {
	for topic, w := range want {
		if !maps.Equal(got[topic], w) {
			return false
		}
	}
	return true
}

// appTopics lists the broker's topics that start with "<appID>-".
func appTopics(t *testing.T, adm *kadm.Client, appID string) []string {
	t.Helper()
	tds, err := adm.ListTopics(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, name := range tds.Names() {
		if strings.HasPrefix(name, appID+"-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// checkInternalTopics checks the internal topics against
// docs/DOMAIN.md#internal-topics: the
// named ones, the generated foreign-key join ones, and the changelogs'
// cleanup policies.
func checkInternalTopics(t *testing.T, adm *kadm.Client, appID string, topics []string) {
	t.Helper()
	wantPolicy := map[string]string{
		appID + "-by-category-repartition":           "delete",
		appID + "-counts-store-changelog":            "compact",
		appID + "-window-counts-store-changelog":     "compact,delete",
		appID + "-latest-by-user-store-changelog":    "compact",
		appID + "-category-labels-store-changelog":   "compact",
		"KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-*": "delete",
		"KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-*":     "delete",
		"KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-*":  "compact",
	}
	generated := map[string]*regexp.Regexp{
		"KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-*": regexp.MustCompile(`^` + regexp.QuoteMeta(appID) + `-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-\d{10}-topic$`),
		"KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-*":     regexp.MustCompile(`^` + regexp.QuoteMeta(appID) + `-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-\d{10}-topic$`),
		"KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-*":  regexp.MustCompile(`^` + regexp.QuoteMeta(appID) + `-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-\d{10}-changelog$`),
	}
	rcs, err := adm.DescribeTopicConfigs(testContext(t), topics...)
	if err != nil {
		t.Fatal(err)
	}
	policy := map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of %s: %v", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy[rc.Name] = c.MaybeValue()
			}
		}
	}
	for pattern, want := range wantPolicy {
		var matched []string
		for _, topic := range topics {
			if topic == pattern || generated[pattern] != nil && generated[pattern].MatchString(topic) {
				matched = append(matched, topic)
			}
		}
		if len(matched) != 1 {
			t.Errorf("want one internal topic %s, have %q", pattern, matched)
			continue
		}
		if got := policy[matched[0]]; got != want {
			t.Errorf("%s: cleanup.policy=%q, want %q", matched[0], got, want)
		}
	}
	if len(topics) != len(wantPolicy) {
		t.Errorf("the app created %d internal topics, want %d: %q", len(topics), len(wantPolicy), topics)
	}
}

// checkTaskDirs checks that the app's state dir has the 9 task directories
// (3 sub-topologies x 3 partitions) <state.dir>/<application.id>/<taskId>/,
// each with a store, and returns the .checkpoint files in them.
func checkTaskDirs(t *testing.T, app *StreamsApp) []string {
	t.Helper()
	appDir := filepath.Join(app.StateDir(), app.ApplicationID())
	entries, err := os.ReadDir(appDir)
	if err != nil {
		t.Fatal(err)
	}
	taskDir := regexp.MustCompile(`^\d+_\d+$`)
	var tasks, checkpoints []string
	for _, e := range entries {
		if !e.IsDir() || !taskDir.MatchString(e.Name()) {
			continue
		}
		tasks = append(tasks, e.Name())
		dir := filepath.Join(appDir, e.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
			if f.Name() == ".checkpoint" {
				checkpoints = append(checkpoints, filepath.Join(dir, f.Name()))
			}
		}
		// RocksDB key-value stores are in rocksdb/<store>/, window stores in <store>/.
		if !slices.ContainsFunc(names, func(n string) bool { return n == "rocksdb" || strings.HasSuffix(n, "-store") }) {
			t.Errorf("task directory %s has no store: %q", dir, names)
		}
	}
	if len(tasks) != 9 {
		t.Errorf("task directories in %s: %q, want 9 (3 sub-topologies x 3 partitions)", appDir, tasks)
	}
	return checkpoints
}

// checkCheckpoints checks the .checkpoint files against the format of
// docs/DOMAIN.md#checkpoint-file (version 0, a count, "topic partition
// offset" lines), and
// that together they cover every changelog partition the app wrote to.
func checkCheckpoints(t *testing.T, adm *kadm.Client, files []string, internal []string) {
	t.Helper()
	covered := map[string]int64{} // "topic partition" -> offset
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) < 2 || lines[0] != "0" || lines[1] != strconv.Itoa(len(lines)-2) {
			t.Errorf("%s: want version 0 and a count of the lines after it, have:\n%s", path, b)
			continue
		}
		for _, line := range lines[2:] {
			f := strings.Fields(line)
			if len(f) != 3 || !strings.HasSuffix(f[0], "-changelog") {
				t.Errorf("%s: line %q is not \"<changelog topic> <partition> <offset>\"", path, line)
				continue
			}
			off, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Errorf("%s: line %q: %v", path, line, err)
				continue
			}
			covered[f[0]+" "+f[1]] = off
		}
	}
	// Each changelog partition that has records must be checkpointed at the
	// offset of a record (the last one applied), below the partition's end.
	var changelogs []string
	for _, topic := range internal {
		if strings.HasSuffix(topic, "-changelog") {
			changelogs = append(changelogs, topic)
		}
	}
	ends, err := adm.ListEndOffsets(testContext(t), changelogs...)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
			return
		}
		if o.Offset == 0 {
			return
		}
		off, ok := covered[fmt.Sprintf("%s %d", o.Topic, o.Partition)]
		t.Logf("%s/%d: checkpoint %d, end offset %d", o.Topic, o.Partition, off, o.Offset)
		switch {
		case !ok:
			t.Errorf("no checkpoint line for %s partition %d (end offset %d)", o.Topic, o.Partition, o.Offset)
		case off < 0 || off >= o.Offset:
			t.Errorf("checkpoint of %s partition %d is offset %d, want one in [0, %d)", o.Topic, o.Partition, off, o.Offset)
		}
	})
}
