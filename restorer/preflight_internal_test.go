package restorer

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

func strp(s string) *string { return &s }

// planTopicFixture is a backed-up topic of 2 partitions (10 and 4 records
// to restore) with dynamic configs, and a selection holding it.
func planTopicFixture(configs map[string]string) (*format.Topic, *selection) {
	t := &format.Topic{Name: "orders", Class: "external", Partitions: 2, ReplicationFactor: 3, Configs: map[string]format.TopicConfig{},
		PartitionCuts: []format.Partition{{Partition: 0, EndOffset: 10, Records: 10}, {Partition: 1, EndOffset: 4, Records: 4}}}
	for k, v := range configs {
		t.Configs[k] = format.TopicConfig{Value: strp(v), Source: "DYNAMIC_TOPIC_CONFIG"}
	}
	t.Configs["segment.bytes"] = format.TopicConfig{Value: strp("1073741824"), Source: "DEFAULT_CONFIG"}
	sel := &selection{m: &format.Manifest{Topics: []format.Topic{*t}}, topics: []*format.Topic{t},
		cuts:    map[string]map[int32]int64{"orders": {0: -1, 1: -1}},
		records: map[string]map[int32]int64{"orders": {0: 10, 1: 4}}}
	return t, sel
}

// onTarget is the target's copy of topic orders: partitions, topic id,
// records held per partition (log start 0) and configs.
func onTarget(partitions int, id byte, held []int64, configs map[string]string) *targetTopics {
	tt := &targetTopics{details: kadm.TopicDetails{}, start: map[string]map[int32]int64{}, end: map[string]map[int32]int64{},
		configs: map[string]map[string]*string{}, full: map[string]map[string]kadm.Config{}}
	d := kadm.TopicDetail{Topic: "orders", ID: kadm.TopicID{id}, Partitions: kadm.PartitionDetails{}}
	for p := range partitions {
		d.Partitions[int32(p)] = kadm.PartitionDetail{Topic: "orders", Partition: int32(p)}
	}
	tt.details["orders"] = d
	for p, n := range held {
		setOff(tt.start, "orders", int32(p), 0)
		setOff(tt.end, "orders", int32(p), n)
	}
	tt.configs["orders"] = map[string]*string{}
	for k, v := range configs {
		tt.configs["orders"][k] = strp(v)
	}
	return tt
}

func absent() *targetTopics {
	return &targetTopics{details: kadm.TopicDetails{}, start: map[string]map[int32]int64{}, end: map[string]map[int32]int64{}}
}

