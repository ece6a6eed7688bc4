package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCmd(s *iostreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long:  "Print the version of kafkastreams-dr (set at build time with -ldflags \"-X main.version=...\") and of Go.",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(s.Out, "kafkastreams-dr %s (%s)\n", version, runtime.Version())
			return err
		},
	}
}
