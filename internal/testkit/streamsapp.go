package testkit

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The drill Kafka Streams application's topics (e2e/streams-app, see
// DrillTopology.java there). All keys and values are strings.
const (
	// StreamsAppEventsTopic is the input: user id -> "<category>:<amount>".
	StreamsAppEventsTopic = "drill-events"
	// StreamsAppCategoriesTopic is the input table: category -> label.
	StreamsAppCategoriesTopic = "drill-categories"
	// StreamsAppCountsTopic is an output: category -> number of events of
	// that category, decimal; the latest value per key is the count.
	StreamsAppCountsTopic = "drill-counts"
	// StreamsAppWindowCountsTopic is an output: "<category>@<window start>"
	// -> number of events in that 1-minute tumbling window (on record
	// timestamps); the window start is UTC, formatted like
	// "2025-01-02T03:04:00Z" (Java's Instant.toString).
	StreamsAppWindowCountsTopic = "drill-window-counts"
	// StreamsAppLabeledTopic is an output, a foreign-key join: user id ->
	// "<label>:<amount>" of the user's latest event, the label being its
	// category's in StreamsAppCategoriesTopic.
	StreamsAppLabeledTopic = "drill-labeled"
	// StreamsAppDefaultID is the application.id StartStreamsApp uses unless
	// told otherwise.
	StreamsAppDefaultID = "drill-app"
)

// StreamsAppSlowDownstreamMs is the drill app's own property (for
// StreamsAppProperty) that slows its downstream sub-topology: the count per
// category behind the by-category repartition topic sleeps that many
// milliseconds per record it reads, default 0. The repartition topic's lag
// (records committed upstream, not yet counted) is then large at any moment;
// the topology and the outputs are the same.
const StreamsAppSlowDownstreamMs = "drill.slow.downstream.ms"

// StreamsAppTopics are the drill app's input and output topics, which the
// app does not create itself (its internal topics it does create).
var StreamsAppTopics = []string{
	StreamsAppEventsTopic, StreamsAppCategoriesTopic,
	StreamsAppCountsTopic, StreamsAppWindowCountsTopic, StreamsAppLabeledTopic,
}

const (
	// streamsAppJarEnv overrides the path of the drill app's jar.
	streamsAppJarEnv  = "KDR_STREAMS_APP_JAR"
	streamsAppHint    = "run `make tools` to build e2e/streams-app with Maven, or set " + streamsAppJarEnv + " to its jar"
	streamsAppLogTail = 60 // lines of the app's output a failed test prints
	// streamsAppStopWait is how long Stop waits for a clean exit after
	// SIGTERM; the app itself gives KafkaStreams#close 15 s.
	streamsAppStopWait = 30 * time.Second
	// streamsAppCleanupWait is how long t.Cleanup waits after SIGTERM
	// before SIGKILL.
	streamsAppCleanupWait = 20 * time.Second
)

// StreamsApp is the drill Kafka Streams application (e2e/streams-app) running
// in its own JVM, started by StartStreamsApp. Its methods are safe for
// concurrent use.
type StreamsApp struct {
	appID    string
	stateDir string
	cmd      *exec.Cmd
	out      *streamsAppOutput
	exited   chan struct{} // closed when cmd has been waited for
	exitErr  error         // valid once exited is closed
}

// StreamsAppOpt configures StartStreamsApp and StreamsAppTopology.
type StreamsAppOpt func(*streamsAppConfig)

type streamsAppConfig struct {
	appID        string
	stateDir     string
	props        []string // KEY=VALUE for --prop
	startTimeout time.Duration
}

// StreamsAppID sets application.id, default StreamsAppDefaultID ("drill-app").
// It names the consumer group and prefixes the internal topics.
func StreamsAppID(id string) StreamsAppOpt {
	return func(c *streamsAppConfig) { c.appID = id }
}

// StreamsAppStateDir sets state.dir, default a new t.TempDir(). Pass the
// StateDir of a stopped app to start a new one on the same local state.
func StreamsAppStateDir(dir string) StreamsAppOpt {
	return func(c *streamsAppConfig) { c.stateDir = dir }
}

// StreamsAppProperty sets any Kafka Streams setting (the app's --prop
// KEY=VALUE), over the app's defaults: processing.guarantee=exactly_once_v2,
// commit.interval.ms=200, consumer session.timeout.ms=10000. For example
// StreamsAppProperty("topology.optimization", "all"),
// StreamsAppProperty("num.standby.replicas", "1") or
// StreamsAppProperty("group.protocol", "streams") (a streams group, KIP-1071;
// the testkit's Kafka 4.4 broker serves it with its default
// group.coordinator.rebalance.protocols).
func StreamsAppProperty(key, value string) StreamsAppOpt {
	return func(c *streamsAppConfig) { c.props = append(c.props, key+"="+value) }
}

