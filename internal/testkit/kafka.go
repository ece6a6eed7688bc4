package testkit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaVersion is the Apache Kafka release StartKafka runs. It must match
// <kafka.version> in e2e/kafka/pom.xml (a test checks), which the Makefile
// reads to fetch the jars into $HOME/.cache/kdr-tools/kafka-<version>/libs.
const KafkaVersion = "4.4.0"

const (
	// kafkaLibsEnv overrides the directory holding Kafka's jars.
	kafkaLibsEnv = "KDR_KAFKA_LIBS"
	// kafkaHint tells a developer how to get the jars.
	kafkaHint = "run `make tools` to fetch the Kafka " + KafkaVersion +
		" jars with Maven (e2e/kafka/pom.xml), or set " + kafkaLibsEnv + " to a directory of Kafka jars"
	// kafkaHeap is the JVM's -Xmx for the broker and for RunTool.
	kafkaHeap = "-Xmx512m"
	// kafkaLogTailLines is how much of the broker log a failed test prints.
	kafkaLogTailLines = 80
)

// Kafka is a real single-node Apache Kafka (KRaft, broker and controller in
// one JVM) started by StartKafka for one test. Its methods are safe for
// concurrent use.
type Kafka struct {
	libDir    string
	java      string
	dir       string // temp dir: server.properties, log4j configs, data/, kafka.log
	bootstrap string
	clusterID string
	cmd       *exec.Cmd
	exited    chan struct{}  // closed when cmd has been waited for
	exitErr   error          // valid once exited is closed
	security  *KafkaSecurity // KafkaSecure's listeners and files, or nil
}

// KafkaOpt configures StartKafka.
type KafkaOpt func(*kafkaConfig)

type kafkaConfig struct {
	props          map[string]string
	startTimeout   time.Duration
	releaseVersion string
	secure         []SCRAMUser // non-nil: KafkaSecure
}

// KafkaProperty sets one broker property in server.properties, adding to or
// overriding the test defaults (see StartKafka). For example, to make the
// log cleaner compact quickly:
//
//	testkit.StartKafka(t,
//		testkit.KafkaProperty("log.cleaner.backoff.ms", "200"),
//		testkit.KafkaProperty("log.segment.bytes", "1048576"))
//
// Per-topic settings (segment.ms, min.cleanable.dirty.ratio, ...) are better
// set on the topic when creating it.
func KafkaProperty(key, value string) KafkaOpt {
	return func(c *kafkaConfig) { c.props[key] = value }
}

// KafkaProperties is KafkaProperty for several properties at once.
func KafkaProperties(props map[string]string) KafkaOpt {
	return func(c *kafkaConfig) { maps.Copy(c.props, props) }
}

// KafkaStartTimeout sets how long StartKafka waits for the broker to answer
// a metadata request, default 2 minutes (it takes a few seconds on an idle
// machine; parallel test packages on 2 cores slow the JVM down).
func KafkaStartTimeout(d time.Duration) KafkaOpt {
	return func(c *kafkaConfig) { c.startTimeout = d }
}

// KafkaReleaseVersion formats the storage with --release-version v (the
// metadata.version the cluster starts at, e.g. "4.2-IV1"; levels in Kafka's
// server-common MetadataVersion), so that a 4.4 broker reports a 4.2
// cluster's finalized metadata.version. Default: the broker's latest
// production level.
func KafkaReleaseVersion(v string) KafkaOpt {
	return func(c *kafkaConfig) { c.releaseVersion = v }
}

// kafkaDefaultProps are the broker settings for tests, before KafkaOpts.
// Listener, quorum and log.dirs settings are added by StartKafka and cannot
// be overridden.
func kafkaDefaultProps() map[string]string {
	return map[string]string{
		"num.partitions":                                   "1",
		"default.replication.factor":                       "1",
		"auto.create.topics.enable":                        "false",
		"offsets.topic.replication.factor":                 "1",
		"offsets.topic.num.partitions":                     "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"transaction.state.log.num.partitions":             "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"share.coordinator.state.topic.num.partitions":     "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"num.network.threads":                              "2",
		"num.io.threads":                                   "2",
		"num.recovery.threads.per.data.dir":                "1",
	}
}

