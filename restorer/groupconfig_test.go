package restorer_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestGroupConfigsOnTheTarget: the backup's group configs are set on the
// target's group before the offsets are committed, and read back; a
// target that refuses them (kfake knows no streams.* group config, as a
// Kafka before 4.1 does not) refuses the restore before its first write,
// naming the group, the config and the fix.
func TestGroupConfigsOnTheTarget(t *testing.T) {
	for _, tt := range []struct {
		name    string
		configs map[string]string
		refusal []string
	}{
		{name: "accepted and set", configs: map[string]string{"consumer.session.timeout.ms": "30000", "consumer.heartbeat.interval.ms": "4000"}},
		{name: "refused by the target", configs: map[string]string{"streams.num.standby.replicas": "1"},
			refusal: []string{"does not accept the configs of group", sample.AppID, "streams.num.standby.replicas=1", "Kafka 4.1 or later"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, store, m := backedUpSample(t)
			rewriteManifest(t, store, m, func(m *format.Manifest) {
				m.Group.Configs = map[string]format.TopicConfig{}
				for k, v := range tt.configs {
					m.Group.Configs[k] = format.TopicConfig{Value: &v, Source: format.ConfigSourceDynamicGroup}
				}
			})
			dst := testkit.StartKfake(t, 3)
			dstCl := testkit.Client(t, dst.Addrs())
			rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
			if tt.refusal != nil {
				re, ok := errors.AsType[*restorer.RefusedError](err)
				if !ok {
					t.Fatalf("restore: %v; want a *RefusedError", err)
				}
				for _, s := range tt.refusal {
					if !strings.Contains(re.Error(), s) {
						t.Errorf("refusal %q does not say %q", re.Error(), s)
					}
				}
				if topics := restorecheck.Topics(t, testkit.Admin(t, dst.Addrs())); len(topics) != 0 {
					t.Errorf("a refused restore created topics %v on the target", topics)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalMaps(rep.Group.Configs, tt.configs) {
				t.Errorf("report group configs %v, want %v", rep.Group.Configs, tt.configs)
			}
			got := describeGroupConfigs(t, dstCl, sample.AppID)
			for k, want := range tt.configs {
				if c := got[k]; c.Value == nil || *c.Value != want {
					t.Errorf("target group config %s = %+v, want %s", k, c, want)
				}
			}
		})
	}
}

// TestShareGroupLeftAlone: a backup whose group is a share group (KIP-932;
// the backup read none of it) restores its topics and leaves the target's
// share group of that id alone: no refusal for its members, no offset
// committed, no config set.
func TestShareGroupLeftAlone(t *testing.T) {
	_, store, m := backedUpSample(t)
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		m.Group.Type, m.Group.Offsets = format.GroupTypeShare, []format.GroupOffset{}
	})
	dst := testkit.StartKfake(t, 3)
	dstCl := testkit.Client(t, dst.Addrs())
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = sample.AppID, "m-share-00000000000001", 0
	req.SubscribedTopicNames = []string{"anything"}
	if resp, err := req.RequestWith(t.Context(), dstCl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join a share group on the target: %v %+v", err, resp)
	}
	rep, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID})
	if err != nil {
		t.Fatalf("restore of a backup whose group is a share group: %v", err)
	}
	if rep.Group != nil || rep.Committed {
		t.Errorf("report group %+v committed %v: want the share group left alone", rep.Group, rep.Committed)
	}
	if !slices.ContainsFunc(rep.Plan.Warnings, func(w string) bool { return strings.Contains(w, "share group (KIP-932)") }) {
		t.Errorf("plan warnings %q: want one saying the share group is left alone", rep.Plan.Warnings)
	}
	if rep.Plan.ShareGroup != sample.AppID {
		t.Errorf("plan share_group %q, want %q (the plan's output says the share group was left alone)", rep.Plan.ShareGroup, sample.AppID)
	}
}

