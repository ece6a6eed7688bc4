package drill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// Environment variables the application command gets (App.Command), on top
// of the drill's own environment.
const (
	// EnvBootstrapServers is the drill target's bootstrap servers,
	// "host:port,host:port" (Kafka's bootstrap.servers).
	EnvBootstrapServers = "KAFKASTREAMS_DR_BOOTSTRAP_SERVERS"
	// EnvApplicationID is the application.id of the drill (its group).
	EnvApplicationID = "KAFKASTREAMS_DR_APPLICATION_ID"
)

// Defaults of App.
const (
	// DefaultAppTimeout bounds the wait from the application's start to
	// caught up: 10 minutes.
	DefaultAppTimeout = 10 * time.Minute
	// DefaultAppStopGrace is how long the drill waits after SIGTERM before
	// it sends SIGKILL: 30 seconds (Kafka Streams' close takes up to its
	// own timeout, and a JVM's shutdown hooks run after SIGTERM).
	DefaultAppStopGrace = 30 * time.Second
	// appPoll is how often the group is read while the drill waits.
	appPoll = 250 * time.Millisecond
	// appExitRead bounds the read of the group after the application
	// exited (appExited).
	appExitRead = 10 * time.Second
	// appTailLines are the lines of the application's output a failed
	// phase quotes.
	appTailLines = 20
	// appOutputDrain bounds the wait for the application's last output
	// after its exit.
	appOutputDrain = 2 * time.Second
)

// App is the application a drill starts on the drill target after the
// restore has been verified, and watches until it has caught up
// (Options.App). Its own local state is its business: a drill proves a
// recovery into a new cluster, so the command must start it with an empty
// state directory (after a changelog restore Kafka Streams would otherwise
// keep state in the old offset numbering; see `state wipe`).
type App struct {
	// Command is a shell command, run as /bin/sh -c Command in a process
	// group of its own, with the drill's environment (less OmitEnv) plus
	// KAFKASTREAMS_DR_BOOTSTRAP_SERVERS and KAFKASTREAMS_DR_APPLICATION_ID
	// (EnvBootstrapServers, EnvApplicationID). Start it with exec (exec
	// java -jar app.jar ...) so that the JVM is the process the drill
	// signals. Required.
	Command string
	// BootstrapServers are the drill target's, given to the command.
	// Required.
	BootstrapServers []string
	// Timeout bounds the wait from the command's start to the application
	// caught up; default DefaultAppTimeout (10m). Reaching it fails the
	// phase the drill was in.
	Timeout time.Duration
	// StopGrace is how long the drill waits for the application to exit
	// after SIGTERM before it kills its process group with SIGKILL;
	// default DefaultAppStopGrace (30s).
	StopGrace time.Duration
	// Output, when set, gets the application's stdout and stderr as they
	// come. They are also logged at debug level, line by line.
	Output io.Writer
	// OmitEnv names variables of the drill's environment the command does
	// not get: the drill's own secrets (the scorecard's signing key,
	// KDR_SIGN_KEY), which the application has no use for and might log.
	OmitEnv []string
}

