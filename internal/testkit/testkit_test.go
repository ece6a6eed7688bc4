package testkit

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaVersionMatchesPom(t *testing.T) {
	pom, err := os.ReadFile("../../e2e/kafka/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom)
	if m == nil {
		t.Fatal("no <kafka.version> in e2e/kafka/pom.xml")
	}
	if got := string(m[1]); got != KafkaVersion {
		t.Fatalf("e2e/kafka/pom.xml fetches Kafka %s but KafkaVersion is %s", got, KafkaVersion)
	}
}

// brokers is what Kafka and Kfake have in common.
type brokers interface {
	Bootstrap() string
	Addrs() []string
}

func TestStartKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	k := StartKafka(t, KafkaProperty("log.cleaner.backoff.ms", "250"))

	t.Run("kafka property overrides reach the broker", func(t *testing.T) {
		adm := Admin(t, k.Addrs())
		ctx := testContext(t)
		rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("1", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"log.cleaner.backoff.ms":           "250",
			"auto.create.topics.enable":        "false",
			"offsets.topic.replication.factor": "1",
			"group.initial.rebalance.delay.ms": "0",
		}
		for _, c := range rc.Configs {
			if w, ok := want[c.Key]; ok {
				if c.MaybeValue() != w {
					t.Errorf("%s = %q, want %q", c.Key, c.MaybeValue(), w)
				}
				delete(want, c.Key)
			}
		}
		if len(want) > 0 {
			t.Errorf("broker configs missing: %v", want)
		}
	})

	t.Run("auto topic creation is off", func(t *testing.T) {
		cl := Client(t, k.Addrs(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
		err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: "no-such-topic", Value: []byte("x")}).FirstErr()
		if err == nil {
			t.Fatal("produce to a missing topic succeeded; auto.create.topics.enable should be false")
		}
	})

	t.Run("round trip", func(t *testing.T) { roundTrip(t, k) })

	t.Run("run tool", func(t *testing.T) {
		createTopic(t, k, "tool-topic", 2)
		out, err := k.RunTool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", k.Bootstrap(), "--list")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "tool-topic") {
			t.Fatalf("kafka-topics --list printed %q, want tool-topic in it", out)
		}
		if _, err := k.RunTool(t, "org.apache.kafka.tools.TopicCommand", "--no-such-flag"); err == nil {
			t.Fatal("RunTool with a bad flag returned no error")
		}
	})
}

func TestStartKfake(t *testing.T) {
	k := StartKfake(t, 3)
	if got := len(k.Addrs()); got != 3 {
		t.Fatalf("%d addresses, want 3", got)
	}
	bs, err := Admin(t, k.Addrs()).ListBrokers(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Fatalf("metadata lists %d brokers, want 3", len(bs))
	}
	for _, b := range bs {
		if b.Host != "127.0.0.1" {
			t.Errorf("broker %d on host %q, want 127.0.0.1", b.NodeID, b.Host)
		}
	}
	roundTrip(t, k)
}

