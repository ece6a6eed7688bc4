package drill

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestAppRunningFailsOnAStreamsGroupStuckNotReady: on real Kafka 4.4 a
// streams group member (a StreamsGroupHeartbeat sent here, for an
// application command that only sleeps) whose topology needs a changelog
// of 2 partitions, while the target's has 1, keeps the group NotReady;
// the app-running phase waits for it until the app timeout and fails
// naming the group and the changelog, with AppReport.NotReady set and no
// ReadyAt.
func TestAppRunningFailsOnAStreamsGroupStuckNotReady(t *testing.T) {
	const (
		group     = "stuck-app"
		input     = "stuck-input"
		changelog = group + "-store-changelog"
	)
	k := testkit.StartKafka(t)
	joinStuckStreamsGroup(t, k, group, input, changelog)

	d := &drill{o: Options{App: &App{Command: "exec sleep 60", BootstrapServers: k.Addrs(), Timeout: 8 * time.Second, StopGrace: time.Second},
		Restore: restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}}, Logger: slog.New(slog.DiscardHandler)},
		rep: &Report{ApplicationID: group}}
	defer d.stopApp()
	err := d.appRunning(t.Context(), &Phase{})
	if err == nil {
		t.Fatal("app-running passed with the streams group NotReady")
	}
	want := []string{`streams group "stuck-app" stayed NotReady`, `changelog "stuck-app-store-changelog" has 1 partition, sub-topology 0 has 2 tasks (the partitions of "stuck-input")`}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) || !strings.Contains(d.rep.App.NotReady, w) {
			t.Errorf("error %q / not_ready %q: want both to say %q", err, d.rep.App.NotReady, w)
		}
	}
	if !d.rep.App.ReadyAt.IsZero() {
		t.Errorf("ready_at %v for a group that never left NotReady", d.rep.App.ReadyAt)
	}
}

// joinStuckStreamsGroup creates topics input (2 partitions) and
// changelog (1; the topology needs 2) on k and joins a streams group
// member of group (a StreamsGroupHeartbeat) whose topology reads input
// into a store of that changelog: the group stays NotReady.
func joinStuckStreamsGroup(t *testing.T, k *testkit.Kafka, group, input, changelog string) {
	t.Helper()
	adm := testkit.Admin(t, k.Addrs())
	for topic, parts := range map[string]int32{input: 2, changelog: 1} {
		if resp, err := adm.CreateTopic(t.Context(), parts, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	cl := testkit.Client(t, k.Addrs())
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, group+"-member-0000000001", 0, 30000
	req.ProcessID = kmsg.StringPtr(group + "-process")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	st.SubtopologyID, st.SourceTopics = "0", []string{input}
	st.StateChangelogTopics = []kmsg.TopicInfo{{Topic: changelog}}
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}}
	// kgo does not route StreamsGroupHeartbeat: sent to the coordinator.
	// COORDINATOR_NOT_AVAILABLE while a new cluster makes __consumer_offsets.
	var coord kadm.FindCoordinatorResponse
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var ok bool
		if coord, ok = adm.FindGroupCoordinators(t.Context(), group)[group]; ok && coord.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("find the coordinator of %s: %+v", group, coord)
		}
	}
	resp, err := req.RequestWith(t.Context(), cl.Broker(int(coord.NodeID)))
	if err == nil && resp.ErrorCode != 0 {
		err = fmt.Errorf("error code %d: %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	if err != nil {
		t.Fatalf("join the streams group: %v", err)
	}
}

// TestAppExitedNamesTheStreamsGroupStuckNotReady is a regression test: an
// application that exits between two reads of its group, whose last read
// still showed the classic group the restore left, was reported as only
// "exited before running", though its streams group (joined after that
// read, as the drill app joins and exits on the broker's status) stayed
// NotReady. On real Kafka 4.4, with the group now a streams group stuck
// NotReady (joinStuckStreamsGroup) and an application that exited, the
// decision reads the group again and names it, its changelog and why.
func TestAppExitedNamesTheStreamsGroupStuckNotReady(t *testing.T) {
	t.Parallel()
	const (
		group     = "exited-app"
		input     = "exited-input"
		changelog = group + "-store-changelog"
	)
	k := testkit.StartKafka(t)
	joinStuckStreamsGroup(t, k, group, input, changelog)
	d := &drill{o: Options{App: &App{Command: "exit 3", BootstrapServers: k.Addrs(), Timeout: time.Minute, StopGrace: time.Second},
		Restore: restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}}, Logger: slog.New(slog.DiscardHandler)},
		rep: &Report{ApplicationID: group}}
	proc, err := startApp(d.o.App, group, d.o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	d.app = proc
	defer d.stopApp()
	d.rep.App = &AppReport{StartedAt: time.Now(), Lag: -1}
	d.appDeadline = d.rep.App.StartedAt.Add(d.o.App.Timeout)
	if d.appClient, err = kgo.NewClient(d.o.Restore.Target...); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the application command exit 3 did not exit within 30s")
	}
	// The drill's last read: the classic group the restore's offset commit left.
	last := groupView{groupType: "classic", state: "Empty", lag: -1, notRunning: "no members"}
	_, err = d.appExited(t.Context(), "running", last, []string{input})
	want := []string{`streams group "exited-app" stayed NotReady`, `changelog "exited-app-store-changelog" has 1 partition, sub-topology 0 has 2 tasks (the partitions of "exited-input")`, "exit status 3"}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v: want it to say %q", err, w)
		}
	}
	if !strings.Contains(d.rep.App.NotReady, want[1]) || !strings.EqualFold(d.rep.App.GroupType, "streams") || !strings.EqualFold(d.rep.App.GroupState, "NotReady") {
		t.Errorf("app report group %s %s, not_ready %q: want the streams group NotReady, naming %s", d.rep.App.GroupType, d.rep.App.GroupState, d.rep.App.NotReady, changelog)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