// StreamsAppStartTimeout sets how long StartStreamsApp waits for the app to
// reach RUNNING, default 2 minutes (a few seconds when the state is empty;
// restoring a large changelog takes longer).
func StreamsAppStartTimeout(d time.Duration) StreamsAppOpt {
	return func(c *streamsAppConfig) { c.startTimeout = d }
}

// StartStreamsApp starts the drill Kafka Streams application against the
// broker(s) at bootstrap and returns once it prints "STATE RUNNING" (it
// prints "STATE <new> (was <old>)" on stdout at each state change). It runs
// java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar drill-app.jar
// with --bootstrap-servers, --application-id and --state-dir.
//
// The input and output topics must exist first (CreateStreamsAppTopics):
// Kafka Streams creates only its internal topics. The app fails the test if
// it exits, or is not RUNNING within the start timeout.
//
// The jar is $KDR_STREAMS_APP_JAR, else
// $HOME/.cache/kdr-tools/streams-app/drill-app.jar (`make tools`); java is
// found as for StartKafka. When either is missing the test is skipped, or
// fails if KDR_REQUIRE_TOOLS=1.
//
// t.Cleanup stops the app if it still runs (SIGTERM, then SIGKILL after
// 20 s) and, if the test failed, logs the tail of its output.
func StartStreamsApp(t testing.TB, bootstrap string, opts ...StreamsAppOpt) *StreamsApp {
	t.Helper()
	cfg := streamsAppConfig{appID: StreamsAppDefaultID, startTimeout: 2 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.stateDir == "" {
		cfg.stateDir = t.TempDir()
	}
	begin := time.Now()

	a := &StreamsApp{
		appID:    cfg.appID,
		stateDir: cfg.stateDir,
		out:      &streamsAppOutput{running: make(chan struct{})},
		exited:   make(chan struct{}),
	}
	a.cmd = streamsAppCmd(context.Background(), t, cfg, "--bootstrap-servers", bootstrap,
		"--application-id", cfg.appID, "--state-dir", cfg.stateDir)
	a.cmd.Stdout = streamsAppStdout{a.out}
	a.cmd.Stderr = streamsAppStderr{a.out}
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start streams app: %s: %v", a.cmd, err)
	}
	go func() {
		a.exitErr = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		a.stop(streamsAppCleanupWait)
		if t.Failed() {
			t.Logf("streams app %s output (last %d lines):\n%s", a.appID, streamsAppLogTail, a.out.tail(streamsAppLogTail))
		}
	})

	select {
	case <-a.out.running:
	case <-a.exited:
		t.Fatalf("streams app %s exited before it was RUNNING: %v; output:\n%s", a.appID, a.exitErr, a.out.tail(streamsAppLogTail))
	case <-time.After(cfg.startTimeout):
		t.Fatalf("streams app %s not RUNNING after %v (last state %q); output:\n%s",
			a.appID, cfg.startTimeout, a.out.lastState(), a.out.tail(streamsAppLogTail))
	}
	t.Logf("streams app %s RUNNING on %s after %v (state dir %s)", a.appID, bootstrap, time.Since(begin).Round(time.Millisecond), a.stateDir)
	return a
}

// StreamsAppTopology returns the drill app's Topology#describe() output (its
// --describe flag; no broker needed). Only StreamsAppProperty options
// matter, e.g. topology.optimization. e2e/streams-app/topology.txt holds the
// default one.
func StreamsAppTopology(t testing.TB, opts ...StreamsAppOpt) string {
	t.Helper()
	cfg := streamsAppConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := streamsAppCmd(ctx, t, cfg, "--describe")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("streams app --describe: %v; stderr:\n%s", err, stderr.String())
	}
	return stdout.String()
}

// CreateStreamsAppTopics creates the drill app's input and output topics
// (StreamsAppTopics) with the given number of partitions each, replication
// factor 1, on the cluster at bootstrap ("host:port,...").
func CreateStreamsAppTopics(t testing.TB, bootstrap string, partitions int32) {
	t.Helper()
	adm := Admin(t, strings.Split(bootstrap, ","))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resps, err := adm.CreateTopics(ctx, partitions, 1, nil, StreamsAppTopics...)
	if err != nil {
		t.Fatalf("create the streams app topics: %v", err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			t.Fatalf("create topic %q: %v", r.Topic, r.Err)
		}
	}
}

// ApplicationID returns the app's application.id.
func (a *StreamsApp) ApplicationID() string { return a.appID }

// StateDir returns the app's state.dir; each task's state is in
// StateDir()/ApplicationID()/<taskId>/. Kafka 4.4's RocksDB stores keep their
// changelog offsets inside the store (KIP-1035), so a task directory has a
// .checkpoint file only after a clean Stop of an app started with
// StreamsAppProperty("upgrade.from", "4.2") or older (a checkpoint for a
// downgrade).
func (a *StreamsApp) StateDir() string { return a.stateDir }

