package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
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
	// be listed (a warning is logged), and GroupsErr then says why.
	Groups    kadm.ListedGroups
	GroupsErr error
	// Classifier is what the decisions were made with: the application's
	// id, internal prefixes and source changelogs, and as other
	// applications every consumer group but the application's own and
	// Options.OtherApplicationIDs, sorted.
	Classifier topicfilter.Classifier
	// Topology is the topology the decisions were made with (also
	// Classifier.Topology): Options.Topology, or nil when none is known.
	Topology *topicfilter.AppTopology
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
// o.OtherApplicationIDs and o.RetryTimeout (0: DefaultRetryTimeout), and
// o.Topology, or when it is nil and o.Source is set, the topology of
// o.ApplicationID's streams group on the source cluster (appTopology:
// StreamsGroupDescribe; a failure there is a warning, never an error).
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
	var topologyWarning string
	if !o.topologyResolved {
		if o.Topology, topologyWarning, err = appTopology(ctx, adm, o, log); err != nil {
			return nil, err
		}
	}
	if len(o.Include) == 0 && o.Topology == nil {
		return nil, ErrNoTopicsSelector
	}
	ct, err := readClusterTopics(ctx, adm, o.RetryTimeout, filter.Literals(), log)
	if err != nil {
		return nil, err
	}
	s := &Selection{Details: ct.details, Configs: ct.configs, Groups: ct.groups, GroupsErr: ct.groupsErr, Topology: o.Topology,
		Classifier: topicfilter.Classifier{ApplicationID: o.ApplicationID, InternalPrefixes: o.InternalPrefixes,
			SourceChangelogTopics: o.SourceChangelogTopics, OtherApplicationIDs: ct.otherGroups(o.ApplicationID, o.OtherApplicationIDs),
			Topology: o.Topology, DeadLetterTopics: o.DeadLetterTopics}}
	s.Decisions, s.Warnings, err = topicfilter.Plan(filter, s.Classifier, ct.infos(),
		topicfilter.PlanOptions{AllowMissing: o.AllowMissingTopics, AllowTopologyMismatch: o.AllowTopologyMismatch,
			IncludeKey: o.IncludeKey, ExcludeKey: o.ExcludeKey, SchemaRegistryTopic: o.SchemaRegistryTopic})
	if o.Topology != nil && !o.Topology.OutputsKnown && len(o.Include) == 0 {
		s.Warnings = append(s.Warnings, noOutputsWarning(o.Topology))
	}
	// The selection's warnings that were only logged before are
	// warnings of the selection too (a backup's manifest and report).
	if topologyWarning != "" {
		s.Warnings = append(s.Warnings, topologyWarning)
	}
	if ct.groupsErr != nil {
		s.Warnings = append(s.Warnings, groupsWarning(ct.groupsErr))
	}
	return s, err
}

// groupsWarning is SelectTopics' warning when the consumer groups could
// not be listed.
func groupsWarning(err error) string {
	return fmt.Sprintf("could not list consumer groups (%v): internal topics of other applications whose application.id starts like this one's cannot be told apart; list them in other_application_ids", err)
}

// noOutputsWarning is SelectTopics' warning for a topology that names no
// outputs (OutputsKnown false) and no include.
func noOutputsWarning(t *topicfilter.AppTopology) string {
	return fmt.Sprintf("the topology (%s) names no output topics (the brokers keep no topology descriptions, KIP-1331), so no output is backed up: "+
		"include them with source.topics.include, give a topology file, or set group.streams.topology.description.plugin.class on the brokers", t.From)
}