// roundTrip checks the helpers against one cluster: franz-go produces and
// kcat reads the same records; kcat produces and franz-go reads them.
func roundTrip(t *testing.T, b brokers) {
	ctx := testContext(t)
	const partitions = 3
	createTopic(t, b, "franz-to-kcat", partitions)
	createTopic(t, b, "kcat-to-franz", partitions)

	t.Run("franz-go produces, franz-go and kcat consume", func(t *testing.T) {
		cl := Client(t, b.Addrs())
		var want []*kgo.Record
		for p := range int32(partitions) {
			for i := range 3 {
				want = append(want, &kgo.Record{
					Topic:     "franz-to-kcat",
					Partition: p,
					Key:       fmt.Appendf(nil, "k%d-%d", p, i),
					Value:     fmt.Appendf(nil, "v%d-%d", p, i),
					Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("1")}},
				})
			}
		}
		// A tombstone: null value.
		want = append(want, &kgo.Record{Topic: "franz-to-kcat", Partition: 0, Key: []byte("gone")})
		cl2 := Client(t, b.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := cl2.ProduceSync(ctx, want...).FirstErr(); err != nil {
			t.Fatal(err)
		}

		got := consumeAll(t, cl, "franz-to-kcat", len(want))
		if len(got) != len(want) {
			t.Fatalf("franz-go read %d records, want %d", len(got), len(want))
		}

		msgs := KcatConsume(t, b.Bootstrap(), "franz-to-kcat")
		if len(msgs) != len(want) {
			t.Fatalf("kcat read %d records, want %d: %+v", len(msgs), len(want), msgs)
		}
		byKey := map[string]KcatMessage{}
		for _, m := range msgs {
			if m.Key == nil {
				t.Fatalf("kcat read a null key: %+v", m)
			}
			byKey[*m.Key] = m
		}
		for _, r := range want {
			m, ok := byKey[string(r.Key)]
			switch {
			case !ok:
				t.Errorf("kcat did not read key %q", r.Key)
			case m.Partition != r.Partition:
				t.Errorf("key %q: kcat partition %d, want %d", r.Key, m.Partition, r.Partition)
			case r.Value == nil && m.Payload != nil:
				t.Errorf("key %q: kcat payload %q, want null", r.Key, *m.Payload)
			case r.Value != nil && (m.Payload == nil || *m.Payload != string(r.Value)):
				t.Errorf("key %q: kcat payload %v, want %q", r.Key, m.Payload, r.Value)
			}
			if len(r.Headers) > 0 {
				if v, ok := m.Header("h"); !ok || v == nil || *v != "1" {
					t.Errorf("key %q: kcat headers %v, want h=1", r.Key, m.Headers)
				}
			}
		}
	})

	t.Run("kcat produces, franz-go consumes", func(t *testing.T) {
		KcatProduce(t, b.Bootstrap(), "kcat-to-franz", 1, []string{"a:1", "b:2", "c:"}, "-K:", "-Z", "-H", "src=kcat")
		got := consumeAll(t, Client(t, b.Addrs()), "kcat-to-franz", 3)
		if len(got) != 3 {
			t.Fatalf("franz-go read %d records, want 3", len(got))
		}
		wantVals := map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": nil}
		for _, r := range got {
			w, ok := wantVals[string(r.Key)]
			switch {
			case !ok:
				t.Errorf("unexpected key %q", r.Key)
			case r.Partition != 1:
				t.Errorf("key %q on partition %d, want 1", r.Key, r.Partition)
			case (w == nil) != (r.Value == nil) || string(w) != string(r.Value):
				t.Errorf("key %q: value %q (null %v), want %q (null %v)", r.Key, r.Value, r.Value == nil, w, w == nil)
			case len(r.Headers) != 1 || r.Headers[0].Key != "src" || string(r.Headers[0].Value) != "kcat":
				t.Errorf("key %q: headers %v, want src=kcat", r.Key, r.Headers)
			}
		}
	})
}

func TestKcatNullVersusEmpty(t *testing.T) {
	k := StartKfake(t, 1)
	null := (*string)(nil)
	str := func(s string) *string { return &s }
	for i, tc := range []struct {
		name      string
		line      string
		args      []string
		wantKey   *string
		wantValue *string
	}{
		{"no key delimiter gives a null key", "v", nil, null, str("v")},
		{"empty value after the key is empty", "k:", []string{"-K:"}, str("k"), str("")},
		{"empty value with -Z is null", "k:", []string{"-K:", "-Z"}, str("k"), null},
		{"empty key is empty", ":v", []string{"-K:"}, str(""), str("v")},
		{"empty key with -Z is null", ":v", []string{"-K:", "-Z"}, null, str("v")},
		{"both empty", ":", []string{"-K:"}, str(""), str("")},
		{"both empty with -Z are null", ":", []string{"-K:", "-Z"}, null, null},
		{"line without the delimiter is all value", "v", []string{"-K:"}, null, str("v")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := fmt.Sprintf("null-empty-%d", i)
			createTopic(t, k, topic, 1)
			KcatProduce(t, k.Bootstrap(), topic, 0, []string{tc.line}, tc.args...)
			msgs := KcatConsume(t, k.Bootstrap(), topic)
			if len(msgs) != 1 {
				t.Fatalf("kcat read %d records, want 1: %+v", len(msgs), msgs)
			}
			if d := diffPtr(msgs[0].Key, tc.wantKey); d != "" {
				t.Errorf("kcat key: %s", d)
			}
			if d := diffPtr(msgs[0].Payload, tc.wantValue); d != "" {
				t.Errorf("kcat payload: %s", d)
			}
			// franz-go, independently, sees the same null or empty.
			r := consumeAll(t, Client(t, k.Addrs()), topic, 1)[0]
			if d := diffPtr(bytesPtr(r.Key), tc.wantKey); d != "" {
				t.Errorf("franz-go key: %s", d)
			}
			if d := diffPtr(bytesPtr(r.Value), tc.wantValue); d != "" {
				t.Errorf("franz-go value: %s", d)
			}
		})
	}

	t.Run("empty lines produce nothing", func(t *testing.T) {
		createTopic(t, k, "empty-lines", 1)
		KcatProduce(t, k.Bootstrap(), "empty-lines", 0, []string{"a", "", "b"}, "-Z")
		if got := len(KcatConsume(t, k.Bootstrap(), "empty-lines")); got != 2 {
			t.Fatalf("kcat read %d records, want 2", got)
		}
	})

	t.Run("headers with empty and null values", func(t *testing.T) {
		createTopic(t, k, "headers", 1)
		KcatProduce(t, k.Bootstrap(), "headers", 0, []string{"x"}, "-H", "a=1", "-H", "e=", "-H", "n")
		msgs := KcatConsume(t, k.Bootstrap(), "headers")
		if len(msgs) != 1 {
			t.Fatalf("kcat read %d records, want 1", len(msgs))
		}
		for name, want := range map[string]*string{"a": str("1"), "e": str(""), "n": null} {
			v, ok := msgs[0].Header(name)
			if !ok {
				t.Errorf("no header %q in %v", name, msgs[0].Headers)
				continue
			}
			if d := diffPtr(v, want); d != "" {
				t.Errorf("header %q: %s", name, d)
			}
		}
	})
}

