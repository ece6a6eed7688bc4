package backup_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestGroupTypeAndConfigsRecorded: the manifest's group has the type
// ListGroups reports for every kind of group kfake serves (classic,
// consumer, share; a streams group on real Kafka in restorer's
// TestStreamsGroupRestoredOnKafka) and the group's GROUP-resource configs
// set on it (source DYNAMIC_GROUP_CONFIG; the defaults left out). A share
// group (KIP-932) is not a Streams application's: its offsets and configs
// are not read, and the backup says so.
func TestGroupTypeAndConfigsRecorded(t *testing.T) {
	const topic = "in"
	for _, tt := range []struct {
		name, kind string
		join       func(t *testing.T, cl *kgo.Client, adm *kadm.Client, group string)
		configs    map[string]string
		offsets    int
		warning    string
	}{
		{name: "classic group with a config", kind: format.GroupTypeClassic,
			join: func(t *testing.T, _ *kgo.Client, adm *kadm.Client, group string) {
				offs := kadm.Offsets{}
				offs.AddOffset(topic, 0, 1, -1)
				if err := adm.CommitAllOffsets(t.Context(), group, offs); err != nil {
					t.Fatal(err)
				}
			},
			configs: map[string]string{"consumer.session.timeout.ms": "30000"}, offsets: 1},
		{name: "consumer group (KIP-848)", kind: format.GroupTypeConsumer,
			join: func(t *testing.T, cl *kgo.Client, _ *kadm.Client, group string) {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, "m-consumer-0000000001", 0, 30000
				req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				resp, err := req.RequestWith(t.Context(), cl)
				if err == nil && resp.ErrorCode != 0 {
					err = fmt.Errorf("error code %d", resp.ErrorCode)
				}
				if err != nil {
					t.Fatalf("join consumer group: %v", err)
				}
			},
			warning: "has no committed offsets"},
		{name: "share group left alone", kind: format.GroupTypeShare,
			join: func(t *testing.T, cl *kgo.Client, _ *kadm.Client, group string) {
				req := kmsg.NewPtrShareGroupHeartbeatRequest()
				req.GroupID, req.MemberID, req.MemberEpoch = group, "m-share-00000000000001", 0
				req.SubscribedTopicNames = []string{topic}
				resp, err := req.RequestWith(t.Context(), cl)
				if err == nil && resp.ErrorCode != 0 {
					err = fmt.Errorf("error code %d", resp.ErrorCode)
				}
				if err != nil {
					t.Fatalf("join share group: %v", err)
				}
			},
			configs: map[string]string{"share.auto.offset.reset": "earliest"}, warning: "is a share group (KIP-932)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kf := testkit.StartKfake(t, 1, kfake.SeedTopics(1, topic))
			cl := testkit.Client(t, kf.Addrs())
			adm := kadm.NewClient(cl)
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			group := "app-" + tt.kind
			tt.join(t, cl, adm, group)
			if len(tt.configs) > 0 {
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				rr := kmsg.NewIncrementalAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
				for k, v := range tt.configs {
					c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
					c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
					rr.Configs = append(rr.Configs, c)
				}
				req.Resources = append(req.Resources, rr)
				if resp, err := req.RequestWith(t.Context(), cl); err != nil || resp.Resources[0].ErrorCode != 0 {
					t.Fatalf("set group configs: %v %+v", err, resp)
				}
			}
			store, err := storage.NewFilesystem(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(kf.Addrs()...)}, Store: store,
				ApplicationID: group, Include: []string{topic}})
			if err != nil {
				t.Fatal(err)
			}
			m := backupcheck.Latest(t, store, res.BackupID)
			g := m.Group
			if g == nil || g.Type != tt.kind {
				t.Fatalf("manifest group %+v: want type %q", g, tt.kind)
			}
			if len(g.Offsets) != tt.offsets {
				t.Errorf("manifest group offsets %+v: want %d", g.Offsets, tt.offsets)
			}
			got := map[string]string{}
			for k, c := range g.Configs {
				if c.Value == nil || c.Source != format.ConfigSourceDynamicGroup {
					t.Errorf("group config %s = %+v: want a value with source %s", k, c, format.ConfigSourceDynamicGroup)
					continue
				}
				got[k] = *c.Value
			}
			want := tt.configs
			if tt.kind == format.GroupTypeShare {
				want = nil // never read
			}
			if len(got) != len(want) {
				t.Errorf("group configs %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("group config %s = %q, want %q", k, got[k], v)
				}
			}
			if tt.warning != "" && !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, tt.warning) }) {
				t.Errorf("warnings %q: want one saying %q", m.Warnings, tt.warning)
			}
		})
	}
}
