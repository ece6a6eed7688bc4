package main

import (
	"errors"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// loadTopology reads the application's topology from flag (--topology,
// relative to the working directory) or else the config's topology_file
// (already relative to the config file): a Topology#describe() text
// read by config.ReadTopologyFile (a regular file of at most 1 MiB) and
// topicfilter.DescribedTopology. Neither: nil, and the broker's streams
// group may give one (backup.SelectTopics). A file that cannot be read,
// is not a describe() text, or comes without application_id is a usage
// error (exit 2) naming the file and the fix; so is a
// source_changelog_topics entry the topology says cannot be a source
// changelog (topicfilter.SourceChangelogConflict: a repartition topic, an
// output, a changelog) or a dead_letter_queue_topics entry it says cannot
// be a dead-letter topic (Classifier.DeadLetterConflict: an input, a
// repartition topic, a changelog).
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
	text, _, err := config.ReadTopologyFile(path)
	if err != nil {
		return nil, topologyFileError(what, err)
	}
	top, err := topicfilter.DescribedTopology(text, cfg.ApplicationID, fmt.Sprintf("topology file %q", path))
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("%s: %w", what, err), "")
	}
	for _, sc := range cfg.SourceChangelogTopics {
		if why := topicfilter.SourceChangelogConflict(sc, top, cfg.DeadLetterQueueTopics); why != "" {
			return nil, withCode(exitUsage, fmt.Errorf("%s: %q %s", listKey(cfg, "source_changelog_topics"), sc, why),
				fmt.Sprintf("remove %q from source_changelog_topics in %s (list there only input topics a store restores from, topology.optimization=all)", sc, cfg.File()))
		}
	}
	byName := topicfilter.Classifier{ApplicationID: cfg.ApplicationID, InternalPrefixes: cfg.InternalTopicPrefixes, OtherApplicationIDs: cfg.OtherApplicationIDs, Topology: top}
	for _, d := range cfg.DeadLetterQueueTopics {
		if why := byName.DeadLetterConflict(d); why != "" {
			return nil, withCode(exitUsage, fmt.Errorf("%s: %q %s, not a dead-letter queue topic", listKey(cfg, "dead_letter_queue_topics"), d, why),
				fmt.Sprintf("remove %q from dead_letter_queue_topics in %s", d, cfg.File()))
		}
	}
	return top, nil
}

// topologyFileError is the usage error (exit 2) for a topology file
// config.ReadTopologyFile refused, after what (the flag or key): the fix
// for a file that cannot be read is another file.
func topologyFileError(what string, err error) error {
	var re *config.TopologyReadError
	if errors.As(err, &re) {
		return withCode(exitUsage, fmt.Errorf("%s %w", what, err),
			"give the regular file the application's Topology#describe() text was written to (topology.describe().toString())")
	}
	return withCode(exitUsage, fmt.Errorf("%s %w", what, err),
		"give the text the application's Topology#describe() prints, whole (e.g. log topology.describe() at startup)")
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