// TestSkipGroupConfigs is a regression test (second new-user pass): a
// real Kafka 4.4 target with group.streams.max.standby.replicas=0 refuses
// the backup's streams.num.standby.replicas=1, and the refusal's only fix
// needed the lost source ("take a new backup"). It now names the broker's
// answer and SkipGroupConfigs (--skip-group-configs), which restores the
// offsets without the configs: the plan and the report name the configs
// not set, and none is set on the target's group.
func TestSkipGroupConfigs(t *testing.T) {
	t.Parallel()
	_, store, m := backedUpSample(t)
	one := "1"
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		m.Group.Configs = map[string]format.TopicConfig{"streams.num.standby.replicas": {Value: &one, Source: format.ConfigSourceDynamicGroup}}
	})
	dst := testkit.StartKafka(t, testkit.KafkaProperty("group.streams.max.standby.replicas", "0"))
	opts := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID, ReplicationFactor: 1}
	_, err := restorer.Run(t.Context(), opts)
	re, ok := errors.AsType[*restorer.RefusedError](err)
	if !ok {
		t.Fatalf("restore into a target refusing the configs: %v; want a *RefusedError", err)
	}
	for _, s := range []string{"streams.num.standby.replicas=1", "--skip-group-configs", "group.streams.max.standby.replicas"} {
		if !strings.Contains(re.Error(), s) {
			t.Errorf("refusal %q does not say %q", re.Error(), s)
		}
	}
	opts.SkipGroupConfigs = true
	rep, err := restorer.Run(t.Context(), opts)
	if err != nil {
		t.Fatalf("restore with SkipGroupConfigs: %v", err)
	}
	if !rep.Committed || len(rep.Group.Configs) != 0 || !slices.Equal(rep.Group.SkippedConfigs, []string{"streams.num.standby.replicas"}) {
		t.Errorf("report: committed %v, group configs %v, skipped %v; want committed, none set, streams.num.standby.replicas skipped", rep.Committed, rep.Group.Configs, rep.Group.SkippedConfigs)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, "--skip-group-configs") && strings.Contains(w, "streams.num.standby.replicas")
	}) {
		t.Errorf("warnings %q do not name the configs not set", rep.Warnings)
	}
	if c, ok := describeGroupConfigs(t, testkit.Client(t, dst.Addrs()), sample.AppID)["streams.num.standby.replicas"]; ok && c.Source == kmsg.ConfigSourceGroupConfig {
		t.Errorf("streams.num.standby.replicas set on the target's group: %+v", c)
	}
}

// TestTargetGroupConfigsShown is a regression test (second new-user
// pass): the target's group already held streams.heartbeat.interval.ms=7000
// and streams.num.standby.replicas=2; the plan said nothing of them, the
// restore overwrote the standby count without showing the old value and
// left the heartbeat as it was, unsaid. The plan now holds the target's
// group configs (GroupPlan.TargetConfigs) and warns of those the backup
// does not hold, left as they are.
func TestTargetGroupConfigsShown(t *testing.T) {
	t.Parallel()
	_, store, m := backedUpSample(t)
	one := "1"
	rewriteManifest(t, store, m, func(m *format.Manifest) {
		m.Group.Configs = map[string]format.TopicConfig{"streams.num.standby.replicas": {Value: &one, Source: format.ConfigSourceDynamicGroup}}
	})
	dst := testkit.StartKafka(t)
	dstCl := testkit.Client(t, dst.Addrs())
	before := map[string]string{"streams.heartbeat.interval.ms": "7000", "streams.num.standby.replicas": "2"}
	alterGroupConfigs(t, dstCl, sample.AppID, before)
	var rep *restorer.Report
	var err error
	for range 50 { // the configs reach the broker through the metadata log
		rep, err = restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID, ReplicationFactor: 1, DryRun: true})
		if err != nil || equalMaps(rep.Plan.Group.TargetConfigs, before) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !equalMaps(rep.Plan.Group.TargetConfigs, before) {
		t.Errorf("plan's target configs %v, want %v", rep.Plan.Group.TargetConfigs, before)
	}
	if !slices.ContainsFunc(rep.Plan.Warnings, func(w string) bool {
		return strings.Contains(w, "streams.heartbeat.interval.ms=7000") && strings.Contains(w, "left as they are")
	}) {
		t.Errorf("warnings %q do not name the target's config the backup does not hold", rep.Plan.Warnings)
	}
}
