package testkit

import (
	"path/filepath"
	"strings"
	"testing"
)

// KcatPath returns the kcat binary ($KDR_KCAT, else kcat on $PATH), to run
// it as a drill's application command. A missing kcat skips the test, or
// fails it if KDR_REQUIRE_TOOLS=1.
func KcatPath(t testing.TB) string {
	t.Helper()
	return kcatPath(t)
}

// StreamsAppCommand returns a shell command that runs the drill Kafka
// Streams application (e2e/streams-app) in the foreground with exec, with
// the JVM options StartStreamsApp uses, then args (shell-quoted), e.g.
// --bootstrap-servers "$KAFKASTREAMS_DR_BOOTSTRAP_SERVERS" given as a raw
// part: every arg that starts with '"$' is written unquoted, so the shell
// expands it. Only StreamsAppProperty options matter. A missing jar or
// java skips the test, or fails it if KDR_REQUIRE_TOOLS=1.
func StreamsAppCommand(t testing.TB, opts []StreamsAppOpt, args ...string) string {
	t.Helper()
	cfg := streamsAppConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	jar := requireTool(t, "drill-app.jar", streamsAppJarEnv, filepath.Join(toolsDir(), "streams-app", "drill-app.jar"), streamsAppHint)
	parts := []string{"exec", shellQuote(javaPath(t)), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true", "-jar", shellQuote(jar)}
	for _, a := range args {
		if strings.HasPrefix(a, `"$`) {
			parts = append(parts, a)
		} else {
			parts = append(parts, shellQuote(a))
		}
	}
	for _, p := range cfg.props {
		parts = append(parts, "--prop", shellQuote(p))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for /bin/sh with single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ToolCommand returns a shell command that runs one of Kafka's Java tools
// (by main class, e.g. org.apache.kafka.tools.TopicCommand) with k's jars
// and log4j at WARN, then args, quoted as StreamsAppCommand quotes them
// (an arg that starts with '"$' is written unquoted, for the shell to
// expand). Chain it before a drill's application command with && to change
// the target after the restore and before the application starts.
func (k *Kafka) ToolCommand(class string, args ...string) string {
	parts := []string{shellQuote(k.java), kafkaHeap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		shellQuote("-Dlog4j2.configurationFile=" + k.toolsLog4j()), "-cp", shellQuote(filepath.Join(k.libDir, "*")), shellQuote(class)}
	for _, a := range args {
		if strings.HasPrefix(a, `"$`) {
			parts = append(parts, a)
		} else {
			parts = append(parts, shellQuote(a))
		}
	}
	return strings.Join(parts, " ")
}