// StartKafka starts a real Apache Kafka KafkaVersion broker for this test:
// one JVM (java -Xmx512m -cp '<libs>/*') with process.roles=broker,controller,
// node.id=1, a PLAINTEXT listener and a CONTROLLER listener on free
// 127.0.0.1 ports and a fresh log directory under t.TempDir(). It formats
// the storage (kafka.tools.StorageTool format --standalone), starts
// kafka.Kafka and returns once a franz-go client sees the broker in
// metadata. Starting takes about 5 to 10 seconds.
//
// Test defaults: replication factors and min.isr of the internal topics 1
// (one partition each), group.initial.rebalance.delay.ms=0,
// auto.create.topics.enable=false, num.partitions=1. KafkaProperty overrides
// any of them.
//
// The jars come from $KDR_KAFKA_LIBS, else
// $HOME/.cache/kdr-tools/kafka-<KafkaVersion>/libs (`make tools`); java from
// $KDR_JAVA, $JAVA_HOME/bin/java or $PATH. When either is missing the test
// is skipped, or fails if KDR_REQUIRE_TOOLS=1.
//
// t.Cleanup stops the broker (SIGTERM, then SIGKILL after 15 s) and, if the
// test failed, logs the tail of the broker's log. If the test binary dies
// without cleanup, the kernel kills the broker (Linux parent-death signal).
func StartKafka(t testing.TB, opts ...KafkaOpt) *Kafka {
	t.Helper()
	cfg := kafkaConfig{props: kafkaDefaultProps(), startTimeout: 2 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}

	libDir := kafkaLibDir(t)
	java := javaPath(t)
	begin := time.Now()
	k, err := launchKafka(t.TempDir(), libDir, java, cfg, t.Logf)
	if err != nil {
		t.Fatalf("start kafka %s: %v", KafkaVersion, err)
	}
	t.Cleanup(func() {
		k.Stop()
		if t.Failed() {
			t.Logf("kafka broker log %s (last %d lines):\n%s", k.logPath(), kafkaLogTailLines, k.logTail(kafkaLogTailLines))
		}
	})
	t.Logf("kafka %s (KRaft, 1 node) listening on %s, started in %v", KafkaVersion, k.bootstrap, time.Since(begin).Round(time.Millisecond))
	return k
}

// LaunchKafka starts the broker StartKafka starts, for a program that is
// not a test (the benchmark harness, internal/bench): its directory is a
// new one under parent, the jars and java are found by the same rules
// ($KDR_KAFKA_LIBS, $KDR_JAVA, ...), and a failure is returned as an
// error (naming the missing tool and `make tools`) instead of failing a
// test. The caller must call Stop on every exit path; if the caller dies
// without it, the kernel kills the broker (Linux parent-death signal).
func LaunchKafka(parent string, opts ...KafkaOpt) (*Kafka, error) {
	cfg := kafkaConfig{props: kafkaDefaultProps(), startTimeout: 2 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	libDir, err := findKafkaLibDir()
	if err != nil {
		return nil, err
	}
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	k, err := launchKafka(parent, libDir, java, cfg, func(string, ...any) {})
	if err != nil {
		return nil, fmt.Errorf("start kafka %s: %w", KafkaVersion, err)
	}
	return k, nil
}

// launchKafka is StartKafka's and LaunchKafka's one start: a port found
// free may be taken before the JVM binds it, so it retries then (3
// attempts), logging each retry with logf.
func launchKafka(parent, libDir, java string, cfg kafkaConfig, logf func(string, ...any)) (*Kafka, error) {
	for attempt := 1; ; attempt++ {
		k, err := startKafkaOnce(parent, libDir, java, cfg)
		if err == nil {
			return k, nil
		}
		if attempt < 3 && errors.Is(err, errPortTaken) {
			logf("kafka: %v; retrying with other ports", err)
			continue
		}
		return nil, err
	}
}

var errPortTaken = errors.New("a port was taken by another process")

// startKafkaOnce formats and starts one broker in a new directory under
// parent; on error it has already stopped the JVM.
func startKafkaOnce(parent, libDir, java string, cfg kafkaConfig) (*Kafka, error) {
	nports := 2
	if cfg.secure != nil {
		nports += 3
	}
	ports, err := freeLoopbackPorts(nports)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "kafka")
	if err != nil {
		return nil, err
	}
	k := &Kafka{
		libDir:    libDir,
		java:      java,
		dir:       dir,
		bootstrap: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		clusterID: newKafkaClusterID(),
	}
	controller := fmt.Sprintf("127.0.0.1:%d", ports[1])

	props := maps.Clone(cfg.props)
	maps.Copy(props, map[string]string{
		"process.roles":                       "broker,controller",
		"node.id":                             "1",
		"listeners":                           "PLAINTEXT://" + k.bootstrap + ",CONTROLLER://" + controller,
		"advertised.listeners":                "PLAINTEXT://" + k.bootstrap,
		"inter.broker.listener.name":          "PLAINTEXT",
		"controller.listener.names":           "CONTROLLER",
		"listener.security.protocol.map":      "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.bootstrap.servers": controller,
		"log.dirs":                            filepath.Join(dir, "data"),
		"metadata.log.dir":                    filepath.Join(dir, "metadata"),
	})
	var scramArgs []string
	if cfg.secure != nil {
		sec, secProps, listeners, protocols, args, err := secureSetup(dir, cfg.secure, ports[2:])
		if err != nil {
			return nil, fmt.Errorf("kafka security setup: %w", err)
		}
		k.security, scramArgs = sec, args
		maps.Copy(props, secProps)
		extra := strings.Join(listeners, ",")
		props["listeners"] += "," + extra
		props["advertised.listeners"] += "," + extra
		props["listener.security.protocol.map"] += "," + strings.Join(protocols, ",")
	}
	var sp strings.Builder
	for _, key := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&sp, "%s=%s\n", key, props[key])
	}
	serverProps := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(serverProps, []byte(sp.String()), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j2-server.properties"), []byte(kafkaServerLog4j), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(k.toolsLog4j(), []byte(kafkaToolsLog4j), 0o644); err != nil {
		return nil, err
	}

	// Format the metadata and data directories (KRaft needs it before the
	// first start). --standalone makes this node the single voter of a
	// dynamic quorum, found through controller.quorum.bootstrap.servers.
	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()
	formatArgs := []string{"format", "--standalone", "--cluster-id", k.clusterID, "--config", serverProps}
	if cfg.releaseVersion != "" {
		formatArgs = append(formatArgs, "--release-version", cfg.releaseVersion)
	}
	formatArgs = append(formatArgs, scramArgs...)
	format := k.javaCmd(ctx, k.toolsLog4j(), "kafka.tools.StorageTool", formatArgs...)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("format storage: %w\n%s", err, out)
	}

	if err := k.startJVM(); err != nil {
		return nil, err
	}

	if err := k.waitReady(ctx); err != nil {
		k.Stop()
		log := k.logTail(kafkaLogTailLines)
		if strings.Contains(log, "Address already in use") {
			return nil, fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w; broker log %s ends:\n%s", err, k.logPath(), log)
	}

	return k, nil
}