// TestPlanTopic: each way a backed-up topic is planned against the target
// returns its action, configs and partition plans, and its refusals and
// warnings, without a cluster (the rules of preflight, unchanged by the
// split of restore.go).
func TestPlanTopic(t *testing.T) {
	idOf := func(b byte) string { return kafkaTopicID(kadm.TopicID{b}) }
	ours := &journal{Topics: map[string]string{"orders": idOf(7)}}
	theirs := &journal{Strategy: StrategyRebuild, Topics: map[string]string{"orders": idOf(7)}}
	for _, row := range []struct {
		name        string
		configs     map[string]string // the backup's dynamic configs
		opts        Options
		target      *targetTopics
		jour, other *journal
		brokers     int
		wantAction  format.TopicAction
		wantCreate  bool
		check       func(t *testing.T, tp TopicPlan)
		refusals    []string // each in one refusal, in order
		warnings    []string
	}{
		{name: "absent topic is created with the backup's replication factor", target: absent(), brokers: 3,
			configs: map[string]string{"cleanup.policy": "delete"}, wantAction: format.ActionCreate, wantCreate: true,
			check: func(t *testing.T, tp TopicPlan) {
				if tp.ReplicationFactor != 3 || tp.Configs["cleanup.policy"] != "delete" || len(tp.Configs) != 1 || len(tp.PartitionPlans) != 2 ||
					tp.PartitionPlans[0].Records != 10 || tp.PartitionPlans[1].Records != 4 || tp.PartitionPlans[0].CutAt != -1 {
					t.Errorf("plan %+v", tp)
				}
			}},
		{name: "replication factor beyond the target's brokers is refused", target: absent(), brokers: 1,
			wantAction: format.ActionCreate, wantCreate: true, refusals: []string{"replication factor 3 does not fit the target's 1 broker(s)"}},
		{name: "min.insync.replicas beyond --replication-factor is capped with a warning", target: absent(), brokers: 3,
			configs: map[string]string{"min.insync.replicas": "2"}, opts: Options{ReplicationFactor: 1},
			wantAction: format.ActionCreate, wantCreate: true, warnings: []string{"min.insync.replicas lowered from 2 to 1"},
			check: func(t *testing.T, tp TopicPlan) {
				if tp.ReplicationFactor != 1 || tp.Configs["min.insync.replicas"] != "1" {
					t.Errorf("plan %+v", tp)
				}
			}},
		{name: "min.insync.replicas beyond the replication factor is refused", target: absent(), brokers: 3,
			configs: map[string]string{"min.insync.replicas": "4"}, wantAction: format.ActionCreate, wantCreate: true,
			refusals: []string{"min.insync.replicas=4 does not fit replication factor 3"}},
		{name: "LogAppendTime is created CreateTime and switched after the records", target: absent(), brokers: 3,
			configs: map[string]string{"message.timestamp.type": "LogAppendTime"}, wantAction: format.ActionCreate, wantCreate: true,
			check: func(t *testing.T, tp TopicPlan) {
				if tp.Configs["message.timestamp.type"] != "CreateTime" || tp.FinalConfigs["message.timestamp.type"] != "LogAppendTime" {
					t.Errorf("plan %+v", tp)
				}
			}},
		{name: "existing empty topic is filled keeping its configs", brokers: 3,
			configs:    map[string]string{"cleanup.policy": "delete", "retention.ms": "1000"},
			target:     onTarget(2, 1, []int64{0, 0}, map[string]string{"cleanup.policy": "delete", "retention.ms": "5000", "message.timestamp.type": "LogAppendTime"}),
			wantAction: format.ActionFill, warnings: []string{"exists (empty) on the target with retention.ms=5000; the backup has 1000"},
			check: func(t *testing.T, tp TopicPlan) {
				if tp.Configs["retention.ms"] != "5000" || tp.PreConfigs["message.timestamp.type"] != "CreateTime" || tp.FinalConfigs["message.timestamp.type"] != "LogAppendTime" {
					t.Errorf("plan %+v", tp)
				}
			}},
		{name: "existing empty topic of another cleanup.policy is refused", brokers: 3,
			configs:    map[string]string{"cleanup.policy": "compact"},
			target:     onTarget(2, 1, []int64{0, 0}, map[string]string{"cleanup.policy": "delete"}),
			wantAction: format.ActionFill, refusals: []string{"exists empty on the target with cleanup.policy=delete; the backup has compact"}},
		{name: "existing topic of another partition count is refused", brokers: 3, target: onTarget(3, 1, []int64{0, 0, 0}, nil),
			wantAction: format.ActionFill, refusals: []string{"exists on the target with 3 partitions; the backup has 2"}},
		{name: "existing topic of one partition is refused in the singular", brokers: 3, target: onTarget(1, 1, []int64{0}, nil),
			wantAction: format.ActionFill, refusals: []string{"exists on the target with 1 partition; the backup has 2"}},
		{name: "non-empty topic not created by this restore is refused", brokers: 3, target: onTarget(2, 1, []int64{5, 0}, nil),
			wantAction: format.ActionCreate, refusals: []string{"is not empty (5 records) and was not created by an earlier run of this restore"}},
		{name: "topic of an earlier run of this restore is resumed", brokers: 3, target: onTarget(2, 7, []int64{6, 0}, nil), jour: ours,
			wantAction: format.ActionResume,
			check: func(t *testing.T, tp TopicPlan) {
				if tp.PartitionPlans[0].AlreadyThere != 6 || tp.PartitionPlans[1].AlreadyThere != 0 {
					t.Errorf("partition plans %+v", tp.PartitionPlans)
				}
			}},
		{name: "resumed partition holding more than the restore writes is refused", brokers: 3, target: onTarget(2, 7, []int64{6, 5}, nil), jour: ours,
			wantAction: format.ActionResume, refusals: []string{"partition 1 on the target holds 5 records, more than the 4 this restore writes"}},
		{name: "topic of a restore with another strategy is refused naming it", brokers: 3, target: onTarget(2, 7, []int64{6, 0}, nil), other: theirs,
			wantAction: format.ActionCreate, refusals: []string{"with strategy rebuild and cut none: re-run that restore"}},
	} {
		t.Run(row.name, func(t *testing.T) {
			topic, sel := planTopicFixture(row.configs)
			tp, create, f := planTopic(topic, sel, &row.opts, row.target, row.jour, row.other, row.brokers)
			if tp.Action != row.wantAction || create != row.wantCreate {
				t.Errorf("action %q create %v, want %q %v", tp.Action, create, row.wantAction, row.wantCreate)
			}
			for _, c := range []struct {
				kind      string
				got, want []string
			}{{"refusals", f.refusals, row.refusals}, {"warnings", f.warnings, row.warnings}} {
				if len(c.got) != len(c.want) {
					t.Errorf("%s %q, want %d like %q", c.kind, c.got, len(c.want), c.want)
					continue
				}
				for i := range c.want {
					if !strings.Contains(c.got[i], c.want[i]) || !strings.Contains(c.got[i], `"orders"`) {
						t.Errorf("%s[%d] = %q, want it to name topic \"orders\" and say %q", c.kind, i, c.got[i], c.want[i])
					}
				}
			}
			if row.check != nil {
				row.check(t, tp)
			}
		})
	}
}

