package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// loadTopology reads the application's topology from flag (--topology,
// relative to the working directory) or else the config's topology_file
// (already relative to the config file): a Topology#describe() text
// (topicfilter.DescribedTopology). Neither: nil, and the broker's streams
// group may give one (backup.SelectTopics). A file that cannot be read,
// is not a describe() text, or comes without application_id is a usage
// error (exit 2) naming the file and the fix.
func loadTopology(cfg *config.Config, flag string) (*topicfilter.AppTopology, error) {
	path, what := flag, "--topology"
	if path == "" {
		path, what = cfg.TopologyFile, "topology_file"
		if l := cfg.Line("topology_file"); l > 0 {
			what = fmt.Sprintf("topology_file (line %d of %s)", l, cfg.File())
		}
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		why := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			why = "it does not exist"
		}
		return nil, withCode(exitUsage, fmt.Errorf("%s %q cannot be read: %s", what, path, why),
			"give the file the application's Topology#describe() text was written to (topology.describe().toString())")
	}
	top, err := topicfilter.DescribedTopology(string(b), cfg.ApplicationID, fmt.Sprintf("topology file %q", path))
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("%s: %w", what, err), "")
	}
	return top, nil
}

// listKey names a source.topics list of cfg for the fixes of a topology
// mismatch: "source.topics.include (line 7 of app.yaml)", or "(not set in
// app.yaml)".
func listKey(cfg *config.Config, key string) string {
	if l := cfg.Line(key); l > 0 {
		return fmt.Sprintf("%s (line %d of %s)", key, l, cfg.File())
	}
	return fmt.Sprintf("%s (not set in %s)", key, cfg.File())
}