// startJVM starts the broker's JVM on the directory's server.properties,
// appending its output to kafka.log, and waits for it in the background
// (k.exited, k.exitErr).
func (k *Kafka) startJVM() error {
	logFile, err := os.OpenFile(k.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	k.exited = make(chan struct{})
	k.cmd = k.javaCmd(context.Background(), filepath.Join(k.dir, "log4j2-server.properties"), "kafka.Kafka", filepath.Join(k.dir, "server.properties"))
	k.cmd.Stdout = logFile
	k.cmd.Stderr = logFile
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		logFile.Close()
		close(k.exited)
		return fmt.Errorf("start %s: %w", k.cmd, err)
	}
	cmd, exited := k.cmd, k.exited
	go func() {
		err := cmd.Wait()
		logFile.Close()
		k.exitErr = err
		close(exited)
	}()
	return nil
}

// Restart stops the broker (Stop: SIGTERM, a clean shutdown) and starts
// it again on the same ports, data and metadata directories, waiting up
// to timeout until it lists itself again: a broker restart as a rolling
// upgrade does one. Not safe for concurrent use with Stop.
func (k *Kafka) Restart(timeout time.Duration) error {
	k.Stop()
	return k.Start(timeout)
}

// Start starts a broker Stop stopped again, on the same ports, data and
// metadata directories, waiting up to timeout until it lists itself.
func (k *Kafka) Start(timeout time.Duration) error {
	if err := k.startJVM(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := k.waitReady(ctx); err != nil {
		return fmt.Errorf("restart kafka: %w; broker log %s ends:\n%s", err, k.logPath(), k.logTail(kafkaLogTailLines))
	}
	return nil
}

// waitReady polls metadata until the broker lists itself, the JVM exits or
// ctx ends.
func (k *Kafka) waitReady(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.bootstrap), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var lastErr error
	for {
		select {
		case <-k.exited:
			return fmt.Errorf("kafka exited before it was ready: %v", k.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("kafka not ready: %w (last error: %v)", ctx.Err(), lastErr)
		default:
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		brokers, err := adm.ListBrokers(actx)
		cancel()
		if err == nil && len(brokers) == 1 {
			return nil
		}
		lastErr = err
		select {
		case <-k.exited:
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the broker: SIGTERM and, after 15 seconds, SIGKILL; it waits
// for the JVM to exit. StartKafka's cleanup calls it; a second call does
// nothing. It leaves the broker's directory for its owner to remove.
func (k *Kafka) Stop() {
	select {
	case <-k.exited:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
	}
}

// Bootstrap returns the broker's address, "127.0.0.1:<port>", for
// bootstrap.servers, kgo.SeedBrokers or kcat -b.
func (k *Kafka) Bootstrap() string { return k.bootstrap }

// Addrs returns the broker addresses (one, the same as Bootstrap).
func (k *Kafka) Addrs() []string { return []string{k.bootstrap} }

// ClusterID returns the KRaft cluster ID the storage was formatted with.
func (k *Kafka) ClusterID() string { return k.clusterID }

// LibDir returns the directory of Kafka's jars, so that a test can run
// Kafka's own Java tools, e.g. with RunTool.
func (k *Kafka) LibDir() string { return k.libDir }

// RunTool runs one of Kafka's Java command-line tools, by main class, with
// Kafka's jars on the class path and log4j at WARN on stderr, and returns
// its stdout. Some classes: org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
// (kafka-consumer-groups), org.apache.kafka.tools.TopicCommand (kafka-topics),
// org.apache.kafka.tools.GetOffsetShell (kafka-get-offsets). Pass
// "--bootstrap-server", k.Bootstrap() yourself. A non-zero exit or a
// timeout of 2 minutes returns an error that includes stderr.
func (k *Kafka) RunTool(t testing.TB, class string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := k.javaCmd(ctx, k.toolsLog4j(), class, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kafka tool %s %q: %w; stderr:\n%s", class, args, err, stderr.String())
	}
	return stdout.String(), nil
}

func (k *Kafka) javaCmd(ctx context.Context, log4j, class string, args ...string) *exec.Cmd {
	jargs := []string{
		kafkaHeap,
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + log4j,
		"-cp", filepath.Join(k.libDir, "*"),
		class,
	}
	cmd := exec.CommandContext(ctx, k.java, append(jargs, args...)...)
	cmd.Dir = k.dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (k *Kafka) logPath() string    { return filepath.Join(k.dir, "kafka.log") }
func (k *Kafka) toolsLog4j() string { return filepath.Join(k.dir, "log4j2-tools.properties") }

// logTail returns the last n lines of the broker log.
func (k *Kafka) logTail(n int) string { return fileTail(k.logPath(), n) }

// fileTail returns the last n lines of the file at path (lines up to
// 1 MiB), or the error opening it.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// kafkaLibDir finds Kafka's jars, or skips/fails the test.
func kafkaLibDir(t testing.TB) string {
	t.Helper()
	dir, err := findKafkaLibDir()
	requireFound(t, err)
	return dir
}

// findKafkaLibDir finds Kafka's jars: $KDR_KAFKA_LIBS, the tools cache,
// $PATH; a directory without kafka_2.13-*.jar is missing too.
func findKafkaLibDir() (string, error) {
	dir, err := findTool("kafka-"+KafkaVersion+"-libs", kafkaLibsEnv,
		filepath.Join(toolsDir(), "kafka-"+KafkaVersion, "libs"), kafkaHint)
	if err != nil {
		return "", err
	}
	if jars, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar")); len(jars) == 0 {
		return "", &toolError{msg: fmt.Sprintf("no kafka_2.13-*.jar in %s; %s", dir, kafkaHint)}
	}
	return dir, nil
}

// javaPath finds a java binary, or skips/fails the test.
func javaPath(t testing.TB) string {
	t.Helper()
	java, err := findJava()
	requireFound(t, err)
	return java
}

// findJava finds a java binary: $KDR_JAVA, $JAVA_HOME/bin/java, $PATH.
func findJava() (string, error) {
	var fallback string
	if home := os.Getenv("JAVA_HOME"); home != "" {
		fallback = filepath.Join(home, "bin", "java")
	}
	return findTool("java", "KDR_JAVA", fallback, "install a JDK 17 or newer (apt-get install openjdk-17-jdk-headless)")
}

// newKafkaClusterID returns a random KRaft cluster ID: 16 random bytes in
// URL-safe base64 without padding, as kafka-storage random-uuid prints
// (which Kafka also keeps from starting with '-').
func newKafkaClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if id[0] != '-' {
			return id
		}
	}
}

// kafkaServerLog4j logs INFO to stdout, which StartKafka sends to kafka.log.
const kafkaServerLog4j = `status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
`

// kafkaToolsLog4j logs WARN to stderr, keeping the tools' stdout clean.
const kafkaToolsLog4j = `status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
`
