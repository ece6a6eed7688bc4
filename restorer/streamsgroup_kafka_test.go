package restorer_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// streamsGroupConfigs are set on the source's streams group: both are
// GROUP-resource configs of a streams group (Kafka's GroupConfig), within
// the broker's defaults group.streams.max.standby.replicas=2 and
// group.streams.{min,max}.session.timeout.ms=45000..60000.
var streamsGroupConfigs = map[string]string{
	"streams.num.standby.replicas": "1",
	"streams.session.timeout.ms":   "50000",
}

// TestStreamsGroupRestoredOnKafka: the real drill app runs as a streams
// group (group.protocol=streams, KIP-1071) on a real Kafka 4.4 source, with
// two group configs set on its group. The backup records the group's type
// (streams) and those configs (source DYNAMIC_GROUP_CONFIG, nothing else).
// A fresh target gets the configs before the offsets make the group. A
// target that already holds the application's streams group, empty (the
// app ran there and stopped): the restore sets the configs on it
// (DescribeConfigs and Kafka's own ConfigCommand read them back), commits
// the offsets to the empty streams group as Admin#alterStreamsGroupOffsets
// does (OffsetCommit with member epoch -1, accepted by
// StreamsGroup#validateOffsetCommit when the group has no members), and
// the app resumes there exactly: after more events, every category's
// count is the number of all its events, none lost and none counted twice.
func TestStreamsGroupRestoredOnKafka(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	streams := testkit.StreamsAppProperty("group.protocol", "streams")
	cats := []string{"books", "games", "music"}
	events := func(cl *kgo.Client, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Topic: testkit.StreamsAppEventsTopic, Key: fmt.Appendf(nil, "u%02d", i%7), Value: fmt.Appendf(nil, "%s:%d", cats[i%len(cats)], i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const before, after = 30, 12

	src := testkit.StartKafka(t)
	srcAdm := testkit.Admin(t, src.Addrs())
	testkit.CreateStreamsAppTopics(t, src.Bootstrap(), 2)
	srcCl := testkit.Client(t, src.Addrs())
	for _, c := range cats {
		if err := srcCl.ProduceSync(ctx, &kgo.Record{Topic: testkit.StreamsAppCategoriesTopic, Key: []byte(c), Value: []byte(strings.ToUpper(c))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	events(srcCl, 0, before)
	app := testkit.StartStreamsApp(t, src.Bootstrap(), streams)
	waitConsumed(t, srcAdm, app.ApplicationID(), testkit.StreamsAppEventsTopic)
	app.Stop(t)
	group := app.ApplicationID()
	alterGroupConfigs(t, srcCl, group, streamsGroupConfigs)
	// The broker shows a config change once it applied it from the
	// metadata log: wait for that, so that the backup reads them.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cs, n := describeGroupConfigs(t, srcCl, group), 0
		for k, v := range streamsGroupConfigs {
			if c := cs[k]; c.Value != nil && *c.Value == v {
				n++
			}
		}
		if n == len(streamsGroupConfigs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source does not show the group configs set 30 s ago: %+v", cs)
		}
	}

	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(ctx, backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store, ApplicationID: group,
		Include: append(slices.Clone(testkit.StreamsAppTopics), group+"-*"), SourceClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	if m.Group == nil || m.Group.Type != format.GroupTypeStreams {
		t.Fatalf("manifest group %+v: want type %q", m.Group, format.GroupTypeStreams)
	}
	got := map[string]string{}
	for k, c := range m.Group.Configs {
		if c.Value == nil || c.Source != format.ConfigSourceDynamicGroup {
			t.Errorf("manifest group config %s = %+v: want a value with source DYNAMIC_GROUP_CONFIG", k, c)
			continue
		}
		got[k] = *c.Value
	}
	if !equalMaps(got, streamsGroupConfigs) {
		t.Errorf("manifest group configs %v, want exactly those set on the group %v", got, streamsGroupConfigs)
	}

	// A fresh target, where the group does not exist yet: the broker
	// takes configs for a group it does not know, and the restore sets
	// them before the offsets make the group.
	fresh := testkit.StartKafka(t)
	if _, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(fresh.Addrs()...)}, Store: store, ApplicationID: group}); err != nil {
		t.Fatalf("restore into a fresh target: %v", err)
	}
	for k, want := range streamsGroupConfigs {
		if c := describeGroupConfigs(t, testkit.Client(t, fresh.Addrs()), group)[k]; c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceGroupConfig {
			t.Errorf("fresh target group config %s = %+v: want %s set on the group", k, c, want)
		}
	}

	// The target: the app ran there on empty topics and stopped, leaving
	// its streams group, empty.
	dst := testkit.StartKafka(t)
	dstAdm := testkit.Admin(t, dst.Addrs())
	testkit.CreateStreamsAppTopics(t, dst.Bootstrap(), 2)
	first := testkit.StartStreamsApp(t, dst.Bootstrap(), streams)
	first.Stop(t)
	if lg := listedGroup(t, dstAdm, group); lg.GroupType != "streams" || lg.State != "Empty" {
		t.Fatalf("target group before the restore: %+v; want an empty streams group", lg)
	}

	report, err := restorer.Run(ctx, restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: group})
	if err != nil {
		t.Fatal(err)
	}
	if report.Group == nil || report.Group.TargetType != "streams" || !equalMaps(report.Group.Configs, streamsGroupConfigs) || !report.Committed {
		t.Errorf("report group %+v committed %v: want the streams group's configs set and its offsets committed", report.Group, report.Committed)
	}
	dstConfigs := describeGroupConfigs(t, testkit.Client(t, dst.Addrs()), group)
	for k, want := range streamsGroupConfigs {
		if c, ok := dstConfigs[k]; !ok || c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceGroupConfig {
			t.Errorf("target group config %s = %+v: want %s set on the group", k, c, want)
		}
	}
	// Kafka's own tool reads them the same.
	out, err := dst.RunTool(t, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", dst.Bootstrap(),
		"--describe", "--entity-type", "groups", "--entity-name", group)
	if err != nil {
		t.Fatalf("kafka-configs --describe: %v\n%s", err, out)
	}
	for k, v := range streamsGroupConfigs {
		if !strings.Contains(out, k+"="+v) {
			t.Errorf("kafka-configs --describe of group %s does not show %s=%s:\n%s", group, k, v, out)
		}
	}
	srcCommitted := restorecheck.GroupOffsets(t, srcAdm, group)
	dstCommitted := restorecheck.GroupOffsets(t, dstAdm, group)
	for p, off := range srcCommitted[testkit.StreamsAppEventsTopic] {
		// The source's events are restored from offset 0: same offsets.
		if dstCommitted[testkit.StreamsAppEventsTopic][p] != off {
			t.Errorf("target committed %s/%d = %d, want %d (the source's, translated)", testkit.StreamsAppEventsTopic, p, dstCommitted[testkit.StreamsAppEventsTopic][p], off)
		}
	}

	// The app resumes on the target from the restored offsets and state.
	dstCl := testkit.Client(t, dst.Addrs())
	events(dstCl, before, after)
	resumed := testkit.StartStreamsApp(t, dst.Bootstrap(), streams)
	waitConsumed(t, dstAdm, group, testkit.StreamsAppEventsTopic)
	waitAllConsumed(t, dstAdm, group) // the counts sit behind the repartition topic
	resumed.Stop(t)
	want := map[string]int{}
	for i := range before + after {
		want[cats[i%len(cats)]]++
	}
	counts := latestCounts(t, dst.Addrs(), dstAdm)
	for _, c := range cats {
		if counts[c] != want[c] {
			t.Errorf("category %s counted %d on the target after resuming, want %d (%d events before the backup, %d after)", c, counts[c], want[c], before, after)
		}
	}
}

// waitConsumed waits (2 minutes at most) until group has committed the
// end offset of every partition of topic.
func waitConsumed(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ends := restorecheck.EndOffsets(t, adm, topic)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := restorecheck.GroupOffsets(t, adm, group)
		done := true
		for p, e := range ends[topic] {
			if got[topic][p] != e {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed %v on %s within 2 minutes, want the ends %v", group, got[topic], topic, ends[topic])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitAllConsumed waits (2 minutes at most) until group has committed,
// on every partition it has committed on, the partition's last stable
// offset: every sub-topology has processed all that is upstream of it.
func waitAllConsumed(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := restorecheck.GroupOffsets(t, adm, group)
		topics := slices.Collect(maps.Keys(got))
		ends, err := adm.ListCommittedOffsets(t.Context(), topics...)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			t.Fatalf("last stable offsets of %v: %v", topics, err)
		}
		var behind []string
		ends.Each(func(e kadm.ListedOffset) {
			if got[e.Topic][e.Partition] != e.Offset {
				behind = append(behind, fmt.Sprintf("%s/%d %d of %d", e.Topic, e.Partition, got[e.Topic][e.Partition], e.Offset))
			}
		})
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s still behind after 2 minutes: %v", group, behind)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func alterGroupConfigs(t *testing.T, cl *kgo.Client, group string, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(t.Context(), cl)
	if err == nil && len(resp.Resources) == 1 && resp.Resources[0].ErrorCode != 0 {
		err = fmt.Errorf("error code %d: %v", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage)
	}
	if err != nil {
		t.Fatalf("set configs %v on group %s: %v", configs, group, err)
	}
}

func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(t.Context(), cl)
	if err == nil && (len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0) {
		err = fmt.Errorf("answer %+v", resp.Resources)
	}
	if err != nil {
		t.Fatalf("describe configs of group %s: %v", group, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func listedGroup(t *testing.T, adm *kadm.Client, group string) kadm.ListedGroup {
	t.Helper()
	lgs, err := adm.ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return lgs[group]
}

// latestCounts reads the drill app's counts topic: category -> the latest
// count.
func latestCounts(t *testing.T, seeds []string, adm *kadm.Client) map[string]int {
	t.Helper()
	recs := restorecheck.ReadAll(t, seeds, restorecheck.EndOffsets(t, adm, testkit.StreamsAppCountsTopic))
	out := map[string]int{}
	for _, rs := range recs[testkit.StreamsAppCountsTopic] {
		for _, r := range rs {
			n, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatalf("count %q of %q: %v", r.Value, r.Key, err)
			}
			out[string(r.Key)] = n
		}
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestStreamsGroupWithMembersRefused: a target where the application runs
// as a streams group (group.protocol=streams) refuses the restore before
// its first write, counting the group's members (StreamsGroupDescribe:
// DescribeGroups does not describe a streams group, and the refusal said
// 0 members); after the instance is killed it is still a member until its
// session times out, and the refusal says to wait for that
// (docs/DOMAIN.md#field-case-18).
func TestStreamsGroupWithMembersRefused(t *testing.T) {
	t.Parallel()
	_, store, m := backedUpSample(t)
	rewriteManifest(t, store, m, func(m *format.Manifest) { m.Group.Type = format.GroupTypeStreams })
	dst := testkit.StartKafka(t)
	testkit.CreateStreamsAppTopics(t, dst.Bootstrap(), 1)
	app := testkit.StartStreamsApp(t, dst.Bootstrap(), testkit.StreamsAppID(sample.AppID), testkit.StreamsAppProperty("group.protocol", "streams"))
	restore := func(when string) {
		t.Helper()
		_, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store,
			ApplicationID: sample.AppID, ReplicationFactor: 1, DryRun: true})
		re, ok := errors.AsType[*restorer.RefusedError](err)
		if !ok {
			t.Fatalf("restore %s: %v; want a *RefusedError", when, err)
		}
		for _, s := range []string{fmt.Sprintf("streams group (KIP-1071) %q on the target", sample.AppID), "with 1 member(s)", "streams.session.timeout.ms, 45 s by default"} {
			if !strings.Contains(re.Error(), s) {
				t.Errorf("refusal %s %q does not say %q", when, re.Error(), s)
			}
		}
	}
	restore("while the application runs")
	app.Kill(t)
	restore("right after the application was killed")
}
