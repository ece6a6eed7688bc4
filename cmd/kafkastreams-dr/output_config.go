// Rendering of config validate: "config OK" and what the file names (the
// application, the clusters, the storage). It takes a writer and plain
// values, and does no I/O of its own.

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
)

// printConfigSummary prints "config OK: FILE" and the application_id, the
// source and target bootstrap servers and the storage of cfg.
func printConfigSummary(w io.Writer, cfg *config.Config) {
	app := cfg.ApplicationID
	if app == "" {
		app = "(not set)"
	}
	fmt.Fprintf(w, "config OK: %s\n", cfg.File())
	fmt.Fprintf(w, "  application_id  %s\n", app)
	fmt.Fprintf(w, "  source          %s\n", strings.Join(cfg.Source.BootstrapServers, ","))
	if cfg.Target != nil {
		fmt.Fprintf(w, "  target          %s\n", strings.Join(cfg.Target.BootstrapServers, ","))
	}
	fmt.Fprintf(w, "  storage         %s\n", cfg.Storage.Describe())
	if cfg.SchemaRegistry != nil {
		fmt.Fprintf(w, "  schema registry topic %s (backed up, restored first)\n", cfg.SchemaRegistry.Topic)
	}
}