// TestPlanTopicWarnsOfAnUnreadRange: a partition the backup could not read
// to its end is named in a warning.
func TestPlanTopicWarnsOfAnUnreadRange(t *testing.T) {
	topic, sel := planTopicFixture(nil)
	topic.PartitionCuts[1].Unread = &format.Gap{From: 4, To: 9}
	_, _, f := planTopic(topic, sel, &Options{}, absent(), nil, nil, 3)
	if len(f.refusals) != 0 || len(f.warnings) != 1 || !strings.Contains(f.warnings[0], `topic "orders" partition 1 offsets 4..8 are not in this backup`) {
		t.Fatalf("findings %+v: want one warning naming orders/1 offsets 4..8", f)
	}
}

// TestPlanCompleteAndOffsetWarnings: a restore is complete only when its
// journal says so and every partition is resumed with all its records; a
// complete one warns of offsets the group moved since, an incomplete one of
// the offsets it overwrites.
func TestPlanCompleteAndOffsetWarnings(t *testing.T) {
	plan := func(already int64) *Plan {
		return &Plan{Topics: []TopicPlan{{Topic: "orders", Action: format.ActionResume, PartitionPlans: []PartitionPlan{{Partition: 0, Records: 10, AlreadyThere: already}}}},
			Group: &GroupPlan{GroupID: "app", Offsets: []OffsetPlan{
				{Topic: "orders", Partition: 0, Translated: 8, Current: 9, Action: format.OffsetCommit},
				{Topic: "orders", Partition: 1, Translated: -1, Current: 3, Action: format.OffsetDrop},
				{Topic: "orders", Partition: 2, Translated: 4, Current: -1, Action: format.OffsetCommit},
			}}}
	}
	done := &journal{Complete: true, Committed: map[string]int64{"orders/0": 8}}
	for _, row := range []struct {
		name     string
		plan     *Plan
		jour     *journal
		complete bool
		warning  string
	}{
		{"no journal", plan(10), nil, false, "has offset 9 committed on orders/0 on the target: the restore overwrites it with 8"},
		{"journal not complete", plan(10), &journal{Committed: map[string]int64{}}, false, "overwrites it with 8"},
		{"records missing", plan(9), done, false, "overwrites it with 8"},
		{"complete", plan(10), done, true, "moved on orders/0 since this restore committed it (now 9): left as it is"},
	} {
		t.Run(row.name, func(t *testing.T) {
			row.plan.Complete = planComplete(row.plan, row.jour)
			ws := offsetWarnings(row.plan, row.jour)
			if row.plan.Complete != row.complete || len(ws) != 1 || !strings.Contains(ws[0], row.warning) || !strings.Contains(ws[0], `group "app"`) {
				t.Errorf("complete %v, warnings %q; want %v and one warning saying %q", row.plan.Complete, ws, row.complete, row.warning)
			}
		})
	}
}

