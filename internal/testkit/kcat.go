package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KcatTimeout bounds one kcat run.
const KcatTimeout = 60 * time.Second

const kcatHint = "install kcat (apt-get install kcat)"

// kcatPath finds kcat: $KDR_KCAT, else kcat on $PATH.
func kcatPath(t testing.TB) string {
	t.Helper()
	return requireTool(t, "kcat", "KDR_KCAT", "", kcatHint)
}

// KcatBinary returns the path of kcat ($KDR_KCAT, else kcat on $PATH) for a
// program that is not a test (the benchmark harness), or an error naming
// where it looked and how to install it.
func KcatBinary() (string, error) {
	return findTool("kcat", "KDR_KCAT", "", kcatHint)
}

// Kcat runs the kcat binary (Debian's kcat, librdkafka underneath: a
// client independent of franz-go) with args and returns its stdout. It
// fails the test on a non-zero exit or after KcatTimeout, showing stderr.
// A missing kcat skips the test, or fails it if KDR_REQUIRE_TOOLS=1.
func Kcat(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kcatRun(t, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kcatRun(t testing.TB, stdin []byte, args ...string) (string, error) {
	t.Helper()
	bin := kcatPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), KcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out after %v)", err, KcatTimeout)
		}
		return stdout.String(), fmt.Errorf("kcat %q: %w; stderr:\n%s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// KcatProduce produces one record per line with kcat:
//
//	kcat -b <brokers> -P -t <topic> [-p <partition>] -X message.timeout.ms=30000 <extraArgs...>
//
// with the lines on stdin, each followed by "\n" (the default -D
// delimiter, so a line cannot contain a newline). A partition below 0 lets
// librdkafka's partitioner choose (consistent_random: by key hash, random
// when the key is empty or null; its hash differs from the Java client's
// murmur2, so use an explicit partition where it matters). The message
// timeout makes kcat exit 1 when delivery fails (unknown topic or
// partition) instead of retrying past KcatTimeout; a later -X overrides it.
//
// Useful extraArgs:
//   - "-K:" splits each line at the first ":" into key and value. Without
//     -K, or on a line without ":", the key is null.
//   - "-H", "name=value" adds that header to every record (repeatable);
//     "-H", "name=" gives an empty header value, "-H", "name" a null one.
//   - "-Z" sends an empty key or value as null instead of zero-length.
//   - "-k", "key" gives every record that key.
//
// Null versus empty, as kcat 1.7.1 (librdkafka 2.0.2) behaves, checked in
// TestKcatNullVersusEmpty:
//
//	line  extraArgs  key    value
//	"v"   -          null   "v"
//	""    any        no record: kcat skips empty input messages
//	"k:"  -K:        "k"    ""
//	"k:"  -K: -Z     "k"    null (a tombstone)
//	":v"  -K:        ""     "v"
//	":v"  -K: -Z     null   "v"
//	":"   -K:        ""     ""
//	":"   -K: -Z     null   null
//
// So -Z applies to the key and the value alike: kcat cannot send an empty
// key with a null value, or a null key with an empty value. Produce those
// with franz-go.
func KcatProduce(t testing.TB, brokers, topic string, partition int32, lines []string, extraArgs ...string) {
	t.Helper()
	args := []string{"-b", brokers, "-P", "-t", topic}
	if partition >= 0 {
		args = append(args, "-p", strconv.Itoa(int(partition)))
	}
	args = append(args, "-X", "message.timeout.ms=30000")
	args = append(args, extraArgs...)
	var in bytes.Buffer
	for _, l := range lines {
		in.WriteString(l)
		in.WriteByte('\n')
	}
	if _, err := kcatRun(t, in.Bytes(), args...); err != nil {
		t.Fatal(err)
	}
}

// KcatMessage is one record as kcat -J prints it. A null key or payload is
// nil; an empty one points to "". Headers are flattened: name, value, name,
// value, ... (nil when the record has none; a null header value is nil).
// kcat writes keys, values and
// header values as JSON strings, so non-UTF-8 bytes do not round-trip:
// compare text records, or use kcat's -s deserializers.
type KcatMessage struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	TsType    string    `json:"tstype"` // "create", "logappend" or "unknown"
	Ts        int64     `json:"ts"`     // milliseconds since the Unix epoch
	Broker    int32     `json:"broker"` // node ID that served the fetch
	Headers   []*string `json:"headers"`
	Key       *string   `json:"key"`
	Payload   *string   `json:"payload"`
}

// Header returns the value of the first header called name (nil for a null
// value), and whether the record has such a header.
func (m KcatMessage) Header(name string) (*string, bool) {
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if m.Headers[i] != nil && *m.Headers[i] == name {
			return m.Headers[i+1], true
		}
	}
	return nil, false
}

// KcatConsume reads a topic from the beginning to its current end with
//
//	kcat -b <brokers> -C -t <topic> -J -e -o beginning -q <extraArgs...>
//
// and returns the records in kcat's output order (ordered within each
// partition, interleaved across partitions). Add "-p", "N" to read one
// partition, or "-X", "isolation.level=read_committed" (librdkafka's
// default is read_committed; pass read_uncommitted to see aborted records).
func KcatConsume(t testing.TB, brokers, topic string, extraArgs ...string) []KcatMessage {
	t.Helper()
	args := append([]string{"-b", brokers, "-C", "-t", topic, "-J", "-e", "-o", "beginning", "-q"}, extraArgs...)
	out := Kcat(t, args...)
	var msgs []KcatMessage
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m KcatMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("kcat -J printed a line that is not JSON: %v: %q", err, line)
		}
		msgs = append(msgs, m)
	}
	return msgs
}
