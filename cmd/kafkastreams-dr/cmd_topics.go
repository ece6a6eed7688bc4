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

	Logger *slog.Logger
}

func newTopicsCmd(g *globalOptions, s *iostreams, runF func(context.Context, *topicsOptions, *iostreams) error) *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "topics -c FILE",
		Short: "Show which topics a backup would copy, and why",
		Long: `Connect to the source cluster and show, for every topic, its class for the
configured application (changelog, repartition, external; internal for the broker's
own topics such as __consumer_offsets), its partitions, whether a backup would
select it, and why. Nothing is written anywhere.

Topics are read with their partition counts, the broker's internal flag and
cleanup.policy; consumer groups are listed, and other_application_ids read, so
that internal topics of other Kafka Streams applications (whose application.id
starts like this one's) are recognized. Warnings (patterns that matched
repartition topics, changelogs whose store name is a generated name after a
prefix, such as "orders-app-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000004" under
orders-app: probably another application's, compacted inputs that may be source
changelogs, missing literal includes) go to stderr.

Exits 2, after the table, when a backup would refuse the config: a literal
include names a topic that does not exist, or no topic is selected at all.

CONFIG KEYS USED
  application_id, source_changelog_topics, other_application_ids,
  internal_topic_prefixes, source.bootstrap_servers, source.client_id,
  source.request_timeout, source.retry_timeout (a transient
  LEADER_NOT_AVAILABLE is retried for it, not taken as a missing topic;
  without --timeout it is the only bound, as for backup), source.security,
  source.topics.include, source.topics.exclude, source.topics.allow_missing.
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
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up reaching the cluster after this long (default: no overall limit; each Kafka call is bounded by source.request_timeout and source.retry_timeout, as for backup)")
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
	filter, err := topicfilter.NewFilter(cfg.Source.Topics.Include, cfg.Source.Topics.Exclude)
	if err != nil { // config.Load has checked the patterns already
		return withCode(exitUsage, err, "")
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithLogger(kslog.New(o.Logger)))...)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("source cluster client: %w", err), "")
	}
	defer cl.Close()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	if err := config.Reach(ctx, cl, "source cluster"); err != nil {
		return withCode(exitError, err, fmt.Sprintf("check source.bootstrap_servers and source.security in %s", cfg.File()))
	}

	topics, others, err := describeSource(ctx, kadm.NewClient(cl), cfg, o.Logger)
	if err != nil {
		return withCode(exitError, err, fmt.Sprintf("check source.bootstrap_servers and source.security in %s", cfg.File()))
	}
	classifier := topicfilter.Classifier{
		ApplicationID:         cfg.ApplicationID,
		InternalPrefixes:      cfg.InternalTopicPrefixes,
		SourceChangelogTopics: cfg.SourceChangelogTopics,
		OtherApplicationIDs:   others,
	}
	decisions, warnings, planErr := topicfilter.Plan(filter, classifier, topics, topicfilter.PlanOptions{AllowMissing: cfg.Source.Topics.AllowMissing})
	var missing *topicfilter.MissingTopicsError
	if planErr != nil && !errors.As(planErr, &missing) {
		return planErr
	}

	if err := writeDecisions(s.Out, o.JSON, decisions); err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(s.ErrOut, "warning: %s\n", w)
	}
	fmt.Fprintln(s.ErrOut, summarizeDecisions(decisions))
	// A backup would refuse to run with this config in both cases below, so
	// the report exits 2 as well: "topics -c F && backup -c F" stops here.
	if missing != nil {
		return withCode(exitUsage, planErr, "")
	}
	if !slices.ContainsFunc(decisions, func(d topicfilter.Decision) bool { return d.Selected }) {
		return withCode(exitUsage, nothingSelectedError(cfg),
			"fix source.topics.include; each topic's reason above says why it is not selected")
	}
	return nil
}

// nothingSelectedError says that the include patterns select nothing,
// naming the key, its line and the file.
func nothingSelectedError(cfg *config.Config) error {
	q := make([]string, len(cfg.Source.Topics.Include))
	for i, p := range cfg.Source.Topics.Include {
		q[i] = fmt.Sprintf("%q", p)
	}
	where := cfg.File()
	if l := cfg.Line("source.topics.include"); l > 0 {
		where = fmt.Sprintf("line %d of %s", l, cfg.File())
	}
	return fmt.Errorf("no topic selected: source.topics.include [%s] (%s) matches no topic that can be backed up; a backup with this config would refuse to run",
		strings.Join(q, ", "), where)
}

// describeSource reads the topics of the source cluster (with partitions,
// the internal flag and whether cleanup.policy contains compact) and the
// consumer groups other than the application's own.
func describeSource(ctx context.Context, adm *kadm.Client, cfg *config.Config, log *slog.Logger) ([]topicfilter.TopicInfo, []string, error) {
	// The backup's own listing: a transient LEADER_NOT_AVAILABLE is retried
	// for source.retry_timeout rather than making the topic look missing.
	details, err := backup.ListTopics(ctx, adm, cfg.Source.RetryTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("source cluster %s: %w", strings.Join(cfg.Source.BootstrapServers, ","), err)
	}
	var topics []topicfilter.TopicInfo
	for _, d := range details.Sorted() {
		topics = append(topics, topicfilter.TopicInfo{Name: d.Topic, Partitions: len(d.Partitions), Internal: d.IsInternal})
	}

	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	configs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		// Without configs compacted inputs are not flagged; the rest holds.
		log.Warn("could not describe topic configs; compacted topics are not detected", "err", err)
	}
	compacted := map[string]bool{}
	for _, rc := range configs {
		if rc.Err != nil {
			log.Warn("could not describe topic config", "topic", rc.Name, "err", rc.Err)
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil && strings.Contains(*c.Value, "compact") {
				compacted[rc.Name] = true
			}
		}
	}
	for i := range topics {
		topics[i].Compacted = compacted[topics[i].Name]
	}

	var others []string
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		log.Warn("could not list consumer groups; internal topics of other applications are recognized by name only", "err", err)
	}
	for _, g := range groups.Groups() {
		if g != cfg.ApplicationID {
			others = append(others, g)
		}
	}
	for _, g := range cfg.OtherApplicationIDs {
		if !slices.Contains(others, g) {
			others = append(others, g)
		}
	}
	slices.Sort(others)
	return topics, others, nil
}