// AppReport is what the drill saw of the application it started.
type AppReport struct {
	// GroupType is the group's type on the target as ListGroups tells it
	// ("classic", "consumer", "streams"), "" while the group is unknown.
	GroupType string `json:"group_type,omitempty"`
	// GroupState is the group's last state the drill read ("Stable",
	// "PreparingRebalance"; for a streams group "NOT_READY", "ASSIGNING",
	// "RECONCILING", "STABLE").
	GroupState string    `json:"group_state,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	RunningAt  time.Time `json:"running_at,omitzero"`
	CaughtUpAt time.Time `json:"caught_up_at,omitzero"`
	// Members of the group when last read.
	Members int `json:"members"`
	// Partitions are the partitions whose committed offsets the drill
	// compared with their ends, and Lag the records between them when
	// last read (0 once caught up; -1 before the first read).
	Partitions int   `json:"partitions"`
	Lag        int64 `json:"lag"`
	// ReadyAt is when the drill first saw the application's streams group
	// (KIP-1071) out of NotReady, in Assigning, Reconciling or Stable: the
	// broker validated the topics its topology needs. Zero (absent) for a
	// classic group, and when it never left NotReady.
	ReadyAt time.Time `json:"ready_at,omitzero"`
	// NotReady is set when the streams group stayed NotReady until the
	// application's timeout (or its exit): the group and each topic its
	// topology needs that the target lacks or partitions otherwise. The
	// app-running phase then fails.
	NotReady string `json:"not_ready,omitempty"`
	// MissingSourceTopics are the source topics of the group's topology
	// the target lacks, when they are why it stayed NotReady (the broker
	// creates the internal topics only once they exist, KIP-1071).
	MissingSourceTopics []string `json:"missing_source_topics,omitempty"`
	// ExitStatus is set when the application exited by itself ("exit
	// status 3", "signal: killed"): the drill failed.
	ExitStatus string `json:"exit_status,omitempty"`
	// Stopped says how the drill stopped it at the end: "SIGTERM" (it
	// exited within StopGrace) or "SIGKILL" (it had to be killed).
	Stopped string `json:"stopped,omitempty"`
}

// appProcess is the running application command.
type appProcess struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	exitErr error         // valid once exited is closed
	out     *appOutput
	done    sync.WaitGroup // the output copier
}

// omitEnv is env ("NAME=value" entries) without the variables names.
func omitEnv(env, names []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// startApp starts a's command for applicationID.
func startApp(a *App, applicationID string, logger *slog.Logger) (*appProcess, error) {
	cmd := exec.Command("/bin/sh", "-c", a.Command)
	cmd.Env = append(omitEnv(os.Environ(), a.OmitEnv),
		EnvBootstrapServers+"="+strings.Join(a.BootstrapServers, ","),
		EnvApplicationID+"="+applicationID)
	// Its own process group, so that the drill stops the shell and what it
	// started together; Pdeathsig kills it if the drill itself dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start the application: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &appProcess{cmd: cmd, exited: make(chan struct{}), out: &appOutput{}}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start the application command %q: %w", a.Command, err)
	}
	pw.Close()
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.out.add(line)
			logger.Debug("application output", "line", line)
			if a.Output != nil {
				fmt.Fprintln(a.Output, line)
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		// Report the lines written before the exit, but never wait for a
		// pipe that a process outside the group keeps open.
		copied := make(chan struct{})
		go func() { p.done.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(appOutputDrain):
		}
		pr.Close()
		p.exitErr = err
		close(p.exited)
	}()
	return p, nil
}

// exitedEarly is the error of an application that exited before the drill
// was done with it: its exit status and its last lines.
func (p *appProcess) exitedEarly(what string) error {
	status := "exit status 0"
	if p.exitErr != nil {
		status = p.exitErr.Error()
	}
	msg := fmt.Sprintf("the application command exited (%s) before %s", status, what)
	if tail := p.out.tail(appTailLines); tail != "" {
		msg += "; its last lines:\n" + tail
	} else {
		msg += "; it printed nothing"
	}
	return errors.New(msg)
}

// status is "exit status N" or the signal, once exited.
func (p *appProcess) status() string {
	if p.exitErr == nil {
		return "exit status 0"
	}
	return p.exitErr.Error()
}

// stop sends SIGTERM to the application's process group, waits up to grace
// for it to exit, then sends SIGKILL to the group and waits. It returns
// "SIGTERM" or "SIGKILL", and "" when it had exited already.
func (p *appProcess) stop(grace time.Duration) string {
	select {
	case <-p.exited:
		return ""
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		// The shell is gone; what it left in the group goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return "SIGTERM"
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return "SIGKILL"
}

// appOutput keeps the last lines of the application's output.
type appOutput struct {
	mu    sync.Mutex
	lines []string
}

func (o *appOutput) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, line)
	if len(o.lines) > 4*appTailLines {
		o.lines = slices.Clone(o.lines[len(o.lines)-appTailLines:])
	}
}

func (o *appOutput) tail(n int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.lines
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// groupView is one reading of the application's group on the target.
type groupView struct {
	groupType  string
	state      string
	members    int
	running    bool   // Stable, with every partition (task) assigned
	notRunning string // why not, for a timeout's message
	caughtUp   bool   // running, lag zero, (streams) task offsets at their ends
	notCaught  string
	partitions int
	lag        int64
}

// readGroup reads the group groupID on the target: its type (ListGroups),
// its state and assignment (DescribeGroups, or StreamsGroupDescribe for a
// streams group, KIP-1071), and the lag of its committed offsets on every
// partition of topics and of the topics it has committed on, against the
// partitions' last stable offsets (a read_committed consumer's end).
func readGroup(ctx context.Context, cl *kgo.Client, groupID string, topics []string) (groupView, error) {
	adm := kadm.NewClient(cl)
	v := groupView{lag: -1}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return v, fmt.Errorf("list the groups of the drill target: %w", err)
	}
	lg, ok := listed[groupID]
	if !ok {
		v.notRunning, v.notCaught = "the group does not exist yet", "the group does not exist yet"
		return v, nil
	}
	v.groupType = lg.GroupType

	fetched, err := adm.FetchOffsets(ctx, groupID)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return v, fmt.Errorf("read the committed offsets of group %q: %w", groupID, err)
	}
	watch := slices.Clone(topics)
	for t := range fetched {
		if !slices.Contains(watch, t) {
			watch = append(watch, t)
		}
	}
	slices.Sort(watch)
	var ends kadm.ListedOffsets
	if len(watch) > 0 {
		if ends, err = adm.ListCommittedOffsets(ctx, watch...); err == nil {
			err = ends.Error()
		}
		if err != nil {
			return v, fmt.Errorf("read the last stable offsets of %s: %w", strings.Join(watch, ", "), err)
		}
	}

	if strings.EqualFold(lg.GroupType, "streams") {
		err = readStreamsGroup(ctx, cl, adm, groupID, ends, &v)
	} else {
		err = readClassicGroup(ctx, adm, groupID, watch, ends, &v)
	}
	if err != nil {
		return v, err
	}

	var uncommitted []string
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := fetched.Lookup(e.Topic, e.Partition); !ok || o.Err != nil || o.At < 0 {
			uncommitted = append(uncommitted, e.Topic)
		}
	})
	var starts kadm.ListedOffsets
	if len(uncommitted) > 0 {
		slices.Sort(uncommitted)
		if starts, err = adm.ListStartOffsets(ctx, slices.Compact(uncommitted)...); err == nil {
			err = starts.Error()
		}
		if err != nil {
			return v, fmt.Errorf("read the log start offsets of %s: %w", strings.Join(uncommitted, ", "), err)
		}
	}
	v.lag = 0
	var behind []string
	ends.Each(func(e kadm.ListedOffset) {
		v.partitions++
		// A partition never committed is behind by what it holds: Kafka
		// Streams commits only on a partition it has read from.
		from := e.Offset
		if o, ok := fetched.Lookup(e.Topic, e.Partition); ok && o.Err == nil && o.At >= 0 {
			from = o.At
		} else if so, ok := starts.Lookup(e.Topic, e.Partition); ok {
			from = so.Offset
		}
		if lag := e.Offset - from; lag > 0 {
			v.lag += lag
			behind = append(behind, fmt.Sprintf("%s/%d %d behind", e.Topic, e.Partition, lag))
		}
	})
	switch {
	case !v.running:
		v.notCaught = "not running: " + v.notRunning
	case v.partitions == 0:
		// Nothing to compare: lag zero would be no evidence.
		v.notCaught = "the group has no committed offsets, and the restore committed none"
	case v.lag > 0:
		slices.Sort(behind)
		v.notCaught = fmt.Sprintf("lag %d (%s)", v.lag, firstFew(behind, 3))
	}
	v.caughtUp = v.running && v.notCaught == ""
	return v, nil
}

// readClassicGroup fills v from DescribeGroups: running is state Stable
// with members and every partition of watch assigned to one of them (Kafka
// Streams' classic protocol is the consumer protocol; its assignment names
// the source and repartition partitions of each member's tasks).
func readClassicGroup(ctx context.Context, adm *kadm.Client, groupID string, watch []string, ends kadm.ListedOffsets, v *groupView) error {
	described, err := adm.DescribeGroups(ctx, groupID)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		return fmt.Errorf("describe group %q: %w", groupID, err)
	}
	g := described[groupID]
	v.state, v.members = g.State, len(g.Members)
	if g.State != "Stable" || len(g.Members) == 0 {
		v.notRunning = fmt.Sprintf("group %s with %s", orState(g.State), plural(int64(len(g.Members)), "member", "members"))
		return nil
	}
	assigned := map[string]map[int32]bool{}
	for _, m := range g.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range ca.Topics {
			if assigned[t.Topic] == nil {
				assigned[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				assigned[t.Topic][p] = true
			}
		}
	}
	var missing []string
	ends.Each(func(e kadm.ListedOffset) {
		if !slices.Contains(watch, e.Topic) || assigned[e.Topic][e.Partition] {
			return
		}
		missing = append(missing, fmt.Sprintf("%s/%d", e.Topic, e.Partition))
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		v.notRunning = fmt.Sprintf("group Stable, %s not assigned to any member", firstFew(missing, 3))
		return nil
	}
	v.running = true
	return nil
}

// readStreamsGroup fills v from StreamsGroupDescribe (KIP-1071), sent to
// the group's coordinator: running is state STABLE with every active task
// of every subtopology (one per partition of its source topics) assigned;
// and while a member reports task end offsets (the changelog ends of its
// tasks) above its task offsets, its stores are still restoring and the
// application has not caught up. Members report them periodically (at the
// task offset interval the coordinator gives them in its heartbeat
// response), so the drill can see a restore's end late by up to that
// interval.
func readStreamsGroup(ctx context.Context, cl *kgo.Client, adm *kadm.Client, groupID string, ends kadm.ListedOffsets, v *groupView) error {
	coords := adm.FindGroupCoordinators(ctx, groupID)
	c, ok := coords[groupID]
	if !ok || c.Err != nil {
		err := errors.New("no coordinator")
		if ok {
			err = c.Err
		}
		return fmt.Errorf("find the coordinator of group %q: %w", groupID, err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl.Broker(int(c.NodeID)))
	if err != nil {
		return fmt.Errorf("describe streams group %q: %w", groupID, err)
	}
	if len(resp.Groups) != 1 {
		return fmt.Errorf("describe streams group %q: %d groups in the response", groupID, len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return fmt.Errorf("describe streams group %q: error code %d", groupID, g.ErrorCode)
	}
	if !strings.EqualFold(g.State, "stable") || len(g.Members) == 0 || g.Topology == nil {
		streamsView(g, nil, v)
		return nil
	}
	partitions := map[string]int32{} // topic -> partitions, from the ends read
	ends.Each(func(e kadm.ListedOffset) { partitions[e.Topic] = max(partitions[e.Topic], e.Partition+1) })
	var unknown []string
	for _, st := range g.Topology.Subtopologies {
		for _, t := range st.SourceTopics {
			if _, ok := partitions[t]; !ok {
				unknown = append(unknown, t)
			}
		}
	}
	if len(unknown) > 0 {
		td, err := adm.ListTopics(ctx, unknown...)
		if err != nil {
			return fmt.Errorf("read the partitions of %s: %w", strings.Join(unknown, ", "), err)
		}
		for _, t := range td {
			partitions[t.Topic] = int32(len(t.Partitions))
		}
	}
	streamsView(g, partitions, v)
	return nil
}

// streamsView fills v from a StreamsGroupDescribe group (KIP-1071), given
// the partitions of its source topics: running, and caught up as far as
// the members' task offsets tell (readStreamsGroup).
func streamsView(g kmsg.StreamsGroupDescribeResponseGroup, partitions map[string]int32, v *groupView) {
	v.state, v.members = g.State, len(g.Members)
	if !strings.EqualFold(g.State, "stable") || len(g.Members) == 0 || g.Topology == nil {
		v.notRunning = fmt.Sprintf("streams group %s with %s", orState(g.State), plural(int64(len(g.Members)), "member", "members"))
		return
	}
	assigned := map[string]map[int32]bool{}
	for _, m := range g.Members {
		for _, t := range m.Assignment.ActiveTasks {
			if assigned[t.SubtopologyID] == nil {
				assigned[t.SubtopologyID] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				assigned[t.SubtopologyID][p] = true
			}
		}
	}
	var missing []string
	for _, st := range g.Topology.Subtopologies {
		var n int32
		for _, t := range st.SourceTopics {
			n = max(n, partitions[t])
		}
		for _, t := range st.RepartitionSourceTopics {
			n = max(n, t.NumPartitions)
		}
		for p := range n {
			if !assigned[st.SubtopologyID][p] {
				missing = append(missing, fmt.Sprintf("%s_%d", st.SubtopologyID, p))
			}
		}
	}
	if len(missing) > 0 {
		v.notRunning = fmt.Sprintf("streams group STABLE, active tasks %s not assigned", firstFew(missing, 3))
		return
	}
	v.running = true
	// A task's offsets are sums over its changelog partitions; each of
	// them may end with a transaction marker (EOS) that no restored
	// position passes, so a task is restoring only when it is more than
	// one offset per changelog topic of its subtopology behind.
	changelogs := map[string]int64{}
	for _, st := range g.Topology.Subtopologies {
		changelogs[st.SubtopologyID] = int64(len(st.StateChangelogTopics))
	}
	var restoring []string
	for _, m := range g.Members {
		at := map[string]int64{}
		for _, o := range m.TaskOffsets {
			at[fmt.Sprintf("%s_%d", o.SubtopologyID, o.Partition)] = o.Offset
		}
		for _, e := range m.TaskEndOffsets {
			task := fmt.Sprintf("%s_%d", e.SubtopologyID, e.Partition)
			if got, ok := at[task]; ok && e.Offset-got > changelogs[e.SubtopologyID] {
				restoring = append(restoring, fmt.Sprintf("task %s at %d of %d", task, got, e.Offset))
			}
		}
	}
	if len(restoring) > 0 {
		slices.Sort(restoring)
		v.notCaught = "stores restoring: " + firstFew(restoring, 3)
	}
}

func orState(s string) string {
	if s == "" {
		return "in no state"
	}
	return s
}

// firstFew joins the first n items and says how many more there are.
func firstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// watchTopics are the topics whose committed offsets say whether the
// application caught up: the topics of the group's offsets in the backup
// that the restore committed (its input topics), as the restore report
// names them. The topics the application commits on after its start (its
// repartition topics) are added by readGroup.
func watchTopics(offsets []Offset) []string {
	var topics []string
	for _, o := range offsets {
		if o.Action == format.OffsetCommit && !slices.Contains(topics, o.Topic) {
			topics = append(topics, o.Topic)
		}
	}
	slices.Sort(topics)
	return topics
}

// appRunning is the app-running phase: it starts the application and
// waits until its group is running on the target.
func (d *drill) appRunning(ctx context.Context, p *Phase) error {
	a := d.o.App
	groupID := d.groupID()
	proc, err := startApp(a, groupID, d.o.Logger)
	if err != nil {
		return err
	}
	d.app = proc
	d.rep.App = &AppReport{StartedAt: time.Now(), Lag: -1}
	d.appDeadline = d.rep.App.StartedAt.Add(a.Timeout)
	cl, err := kgo.NewClient(d.o.Restore.Target...)
	if err != nil {
		return err
	}
	d.appClient = cl
	v, err := d.waitApp(ctx, "running", func(v groupView) bool { return v.running })
	if err != nil {
		return err
	}
	d.rep.App.RunningAt = time.Now()
	p.Detail = fmt.Sprintf("group %s (%s) %s with %s, every partition assigned, %s after the command started",
		groupID, orNone(v.groupType), v.state, plural(int64(v.members), "member", "members"),
		d.rep.App.RunningAt.Sub(d.rep.App.StartedAt).Round(time.Millisecond))
	return nil
}

// appCaughtUp is the app-caught-up phase: it waits until the group's
// committed offsets are at the partitions' ends.
func (d *drill) appCaughtUp(ctx context.Context, p *Phase) error {
	v, err := d.waitApp(ctx, "caught up", func(v groupView) bool { return v.caughtUp })
	if err != nil {
		return err
	}
	d.rep.App.CaughtUpAt = time.Now()
	p.Detail = fmt.Sprintf("lag 0 on %s of group %s, %s after the command started",
		plural(int64(v.partitions), "partition", "partitions"), d.groupID(), d.rep.App.CaughtUpAt.Sub(d.rep.App.StartedAt).Round(time.Millisecond))
	return nil
}

// waitApp reads the group every appPoll until done(view), the application
// exits, the timeout of App passes, or ctx ends.
func (d *drill) waitApp(ctx context.Context, what string, done func(groupView) bool) (groupView, error) {
	topics := watchTopics(d.rep.Offsets)
	tick := time.NewTicker(appPoll)
	defer tick.Stop()
	var last groupView
	var lastErr error
	for {
		rctx, cancel := context.WithDeadline(ctx, d.appDeadline)
		v, err := readGroup(rctx, d.appClient, d.groupID(), topics)
		cancel()
		if err == nil {
			last, lastErr = v, nil
			d.noteGroup(v)
			if done(v) {
				return v, nil
			}
		} else if ctx.Err() == nil && time.Now().Before(d.appDeadline) {
			lastErr = err // asked again at the next tick
		}
		select {
		case <-d.app.exited:
			return d.appExited(ctx, what, last, topics)
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
		if !time.Now().Before(d.appDeadline) {
			if d.stuckNotReady(last) {
				d.rep.App.NotReady = d.notReadyReason(ctx, d.o.App.Timeout)
				return last, fmt.Errorf("the application was not %s within %s of its start: %s", what, d.o.App.Timeout, d.rep.App.NotReady)
			}
			why := last.notRunning
			if what != "running" {
				why = last.notCaught
			}
			if lastErr != nil {
				why = lastErr.Error()
			}
			return last, fmt.Errorf("the application was not %s within %s of its start (%s); raise the timeout (--app-timeout, drill.app.timeout) if it needs longer",
				what, d.o.App.Timeout, orNone(why))
		}
	}
}

// noteGroup records the group as last read (v) in the app report, and
// when a streams group with members first left NotReady (ReadyAt).
func (d *drill) noteGroup(v groupView) {
	ar := d.rep.App
	ar.GroupType, ar.GroupState, ar.Members, ar.Partitions, ar.Lag = v.groupType, v.state, v.members, v.partitions, v.lag
	if ar.ReadyAt.IsZero() && strings.EqualFold(v.groupType, format.GroupTypeStreams) && v.members > 0 && leftNotReady(v.state) {
		ar.ReadyAt = time.Now()
	}
}

// appExited is the error of an application that exited while the drill
// waited for it to be what; last is the group as the drill last read it.
// The group is read once more (bounded by appExitRead) before deciding:
// an application that joined its streams group and exited on the
// broker's status (a group stuck NotReady) between two reads left a last
// read showing the classic group of the restore's offset commit. A
// streams group stuck NotReady is named with why (notReadyReason); a
// failed read keeps last.
func (d *drill) appExited(ctx context.Context, what string, last groupView, topics []string) (groupView, error) {
	d.rep.App.ExitStatus = d.app.status()
	rctx, cancel := context.WithTimeout(ctx, appExitRead)
	v, err := readGroup(rctx, d.appClient, d.groupID(), topics)
	cancel()
	if err == nil {
		last = v
		d.noteGroup(v)
	}
	if d.stuckNotReady(last) {
		d.rep.App.NotReady = d.notReadyReason(ctx, time.Since(d.rep.App.StartedAt))
		return last, fmt.Errorf("%s; %w", d.rep.App.NotReady, d.app.exitedEarly(what))
	}
	return last, d.app.exitedEarly(what)
}

// stuckNotReady reports whether the application's group, last read as
// v, is a streams group with members that never left NotReady.
func (d *drill) stuckNotReady(v groupView) bool {
	return strings.EqualFold(v.groupType, format.GroupTypeStreams) && d.rep.App.ReadyAt.IsZero() && isNotReady(v.state)
}

// stopApp stops the application the drill started, if it did.
func (d *drill) stopApp() {
	if d.appClient != nil {
		d.appClient.Close()
	}
	if d.app == nil {
		return
	}
	how := d.app.stop(d.o.App.StopGrace)
	if how != "" {
		d.rep.App.Stopped = how
	} else if d.rep.App.ExitStatus == "" {
		d.rep.App.ExitStatus = d.app.status()
	}
	d.o.Logger.Info("application stopped", "how", orNone(how), "status", d.app.status())
}

// groupID is the application's group: the one the restore committed, or
// the application.id.
func (d *drill) groupID() string {
	if d.rep.GroupID != "" {
		return d.rep.GroupID
	}
	return d.rep.ApplicationID
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
