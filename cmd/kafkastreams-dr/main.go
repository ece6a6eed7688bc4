// Command kafkastreams-dr backs up and restores Kafka Streams applications.
// See `kafkastreams-dr --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], systemStreams())
	code := exitCode(ctx, err)
	stop()
	os.Exit(code)
}