func TestKcatProduceFailsOnUnknownPartition(t *testing.T) {
	k := StartKfake(t, 1)
	createTopic(t, k, "one-partition", 1)
	_, err := kcatRun(t, []byte("x\n"), "-b", k.Bootstrap(), "-P", "-t", "one-partition", "-p", "5", "-X", "message.timeout.ms=2000")
	if err == nil {
		t.Fatal("kcat exited 0 after failing to deliver to a missing partition")
	}
}

func TestRequireTool(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/tool"
	if err := os.WriteFile(file, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		env      string // value of KDR_TEST_TOOL, "" for unset
		fallback string
		require  bool // KDR_REQUIRE_TOOLS=1
		want     string
		wantSkip bool
		wantFail bool
	}{
		{name: "env var wins", env: file, fallback: "/nonexistent", want: file},
		{name: "fallback path when env is unset", fallback: file, want: file},
		{name: "env var pointing nowhere fails", env: dir + "/missing", fallback: file, wantFail: true},
		{name: "missing tool skips", fallback: dir + "/missing", wantSkip: true},
		{name: "missing tool fails when tools are required", fallback: dir + "/missing", require: true, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KDR_TEST_TOOL", tc.env)
			if tc.require {
				t.Setenv(RequireToolsEnv, "1")
			} else {
				t.Setenv(RequireToolsEnv, "")
			}
			ft := &fakeTB{TB: t}
			var got string
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = requireTool(ft, "kdr-no-such-tool", "KDR_TEST_TOOL", tc.fallback, "hint")
			}()
			<-done
			if ft.skipped != tc.wantSkip || ft.failed != tc.wantFail {
				t.Fatalf("skipped=%v failed=%v (%s), want skipped=%v failed=%v", ft.skipped, ft.failed, ft.msg, tc.wantSkip, tc.wantFail)
			}
			if !tc.wantSkip && !tc.wantFail && got != tc.want {
				t.Fatalf("path %q, want %q", got, tc.want)
			}
		})
	}
}

// fakeTB records Skip and Fatal instead of ending the real test; like the
// real ones they end the calling goroutine.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func createTopic(t *testing.T, b brokers, topic string, partitions int32) {
	t.Helper()
	resp, err := Admin(t, b.Addrs()).CreateTopic(testContext(t), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %q: %v", topic, err)
	}
}

// consumeAll reads topic from the start until it has n records.
func consumeAll(t *testing.T, cl *kgo.Client, topic string, n int) []*kgo.Record {
	t.Helper()
	cl.AddConsumeTopics(topic)
	ctx := testContext(t)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records from %q: %v", len(recs), n, topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		recs = append(recs, fs.Records()...)
	}
	return recs
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func bytesPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func diffPtr(got, want *string) string {
	show := func(p *string) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprintf("%q", *p)
	}
	if show(got) != show(want) {
		return fmt.Sprintf("got %s, want %s", show(got), show(want))
	}
	return ""
}
