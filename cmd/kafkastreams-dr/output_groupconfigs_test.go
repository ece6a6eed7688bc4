package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestTextOutputsNameTheGroupConfigs is a regression test (second
// new-user pass): describe's text did not show the backup's group
// configs (its --json and the manifest do), and a real restore's text
// report did not say which group configs it set (the dry run and
// report.json do), nor which --skip-group-configs left unset.
func TestTextOutputsNameTheGroupConfigs(t *testing.T) {
	one := "1"
	m := &format.Manifest{BackupID: "20261201T000000.000Z-00000001", Group: &format.Group{GroupID: "app", State: "Empty", Type: format.GroupTypeStreams, ReadAt: time.Now(),
		Configs: map[string]format.TopicConfig{
			"streams.num.standby.replicas": {Value: &one, Source: format.ConfigSourceDynamicGroup},
			"streams.secret":               {Value: nil, Sensitive: true, Source: format.ConfigSourceDynamicGroup},
		}}}
	var b bytes.Buffer
	printGroupOffsets(&b, m)
	for _, want := range []string{"configs", "streams.num.standby.replicas=1", "streams.secret=(sensitive)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe's group text does not say %q:\n%s", want, b.String())
		}
	}

	for _, tc := range []struct {
		name string
		g    format.GroupPlan
		want string
	}{
		{"configs set", format.GroupPlan{GroupID: "app", Configs: map[string]string{"streams.num.standby.replicas": "1"}}, "group configs set on the target: streams.num.standby.replicas=1"},
		// Second new-user pass: a config the target's group held was
		// overwritten without its old value shown.
		{"configs overwritten", format.GroupPlan{GroupID: "app", Configs: map[string]string{"streams.num.standby.replicas": "1"},
			TargetConfigs: map[string]string{"streams.num.standby.replicas": "2", "streams.heartbeat.interval.ms": "7000"}}, "streams.num.standby.replicas=1 (overwrites 2 with 1)"},
		{"configs skipped", format.GroupPlan{GroupID: "app", SkippedConfigs: []string{"streams.num.standby.replicas"}}, "group configs NOT set (--skip-group-configs): streams.num.standby.replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &restorer.Report{Plan: format.Plan{BackupID: m.BackupID, ApplicationID: "app", Group: &tc.g}, Committed: true}
			var b bytes.Buffer
			printReport(&b, rep, "target")
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("restore's text report does not say %q:\n%s", tc.want, b.String())
			}
		})
	}
}