// TestStrategyWarnings: a cut before every record, the rebuild strategy's
// duplicated outputs and the changelog strategy without changelogs are
// each warned of.
func TestStrategyWarnings(t *testing.T) {
	topic, sel := planTopicFixture(nil)
	changelog := format.Topic{Name: "app-store-changelog", Class: "changelog"}
	sel.m.Topics = append(sel.m.Topics, changelog)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	planned := func(records int64) *Plan {
		return &Plan{Topics: []TopicPlan{{Topic: topic.Name, Class: topic.Class, PartitionPlans: []PartitionPlan{{Records: records}}}}}
	}
	for _, row := range []struct {
		name string
		plan *Plan
		o    Options
		want []string
	}{
		{"changelog strategy without the changelogs", planned(3), Options{Strategy: StrategyChangelog}, []string{"the changelog strategy without any of the application's changelogs"}},
		{"rebuild", planned(3), Options{Strategy: StrategyRebuild}, []string{"rebuild: the application reprocesses its input"}},
		{"cut before every record", planned(0), Options{Strategy: StrategyRebuild, ToTime: &at},
			[]string{"--to-time 2026-01-02T03:04:05Z is before every record", "rebuild: "}},
	} {
		t.Run(row.name, func(t *testing.T) {
			ws := strategyWarnings(row.plan, sel, &row.o)
			if len(ws) != len(row.want) {
				t.Fatalf("warnings %q, want %d", ws, len(row.want))
			}
			for i, w := range row.want {
				if !strings.HasPrefix(ws[i], w) {
					t.Errorf("warning %d = %q, want it to start %q", i, ws[i], w)
				}
			}
		})
	}
	withChangelog := planned(3)
	withChangelog.Topics = append(withChangelog.Topics, TopicPlan{Topic: changelog.Name, Class: changelog.Class})
	sel.topics = append(sel.topics, &changelog)
	if ws := strategyWarnings(withChangelog, sel, &Options{Strategy: StrategyChangelog}); len(ws) != 0 {
		t.Errorf("changelog strategy with the changelog restored: warnings %q, want none", ws)
	}
	if !slices.Equal(strategyWarnings(planned(3), sel, &Options{Strategy: StrategyChangelog}), []string{
		"the changelog strategy without any of the application's changelogs: input offsets are restored past records whose state is not; use --strategy rebuild, or include the changelogs"}) {
		t.Error("the changelog strategy's warning changed")
	}
	// A cut the backup could not prove is repeated by the changelog
	// strategy's plan, with the backup's reason; a proven one, and a
	// manifest from before the cut was recorded, are not.
	sel.m.BackupID = "b1"
	for _, row := range []struct {
		name string
		cut  *format.Cut
		o    Options
		want int
	}{
		{"unproven", &format.Cut{Method: format.CutMethodOffsetsEndsOffsets, Attempts: 3, Reason: "the group's committed offsets changed"}, Options{Strategy: StrategyChangelog}, 1},
		{"proven", &format.Cut{Method: format.CutMethodOffsetsEndsOffsets, Proven: true, Attempts: 1}, Options{Strategy: StrategyChangelog}, 0},
		{"not recorded", nil, Options{Strategy: StrategyChangelog}, 0},
		{"no application.id: no offsets to disagree with", &format.Cut{Method: format.CutMethodEnds, Attempts: 1, Reason: "no application.id"}, Options{Strategy: StrategyChangelog}, 0},
		{"rebuild reprocesses from the start", &format.Cut{Reason: "x"}, Options{Strategy: StrategyRebuild}, 1},
	} {
		sel.m.Cut = row.cut
		ws := strategyWarnings(withChangelog, sel, &row.o)
		if len(ws) != row.want {
			t.Errorf("%s: warnings %q, want %d", row.name, ws, row.want)
		}
		if row.want == 1 && row.o.Strategy == StrategyChangelog && !strings.Contains(ws[0], "backup b1's cut is not proven consistent with the application's transactions (the group's committed offsets changed)") {
			t.Errorf("%s: warning %q does not name the backup and the reason", row.name, ws[0])
		}
	}
}
