package backup

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Selection is what a backup selects on the source cluster: the topics it
// saw, their configs, the consumer groups, and the verdict on every topic.
// See SelectTopics.
type Selection struct {
	// Details are every topic of the cluster, the broker's internal ones
	// included (ListTopics).
	Details kadm.TopicDetails
	// Configs are the configs of every topic that is not broker-internal
	// (flagged internal, or named "__*"), by topic.
	Configs map[string][]kadm.Config
	// Groups are the cluster's consumer groups; empty when they could not
	// be listed (a warning is logged).
	Groups kadm.ListedGroups
	// Classifier is what the decisions were made with: the application's
	// id, internal prefixes and source changelogs, and as other
	// applications every consumer group but the application's own and
	// Options.OtherApplicationIDs, sorted.
	Classifier topicfilter.Classifier
	// Decisions are one per topic of the cluster, sorted by name
	// (topicfilter.Plan); Warnings are Plan's warnings.
	Decisions []topicfilter.Decision
	Warnings  []string
}

// Selected returns the decisions that select their topic, in name order.
func (s *Selection) Selected() []topicfilter.Decision {
	var out []topicfilter.Decision
	for _, d := range s.Decisions {
		if d.Selected {
			out = append(out, d)
		}
	}
	return out
}

// SelectTopics decides, for every topic of the source cluster, whether a
// backup with options o copies it and why: the one topic selection of a
// backup (Run) and of the topics command, so that what topics shows is what
// a backup copies. It uses o.Include, o.Exclude, o.AllowMissingTopics,
// o.SchemaRegistryTopic,
// o.ApplicationID, o.InternalPrefixes, o.SourceChangelogTopics,
// o.OtherApplicationIDs and o.RetryTimeout (0: DefaultRetryTimeout).
//
// In order: every topic with ListTopics; the configs of the topics that are
// not broker-internal, for cleanup.policy (a compacted input may be a
// source changelog, KIP-295's reuse of a source topic), with
// DescribeConfigs; the consumer groups with ListGroups (their ids are other
// applications whose internal topics are never selected, KAFKA-14922); then
// topicfilter.Plan. Retriable errors of each request (kerr's retriable
// codes, e.g. LEADER_NOT_AVAILABLE, REQUEST_TIMED_OUT) are retried with
// backoff for up to o.RetryTimeout; then, or on any other error, the error
// names the request and the topic. Groups that cannot be listed are a
// warning on log (nil: discarded), not an error.
//
// A literal include that names no topic (without o.AllowMissingTopics)
// returns a *topicfilter.MissingTopicsError together with the Selection,
// whose Decisions say what was found. No topic selected at all is not an
// error here: the caller decides (Run fails with ErrNothingSelected).
func SelectTopics(ctx context.Context, adm *kadm.Client, o Options, log *slog.Logger) (*Selection, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = DefaultRetryTimeout
	}
	filter, err := topicfilter.NewFilter(o.Include, o.Exclude)
	if err != nil {
		return nil, err
	}
	details, err := ListTopics(ctx, adm, o.RetryTimeout)
	if err != nil {
		return nil, err
	}
	var names []string
	for name, d := range details {
		if !d.IsInternal && !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	configs := map[string][]kadm.Config{}
	if len(names) > 0 {
		err := retrying(ctx, o.RetryTimeout, func() error {
			rcs, err := adm.DescribeTopicConfigs(ctx, names...)
			if err != nil {
				return fmt.Errorf("describe topic configs: %w", err)
			}
			for _, rc := range rcs {
				if rc.Err != nil {
					return fmt.Errorf("describe configs of topic %q: %w", rc.Name, rc.Err)
				}
				configs[rc.Name] = rc.Configs
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var others []string
	var groups kadm.ListedGroups
	gerr := retrying(ctx, o.RetryTimeout, func() (err error) {
		groups, err = adm.ListGroups(ctx)
		return err
	})
	if gerr != nil {
		log.Warn("could not list consumer groups; prefix collisions with other application.ids cannot be detected", "err", gerr)
	}
	for g := range groups {
		if g != o.ApplicationID {
			others = append(others, g)
		}
	}
	for _, g := range o.OtherApplicationIDs {
		if !slices.Contains(others, g) {
			others = append(others, g)
		}
	}
	slices.Sort(others)
	infos := make([]topicfilter.TopicInfo, 0, len(details))
	for name, d := range details {
		compacted := false
		for _, c := range configs[name] {
			if c.Key == "cleanup.policy" && c.Value != nil && strings.Contains(*c.Value, "compact") {
				compacted = true
			}
		}
		infos = append(infos, topicfilter.TopicInfo{Name: name, Partitions: len(d.Partitions), Internal: d.IsInternal, Compacted: compacted})
	}
	s := &Selection{Details: details, Configs: configs, Groups: groups,
		Classifier: topicfilter.Classifier{ApplicationID: o.ApplicationID, InternalPrefixes: o.InternalPrefixes,
			SourceChangelogTopics: o.SourceChangelogTopics, OtherApplicationIDs: others}}
	s.Decisions, s.Warnings, err = topicfilter.Plan(filter, s.Classifier, infos, topicfilter.PlanOptions{AllowMissing: o.AllowMissingTopics, SchemaRegistryTopic: o.SchemaRegistryTopic})
	return s, err
}
