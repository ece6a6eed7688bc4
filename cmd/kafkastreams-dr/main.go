// Command kafkastreams-dr backs up and restores Kafka Streams applications.
// See `kafkastreams-dr --help`.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	// In a container with a memory limit (cgroup), keep the Go heap under
	// 85% of it: the GC works harder instead of the pod being OOM-killed.
	// GOMEMLIMIT, when set, wins; outside a cgroup limit nothing changes
	// (Set returns an error then, which is no fault of the run).
	_, _ = memlimit.Set(memlimit.WithRatio(0.85), memlimit.WithLogger(slog.New(slog.DiscardHandler)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], systemStreams())
	code := exitCode(ctx, err)
	stop()
	os.Exit(code)
}
