// Package testkit starts the real servers and independent clients that the
// project's tests talk to: an Apache Kafka broker (StartKafka), franz-go's
// kfake cluster on real TCP ports (StartKfake), kcat as an independent
// Kafka client (Kcat, KcatProduce, KcatConsume) and an S3-compatible server
// (StartS3).
//
// External tools (the Kafka jars, a JDK, kcat, versitygw) are found by the
// same rule everywhere, see requireTool: when one is missing the test is
// skipped, or fails when the environment variable KDR_REQUIRE_TOOLS=1, which
// `make test` and CI set so that nothing skips silently there. `make tools`
// fetches what a developer machine lacks into $HOME/.cache/kdr-tools.
//
// Every helper calls t.Helper and registers its own t.Cleanup; the servers
// listen on 127.0.0.1 only, on free ports, so tests can run in parallel.
package testkit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireToolsEnv is the environment variable that turns a missing external
// tool from a skipped test into a failed one when set to "1".
const RequireToolsEnv = "KDR_REQUIRE_TOOLS"

// toolsDir is where `make tools` puts what it fetches: $HOME/.cache/kdr-tools.
func toolsDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "kdr-tools")
	}
	return filepath.Join(home, ".cache", "kdr-tools")
}

// requireTool returns the path of an external tool (see findTool) or skips
// the test (fails it if KDR_REQUIRE_TOOLS=1, or when the environment
// variable names a path that does not exist).
func requireTool(t testing.TB, name, envVar, fallbackPath, hint string) string {
	t.Helper()
	p, err := findTool(name, envVar, fallbackPath, hint)
	requireFound(t, err)
	return p
}

// requireFound fails the test for a misconfigured tool, skips it (fails it
// if KDR_REQUIRE_TOOLS=1) for a missing one, and does nothing for nil.
func requireFound(t testing.TB, err error) {
	t.Helper()
	var te *toolError
	switch {
	case err == nil:
	case errors.As(err, &te) && !te.misconfigured:
		missingTool(t, te.msg)
	default:
		t.Fatalf("%v", err)
	}
}

// toolError is findTool's error: a missing tool, or a misconfigured one
// (an environment variable naming a path that does not exist).
type toolError struct {
	msg           string
	misconfigured bool
}

func (e *toolError) Error() string { return e.msg }

// findTool returns the path of an external tool. It looks, in order, at:
//
//  1. the environment variable envVar (if envVar is not ""): a path that must
//     exist; when it is set but does not exist that is a misconfiguration
//     rather than a missing tool (a test fails rather than skips);
//  2. fallbackPath (if not ""), typically under $HOME/.cache/kdr-tools;
//  3. name on $PATH.
//
// The path may be a file or a directory (e.g. Kafka's libs directory). hint
// tells a developer how to get the tool, e.g. "run `make tools`"; the
// error (a *toolError) names every place looked at and the hint.
func findTool(name, envVar, fallbackPath, hint string) (string, error) {
	var looked []string
	if envVar != "" {
		if p := os.Getenv(envVar); p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", &toolError{msg: fmt.Sprintf("%s: %s=%s: %v", name, envVar, p, err), misconfigured: true}
			}
			return p, nil
		}
		looked = append(looked, "$"+envVar)
	}
	if fallbackPath != "" {
		if _, err := os.Stat(fallbackPath); err == nil {
			return fallbackPath, nil
		}
		looked = append(looked, fallbackPath)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	looked = append(looked, "$PATH")
	return "", &toolError{msg: fmt.Sprintf("%s not found (looked at %q); %s", name, looked, hint)}
}

// missingTool skips the test with msg, or fails it when KDR_REQUIRE_TOOLS=1.
func missingTool(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireToolsEnv) == "1" {
		t.Fatalf("%s (%s=1, so this fails instead of skipping)", msg, RequireToolsEnv)
	}
	t.Skipf("skipping: %s", msg)
}

// freeLoopbackPorts returns n distinct TCP ports on 127.0.0.1 that were free
// a moment ago. Another process may take one before the caller binds it;
// callers that start external servers retry on "address already in use".
func freeLoopbackPorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		lns = append(lns, ln)
		addr, ok := ln.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("find a free port on 127.0.0.1: not a TCP address")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