// appTopology is the application's topology for a backup with options o:
// o.Topology when set (a --topology file or topology_file); else, when
// o.ApplicationID's group on the source cluster is a streams group
// (KIP-1071, group.protocol=streams), the topology its coordinator holds
// (streamsgroup.Describe through a client of o.Source, then
// Group.AppTopology: From `streams group "<id>" on the source cluster
// (StreamsGroupDescribe)`); nil when none is known. Run resolves it once,
// before it compares an interrupted backup's selection, and SelectTopics
// uses what it returns.
//
// The broker's answer is never fatal: no group of that id, a classic or
// consumer group, and a broker without StreamsGroupDescribe (Kafka before
// 4.1) give nil quietly (debug on log); any other failure (e.g.
// GROUP_AUTHORIZATION_FAILED: DESCRIBE on the group is not granted) is a
// warning on log and nil, so topics are classified by name as before.
func appTopology(ctx context.Context, adm *kadm.Client, o Options, log *slog.Logger) (_ *topicfilter.AppTopology, warning string, _ error) {
	_ = adm // kadm cannot reach a group's coordinator with StreamsGroupDescribe; a client of o.Source does
	if o.Topology != nil || o.ApplicationID == "" || len(o.Source) == 0 {
		return o.Topology, "", nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	failed := func(err error) string {
		log.Warn("could not describe the application's streams group; topics are classified by name", "group", o.ApplicationID, "err", err)
		return fmt.Sprintf("could not describe the application's streams group %q (%v); topics are classified by name: grant DESCRIBE on the group, or give a topology file", o.ApplicationID, err)
	}
	cl, err := kgo.NewClient(o.Source...)
	if err != nil {
		return nil, failed(err), nil
	}
	defer cl.Close()
	g, err := streamsgroup.Describe(ctx, cl, o.ApplicationID)
	switch {
	case errors.Is(err, streamsgroup.ErrNotFound), errors.Is(err, streamsgroup.ErrNotStreamsGroup), errors.Is(err, streamsgroup.ErrUnsupported):
		log.Debug("no streams group topology on the source cluster; topics are classified by name", "group", o.ApplicationID, "why", err)
		return nil, "", nil
	case err != nil:
		if ctx.Err() != nil {
			return nil, "", err
		}
		return nil, failed(err), nil
	}
	at := g.AppTopology(o.ApplicationID)
	if at == nil {
		log.Info("the application's streams group holds no topology yet; topics are classified by name", "group", o.ApplicationID, "state", g.State)
		return nil, "", nil
	}
	log.Info("classifying topics by the streams group's topology", "group", o.ApplicationID, "state", g.State,
		"description", g.DescriptionStatus, "outputs_known", at.OutputsKnown)
	return at, "", nil
}

// clusterTopics is what a selection reads of the source cluster before it
// decides (SelectTopics, Discover): one reading, so that init and a backup
// see the same topics, configs and groups.
type clusterTopics struct {
	// details are every topic (ListTopics), broker-internal ones too.
	details kadm.TopicDetails
	// names are the topics that are not broker-internal (flagged internal,
	// or named "__*"), sorted; configs are theirs (DescribeConfigs).
	names   []string
	configs map[string][]kadm.Config
	// groups are the consumer groups (ListGroups); empty with groupsErr
	// when they could not be listed (a warning on log, not an error).
	groups    kadm.ListedGroups
	groupsErr error
}

// readClusterTopics reads the topics, the configs of those that are not
// broker-internal, and the consumer groups, each request retried for
// retryTimeout (see SelectTopics). Errors name the request and the topic;
// a ListGroups failure is only logged and kept in groupsErr.
//
// A literal include (literals) the listing lacks is asked about once more
// by name, in a fresh Metadata request: a broker whose metadata is behind
// (just restarted, or an answer that names no topic at all) must not make
// a topic that exists "missing", which allow_missing would skip (issue 14).
func readClusterTopics(ctx context.Context, adm *kadm.Client, retryTimeout time.Duration, literals []string, log *slog.Logger) (*clusterTopics, error) {
	details, err := ListTopics(ctx, adm, retryTimeout)
	if err != nil {
		return nil, err
	}
	var absent []string
	for _, l := range literals {
		if _, ok := details[l]; !ok {
			absent = append(absent, l)
		}
	}
	if len(absent) > 0 {
		again, err := listNamedTopics(ctx, adm, retryTimeout, absent)
		if err != nil {
			return nil, err
		}
		for name, d := range again {
			if d.Err == nil {
				log.Info("a topic the listing lacked exists when asked by name", "topic", name)
				details[name] = d
			}
		}
	}
	ct := &clusterTopics{details: details, configs: map[string][]kadm.Config{}}
	for name, d := range details {
		if !d.IsInternal && !strings.HasPrefix(name, "__") {
			ct.names = append(ct.names, name)
		}
	}
	slices.Sort(ct.names)
	if len(ct.names) > 0 {
		err := retrying(ctx, retryTimeout, func() error {
			rcs, err := adm.DescribeTopicConfigs(ctx, ct.names...)
			if err != nil {
				return fmt.Errorf("describe topic configs: %w", err)
			}
			for _, rc := range rcs {
				if rc.Err != nil {
					return fmt.Errorf("describe configs of topic %q: %w", rc.Name, rc.Err)
				}
				ct.configs[rc.Name] = rc.Configs
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	ct.groupsErr = retrying(ctx, retryTimeout, func() (err error) {
		ct.groups, err = adm.ListGroups(ctx)
		return err
	})
	if ct.groupsErr != nil {
		log.Warn("could not list consumer groups; prefix collisions with other application.ids cannot be detected", "err", ct.groupsErr)
	}
	return ct, nil
}

// compacted reports whether topic's cleanup.policy holds "compact" (a
// compacted input may be a source changelog, KIP-295).
func (ct *clusterTopics) compacted(topic string) bool {
	for _, c := range ct.configs[topic] {
		if c.Key == "cleanup.policy" && c.Value != nil && strings.Contains(*c.Value, "compact") {
			return true
		}
	}
	return false
}

// infos are every topic as topicfilter.Plan takes them.
func (ct *clusterTopics) infos() []topicfilter.TopicInfo {
	infos := make([]topicfilter.TopicInfo, 0, len(ct.details))
	for name, d := range ct.details {
		infos = append(infos, topicfilter.TopicInfo{Name: name, Partitions: len(d.Partitions), Internal: d.IsInternal, Compacted: ct.compacted(name)})
	}
	return infos
}

// otherGroups are the consumer groups but app, and extra (a config's
// other_application_ids), sorted: the other applications whose internal
// topics are never selected (KAFKA-14922).
func (ct *clusterTopics) otherGroups(app string, extra []string) []string {
	var others []string
	for g := range ct.groups {
		if g != app {
			others = append(others, g)
		}
	}
	for _, g := range extra {
		if !slices.Contains(others, g) {
			others = append(others, g)
		}
	}
	slices.Sort(others)
	return others
}

// listNamedTopics asks for topics by name in a fresh Metadata request
// (not franz-go's cache), retrying retriable errors for retryTimeout; a
// topic the cluster says it lacks (UNKNOWN_TOPIC_OR_PARTITION) is in the
// answer with that error.
func listNamedTopics(ctx context.Context, adm *kadm.Client, retryTimeout time.Duration, names []string) (kadm.TopicDetails, error) {
	var details kadm.TopicDetails
	err := retrying(ctx, retryTimeout, func() (err error) {
		if details, err = adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...); err != nil {
			return fmt.Errorf("list topics %s: %w", strings.Join(names, ", "), err)
		}
		for _, d := range details.Sorted() {
			if d.Err != nil && retriable(d.Err) {
				return fmt.Errorf("topic %q metadata (Metadata): %w", d.Topic, d.Err)
			}
		}
		return nil
	})
	return details, err
}
