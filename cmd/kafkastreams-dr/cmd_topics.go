package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// topicsOptions are the flags of `topics`.
type topicsOptions struct {
	ConfigFile string
	JSON       bool
	// Timeout, when > 0, bounds the whole run; 0 (the default) leaves
	// each Kafka call bounded by source.retry_timeout alone, as in a
	// backup, so that what a backup survives does not fail here.
	Timeout time.Duration
	// Topology is --topology: a file holding the application's
	// Topology#describe() text (overrides topology_file).
	Topology string

	Logger *slog.Logger
}

func newTopicsCmd(g *globalOptions, s *iostreams, runF func(context.Context, *topicsOptions, *iostreams) error) *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "topics -c FILE",
		Short: "Show which topics a backup would copy, and why",
		Long: `Connect to the source cluster and show, for every topic, its class for the
configured application (changelog, repartition, external), its partitions, whether
a backup would select it, and why. Nothing is written anywhere. The broker's own
topics (__consumer_offsets, ...) are class external, never selected: the table
marks them "external (broker-internal)", --json gives "class": "external" and
"broker_internal": true (test broker_internal in a script, not class).

Topics are read with their partition counts, the broker's internal flag and
cleanup.policy; consumer groups are listed, and other_application_ids read, so
that internal topics of other Kafka Streams applications (whose application.id
starts like this one's) are recognized. Warnings (patterns that matched
repartition topics, changelogs whose store name is a generated name after a
prefix, such as "orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004" under
orders-app: probably another application's, compacted inputs that may be source
changelogs, missing literal includes) go to stderr.

When application_id's group is a streams group (the application runs with
group.protocol=streams, KIP-1071, Kafka 4.1 or later) and no topology file is
configured, the topology its group coordinator holds classifies the topics
(StreamsGroupDescribe; DESCRIBE on the group is needed): its inputs, changelogs
and repartition topics, and its outputs when the broker keeps topology
descriptions (KIP-1331). If the group cannot be described, a warning says so and
topics are classified by name.

The selection is the backup's own (one function, backup.SelectTopics): the same
requests, retried alike (a REQUEST_TIMED_OUT or LEADER_NOT_AVAILABLE is asked again
for source.retry_timeout), so what it shows is what a backup copies. A topic config
that cannot be read (DescribeConfigs) fails topics as it fails a backup (exit 1,
naming the topic).

With a topology (--topology FILE, or topology_file: a Topology#describe() text;
else a streams group's topology on the broker, KIP-1071) each topic also gets a
ROLE (input, output, changelog, source-changelog, repartition, dead-letter,
global-input; "-" when the topology does not name it), the topology decides, and
an internal topic under the prefix that it does not name is another
application's. Without source.topics.include it selects the topology's inputs,
outputs, dead-letter topics, changelogs and source-topic changelogs. The summary
on stderr counts the selected topics by role ("2 inputs, 3 outputs, 5
changelogs") and says where the topology came from; without a topology it counts
classes ("5 changelog, 5 external") and says "classified by name (no topology)".

Exits 2, after the table, when a backup would refuse the config: a literal
include or a topology input names a topic that does not exist (allow_missing:
true under source.topics warns instead), the include or exclude leaves out a
topology input or changelog (each fix is named; allow_topology_mismatch: true
under source.topics warns instead), or no topic is selected at all.
Also 2, before any table: neither source.topics.include nor a topology; a
--topology / topology_file that is not a regular file of at most 1 MiB, is not
a describe() text or is a truncated one; or a source_changelog_topics entry the
topology names as a repartition topic, an output or a changelog.

CONFIG KEYS USED
  application_id, source_changelog_topics, other_application_ids,
  internal_topic_prefixes, topology_file, dead_letter_queue_topics,
  source.topics.allow_topology_mismatch, source.bootstrap_servers, source.client_id,
  source.request_timeout, source.retry_timeout (a transient
  LEADER_NOT_AVAILABLE is retried for it, not taken as a missing topic;
  without --timeout it is the only bound, as for backup), source.security,
  source.topics.include, source.topics.exclude, source.topics.allow_missing,
  schema_registry.topic (selected whatever the filters say).
  See "kafkastreams-dr config validate --help".`,
		Example: `  kafkastreams-dr topics -c order-processor.yaml
  kafkastreams-dr topics -c order-processor.yaml --json | jq '.[] | select(.selected)'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigFile == "" {
				return &usageError{errors.New("no config file: use --config FILE (-c FILE)")}
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runTopics(cmd.Context(), o, s)
		},
	}
	cmd.Flags().StringVarP(&o.ConfigFile, "config", "c", "", "config file (required)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the decisions as a JSON array instead of a table")
	cmd.Flags().StringVar(&o.Topology, "topology", "", "a file holding the application's Topology#describe() text: it classifies the topics and, without source.topics.include, selects them (overrides topology_file)")
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 0, "", "give up reaching the cluster after this long, above zero, e.g. 30s (default: no overall limit; each Kafka call is bounded by source.request_timeout and source.retry_timeout, as for backup)")
	return cmd
}

func runTopics(ctx context.Context, o *topicsOptions, s *iostreams) error {
	cfg, err := loadConfig(o.ConfigFile, s)
	if err != nil {
		return err
	}
	opts, err := sourceClientOptions(cfg)
	if err != nil {
		return err
	}
	if _, err := topicfilter.NewFilter(cfg.Source.Topics.Include, cfg.Source.Topics.Exclude); err != nil { // config.Load has checked the patterns already
		return withCode(exitUsage, err, "")
	}
	// With the source's client options the selection can describe the
	// application's streams group and classify by its topology.
	bo := backupOptionsFromConfig(cfg)
	bo.Source = opts
	if bo.Topology, err = loadTopology(cfg, o.Topology); err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithLogger(kslog.New(o.Logger)))...)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("source cluster client: %w", err), "")
	}
	defer cl.Close()
	servers := strings.Join(cfg.Source.BootstrapServers, ",")
	timedOut := &topicsTimeoutError{servers: servers, timeout: o.Timeout}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTopicsTimeout)
		defer cancel()
	}
	if err := config.Reach(ctx, cl, "source cluster"); err != nil {
		if errors.Is(context.Cause(ctx), errTopicsTimeout) {
			timedOut.doing, timedOut.err = "reaching it", err
			return withCode(exitError, timedOut, timedOut.hint(cfg.File()))
		}
		return withCode(exitError, err, fmt.Sprintf("check source.bootstrap_servers and source.security in %s", cfg.File()))
	}

	// The backup's own selection (backup.SelectTopics), so that what this
	// shows is what a backup copies.
	sel, planErr := backup.SelectTopics(ctx, kadm.NewClient(cl), bo, o.Logger)
	var missing *topicfilter.MissingTopicsError
	var mismatch *topicfilter.TopologyMismatchError
	var registry *topicfilter.SchemaRegistryTopicError
	if errors.Is(planErr, backup.ErrNoTopicsSelector) {
		return withCode(exitUsage, planErr, "")
	}
	if planErr != nil && !errors.As(planErr, &missing) && !errors.As(planErr, &mismatch) && !errors.As(planErr, &registry) {
		if errors.Is(context.Cause(ctx), errTopicsTimeout) {
			timedOut.doing, timedOut.err = "listing its topics, their configs and the consumer groups", planErr
			return withCode(exitError, timedOut, timedOut.hint(cfg.File()))
		}
		return withCode(exitError, fmt.Errorf("source cluster %s: %w", servers, planErr),
			fmt.Sprintf("check source.bootstrap_servers and source.security in %s", cfg.File()))
	}
	decisions, warnings := sel.Decisions, sel.Warnings

	if err := writeDecisions(s.Out, o.JSON, decisions); err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(s.ErrOut, "warning: %s\n", w)
	}
	fmt.Fprintln(s.ErrOut, summarizeTopics(decisions, sel.Topology))
	// A backup would refuse to run with this config in the cases below, so
	// the report exits 2 as well: "topics -c F && backup -c F" stops here.
	if missing != nil || mismatch != nil || registry != nil {
		return withCode(exitUsage, planErr, "")
	}
	if !slices.ContainsFunc(decisions, func(d topicfilter.Decision) bool { return d.Selected }) && sel.Topology != nil && len(cfg.Source.Topics.Include) == 0 {
		return withCode(exitUsage, fmt.Errorf("no topic selected: the topology (%s) names no topic that exists on the source cluster and can be backed up; a backup would refuse to run", sel.Topology.From),
			"check that source.bootstrap_servers is the application's cluster and application_id its application.id")
	}
	if !slices.ContainsFunc(decisions, func(d topicfilter.Decision) bool { return d.Selected }) {
		return withCode(exitUsage, nothingSelectedError(cfg, decisions),
			"fix source.topics.include (or source.topics.exclude); each topic's reason above says why it is not selected")
	}
	return nil
}

// nothingSelectedError says that the include patterns select nothing,
// naming the key, its line and the file, and which exclude patterns
// removed topics they matched.
func nothingSelectedError(cfg *config.Config, decisions []topicfilter.Decision) error {
	q := make([]string, len(cfg.Source.Topics.Include))
	for i, p := range cfg.Source.Topics.Include {
		q[i] = fmt.Sprintf("%q", p)
	}
	where := cfg.File()
	if l := cfg.Line("source.topics.include"); l > 0 {
		where = fmt.Sprintf("line %d of %s", l, cfg.File())
	}
	excluded := ""
	if ex := topicfilter.DescribeExclusions(decisions); ex != "" {
		excluded = "; in source.topics.exclude, " + ex
	}
	return fmt.Errorf("no topic selected: source.topics.include [%s] (%s) matches no topic that can be backed up%s; a backup with this config would refuse to run",
		strings.Join(q, ", "), where, excluded)
}

// errTopicsTimeout is the cause of topics' context when --timeout ends it.
var errTopicsTimeout = errors.New("topics --timeout ran out")

// topicsTimeoutError is topics' error when --timeout ran out: the cluster
// and what it was doing, without the "context deadline exceeded" of the
// calls it cut short (err, still unwrapped).
type topicsTimeoutError struct {
	servers string
	timeout time.Duration
	doing   string // what --timeout cut short, e.g. "reaching it"
	err     error
}

func (e *topicsTimeoutError) Error() string {
	if e.doing == "" {
		return fmt.Sprintf("source cluster %s did not answer within --timeout %s", e.servers, e.timeout)
	}
	return fmt.Sprintf("source cluster %s did not answer within --timeout %s (while %s)", e.servers, e.timeout, e.doing)
}

func (e *topicsTimeoutError) Unwrap() error { return e.err }

// hint is the next step after the timeout: a longer --timeout, or none
// (source.retry_timeout then bounds each call, as for a backup), and the
// settings that name the cluster.
func (e *topicsTimeoutError) hint(file string) string {
	return fmt.Sprintf("raise --timeout (e.g. --timeout %s), or leave it out to wait as a backup does (source.retry_timeout); "+
		"check source.bootstrap_servers and source.security in %s", max(4*e.timeout, 2*time.Minute).Round(time.Second), file)
}