// Output returns what the app printed so far, stdout and stderr interleaved:
// its STATE lines, "CLOSED" after a clean close, and Kafka's warnings.
func (a *StreamsApp) Output() string { return a.out.String() }

// Stop shuts the app down cleanly and waits for the JVM to exit: SIGTERM
// runs KafkaStreams#close (tasks commit and record their changelog offsets,
// the member leaves its group, which is then empty). It fails the test if the app does not exit
// within 30 s (it is then killed) or did not print "CLOSED". Stopping a
// stopped app does nothing.
func (a *StreamsApp) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-a.exited:
		return
	default:
	}
	begin := time.Now()
	if !a.stop(streamsAppStopWait) {
		t.Fatalf("streams app %s did not exit within %v of SIGTERM (killed); output:\n%s", a.appID, streamsAppStopWait, a.out.tail(streamsAppLogTail))
	}
	if !a.out.closed() {
		t.Fatalf("streams app %s exited (%v) without closing cleanly; output:\n%s", a.appID, a.exitErr, a.out.tail(streamsAppLogTail))
	}
	t.Logf("streams app %s stopped cleanly in %v", a.appID, time.Since(begin).Round(time.Millisecond))
}

// Kill kills the app's JVM with SIGKILL, as a crash would, and waits for it:
// no close, the member stays in its group until its session times out
// (10 s, the app's consumer session.timeout.ms; in a streams group,
// group.protocol=streams, the broker's group.streams.session.timeout.ms,
// 45 s by default), an open transaction is left to time out.
func (a *StreamsApp) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-a.exited:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.exited
}

// Pause stops the app's JVM with SIGSTOP (its process group): it sends,
// commits and heartbeats nothing until Resume, so what the brokers show of
// it (an open transaction, say) holds still. Pausing an exited app does
// nothing.
func (a *StreamsApp) Pause(t testing.TB) {
	t.Helper()
	a.signalGroup(syscall.SIGSTOP)
}

// Resume continues a paused app (SIGCONT).
func (a *StreamsApp) Resume(t testing.TB) {
	t.Helper()
	a.signalGroup(syscall.SIGCONT)
}

func (a *StreamsApp) signalGroup(sig syscall.Signal) {
	select {
	case <-a.exited:
	default:
		_ = syscall.Kill(-a.cmd.Process.Pid, sig)
	}
}

// stop sends SIGTERM, waits up to wait for the exit, then sends SIGKILL. It
// reports whether the app exited before the SIGKILL.
func (a *StreamsApp) stop(wait time.Duration) bool {
	select {
	case <-a.exited:
		return true
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
		return true
	case <-time.After(wait):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
		return false
	}
}

// streamsAppCmd returns the java command running the drill app's jar with
// cfg's --prop flags and args.
func streamsAppCmd(ctx context.Context, t testing.TB, cfg streamsAppConfig, args ...string) *exec.Cmd {
	t.Helper()
	jar := requireTool(t, "drill-app.jar", streamsAppJarEnv, filepath.Join(toolsDir(), "streams-app", "drill-app.jar"), streamsAppHint)
	java := javaPath(t)
	jargs := []string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-jar", jar,
	}
	jargs = append(jargs, args...)
	for _, p := range cfg.props {
		jargs = append(jargs, "--prop", p)
	}
	cmd := exec.CommandContext(ctx, java, jargs...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// streamsAppOutput collects the app's stdout and stderr, and watches stdout
// for its "STATE ..." and "CLOSED" lines.
type streamsAppOutput struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	partial    []byte // stdout after its last newline
	state      string // the last state printed
	sawClosed  bool
	running    chan struct{} // closed at the first "STATE RUNNING"
	sawRunning bool
}

type (
	streamsAppStdout struct{ o *streamsAppOutput }
	streamsAppStderr struct{ o *streamsAppOutput }
)

func (w streamsAppStderr) Write(p []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.o.buf.Write(p)
}

func (w streamsAppStdout) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		line := string(o.partial[:i])
		o.partial = o.partial[i+1:]
		switch {
		case strings.HasPrefix(line, "STATE "):
			o.state, _, _ = strings.Cut(strings.TrimPrefix(line, "STATE "), " ")
			if o.state == "RUNNING" && !o.sawRunning {
				o.sawRunning = true
				close(o.running)
			}
		case line == "CLOSED":
			o.sawClosed = true
		}
	}
	return len(p), nil
}

func (o *streamsAppOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *streamsAppOutput) lastState() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state
}

func (o *streamsAppOutput) closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sawClosed
}

// tail returns the last n lines of the output.
func (o *streamsAppOutput) tail(n int) string {
	lines := strings.Split(strings.TrimRight(o.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
