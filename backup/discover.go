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
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// DiscoverOptions tunes Discover.
type DiscoverOptions struct {
	// ApplicationID is the Kafka Streams application.id to discover
	// (also its consumer group id and the prefix of its internal
	// topics). Required.
	ApplicationID string
	// Topology is the application's topology when one is known: from a
	// Topology#describe() text the user gives (topicfilter.ParseTopology)
	// or from the broker's streams group (KIP-1071). nil: the application
	// is discovered from its group's committed offsets and the reset
	// tool's naming rule, and its outputs stay unknown.
	Topology *topicfilter.AppTopology
	// Described is the parsed Topology#describe() text Topology came from
	// (topicfilter.ParseTopology of a --topology file, or a streams
	// group's KIP-1331 description), when there is one: the reasons then
	// name the sub-topologies ("read by sub-topology 0"). Optional.
	Described *topicfilter.Topology
	// RetryTimeout bounds the retries of each request (retriable Kafka
	// errors, as in SelectTopics); 0: DefaultRetryTimeout.
	RetryTimeout time.Duration
}

// Role is what a discovered topic is to the application.
type Role string

// The roles of the topics Discover selects.
const (
	RoleInput     Role = "input"
	RoleOutput    Role = "output"
	RoleChangelog Role = "changelog"
)

// FoundTopic is a topic of the application that a backup should copy.
type FoundTopic struct {
	Topic string
	Role  Role
	// Why says, for people, how it was found: e.g. `read by the topology
	// (topology file "x.txt")`, `the group "app" has committed offsets on
	// it`, `changelog of store "counts" (the reset tool's naming rule)`.
	Why string
	// SourceChangelog is an input a state store uses as its changelog
	// (topology.optimization=all, reuse.ktable.source.topics): the
	// topology names a source table's store whose
	// "<application.id>-<store>-changelog" is not on the cluster.
	SourceChangelog bool
	// MaybeSourceChangelog is a compacted input when no topology says
	// whether a store reads it as its changelog.
	MaybeSourceChangelog bool
}

// LeftOutTopic is a topic of (or near) the application that a backup
// does not copy, with the reason.
type LeftOutTopic struct {
	Topic  string
	Reason string
	// OtherApplicationID is set for an internal topic of another
	// application whose application.id extends this one's (KAFKA-14922).
	OtherApplicationID string
	// Repartition is set for a repartition or foreign-key-join topic of
	// this application: never copied as data, its in-flight tail is.
	Repartition bool
}

// Discovery is what Discover found of one application on a cluster.
type Discovery struct {
	ApplicationID string
	// Method says how the application was discovered, for people: the
	// topology's From, or `the committed offsets of consumer group "app"
	// and the internal-topic naming rule of Kafka's StreamsResetter`.
	Method string
	// FromTopology is true when a topology was the authority; then
	// OutputsKnown is the topology's.
	FromTopology bool
	OutputsKnown bool
	// ClusterID is the cluster's id from its metadata ("" when the broker
	// does not say).
	ClusterID string
	// Topics are the topics to back up, sorted by name.
	Topics []FoundTopic
	// LeftOut are the application's topics, and the topics under its
	// prefix, that a backup leaves out, sorted by name.
	LeftOut []LeftOutTopic
	// OtherApplicationIDs are the consumer groups that own internal topics
	// under this application's prefix (KAFKA-14922), sorted.
	OtherApplicationIDs []string
	// BrokerInternal are the broker's own topics ("__*" or flagged
	// internal), never backed up; sorted.
	BrokerInternal []string
	// Unrelated are the other topics of the cluster: not read or written
	// by the application as far as Discover can tell (without a topology,
	// its outputs are among them), sorted.
	Unrelated []string
	// Notes are what Discover could not find out (e.g. the consumer groups
	// could not be listed), for people.
	Notes []string
	// SchemaRegistryTopic is DefaultSchemaRegistryTopic when the cluster
	// holds it and Discover did not select it: a config may back it up
	// (schema_registry), which init proposes in a comment and never does
	// by itself; "" otherwise.
	SchemaRegistryTopic string
}

// DefaultSchemaRegistryTopic is the Schema Registry's default storage
// topic (Confluent Schema Registry's kafkastore.topic default): the topic
// a config's schema_registry: {} names.
const DefaultSchemaRegistryTopic = "_schemas"

// Include returns the topics to back up, sorted: the literal
// source.topics.include of the application's config.
func (d *Discovery) Include() []string {
	out := make([]string, len(d.Topics))
	for i, t := range d.Topics {
		out[i] = t.Topic
	}
	return out
}

// SourceChangelogs returns the inputs known to be source-topic
// changelogs, sorted: the config's source_changelog_topics.
func (d *Discovery) SourceChangelogs() []string {
	var out []string
	for _, t := range d.Topics {
		if t.SourceChangelog {
			out = append(out, t.Topic)
		}
	}
	return out
}

// ApplicationNotFoundError is Discover's error when nothing on the cluster
// belongs to the application: Looked says what was looked for.
type ApplicationNotFoundError struct {
	ApplicationID string
	Looked        []string
}

func (e *ApplicationNotFoundError) Error() string {
	return fmt.Sprintf("application.id %q not found on the cluster: %s", e.ApplicationID, strings.Join(e.Looked, "; "))
}

// Discover finds the topics of Kafka Streams application
// o.ApplicationID on the cluster behind adm: the inputs, outputs and
// changelogs a backup copies, and what it leaves out and why.
//
// With o.Topology, the topology is the authority and Discover classifies
// nothing itself: it takes SelectTopics' selection with no include and that
// topology (topicfilter.Plan with Classifier.Topology, what `topics -c`
// selects on a config with topology_file and no include): the selected
// topics are found, with their role from Decision.Role and their Why from
// Decision.Reason (and the sub-topologies of o.Described), the others are
// left out with Plan's reasons, and Plan's warnings (topology topics not
// on the cluster, source patterns that cannot be translated) are Notes.
//
// Without one, the inputs are the topics the application.id consumer
// group has committed offsets on (OffsetFetch) that are not internal
// topics, and the changelogs are the cluster's topics under
// "<application.id>-" that pass Kafka's
// StreamsResetter.matchesInternalTopicFormat and end in "-changelog";
// outputs are then unknown (Discovery.OutputsKnown false). Repartition and
// foreign-key-join topics are left out (a backup captures their in-flight
// tails), and so are internal topics of other applications whose consumer
// group id extends the prefix (KAFKA-14922,
// topicfilter.Classifier.OtherApplicationIDs). The found set is checked
// with topicfilter.Plan against a literal include of it, so that a backup
// with that include selects exactly them.
//
// Requests: those of SelectTopics (ListTopics, DescribeConfigs of the
// topics, ListGroups), OffsetFetch of the group (without a topology) and
// Metadata (the cluster id); retriable errors are retried for
// o.RetryTimeout. A ListGroups failure is a Note, not an error. Nothing of
// the application on the cluster returns an *ApplicationNotFoundError.
func Discover(ctx context.Context, adm *kadm.Client, o DiscoverOptions, log *slog.Logger) (*Discovery, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	app := o.ApplicationID
	if app == "" {
		return nil, errors.New("discover: no application.id")
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = DefaultRetryTimeout
	}
	d := &Discovery{ApplicationID: app}
	var err error
	if o.Topology != nil {
		err = discoverByTopology(ctx, adm, d, o, log)
	} else {
		err = discoverByOffsets(ctx, adm, d, o, log)
	}
	if err != nil {
		return nil, err
	}
	if err := retrying(ctx, o.RetryTimeout, func() error {
		m, err := adm.BrokerMetadata(ctx)
		d.ClusterID = m.Cluster
		return err
	}); err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	slices.Sort(d.BrokerInternal)
	slices.Sort(d.Unrelated)
	if slices.Contains(d.Unrelated, DefaultSchemaRegistryTopic) {
		d.SchemaRegistryTopic = DefaultSchemaRegistryTopic
	}
	slices.Sort(d.OtherApplicationIDs)
	d.OtherApplicationIDs = slices.Compact(d.OtherApplicationIDs)
	slices.SortFunc(d.Topics, func(a, b FoundTopic) int { return strings.Compare(a.Topic, b.Topic) })
	slices.SortFunc(d.LeftOut, func(a, b LeftOutTopic) int { return strings.Compare(a.Topic, b.Topic) })
	return d, nil
}

// groupsNote is Discovery's note when the consumer groups could not be
// listed.
func groupsNote(app string, err error) string {
	return fmt.Sprintf("the consumer groups could not be listed (%v): internal topics of other applications whose application.id starts with %q cannot be told apart; list them in other_application_ids", err, app+"-")
}

// discoverByTopology fills d from SelectTopics' topology-only selection
// (no include, o.Topology): see Discover.
func discoverByTopology(ctx context.Context, adm *kadm.Client, d *Discovery, o DiscoverOptions, log *slog.Logger) error {
	app, t := o.ApplicationID, o.Topology
	d.FromTopology, d.OutputsKnown, d.Method = true, t.OutputsKnown, t.From
	// AllowMissingTopics: a topology input not on the cluster is a note of
	// init's, not a refusal (a backup refuses it).
	sel, err := SelectTopics(ctx, adm, Options{ApplicationID: app, Topology: t, RetryTimeout: o.RetryTimeout, AllowMissingTopics: true}, log)
	if err != nil {
		return fmt.Errorf("discover: %w", err)
	}
	if sel.GroupsErr != nil {
		d.Notes = append(d.Notes, groupsNote(app, sel.GroupsErr))
	}
	for _, w := range sel.Warnings {
		if sel.GroupsErr != nil && w == groupsWarning(sel.GroupsErr) {
			continue // groupsNote above
		}
		if w != noOutputsWarning(t) { // the file says that outputs are not known (OutputsKnown)
			d.Notes = append(d.Notes, strings.TrimSuffix(w, topicfilter.AllowMissingSkipped)) // init allows them, not the config
		}
	}
	subs := subTopologies(o.Described, app)
	from := appTopologyName(t)
	for _, dec := range sel.Decisions {
		reason := strings.TrimPrefix(strings.TrimPrefix(dec.Reason, "selected: "), "not selected: ")
		switch {
		case dec.BrokerInternal:
			d.BrokerInternal = append(d.BrokerInternal, dec.Topic)
		case dec.Selected:
			d.Topics = append(d.Topics, FoundTopic{Topic: dec.Topic, Role: foundRole(dec.Role), SourceChangelog: dec.SourceChangelog,
				Why: subs.why(dec, from, reason)})
		case dec.OtherApplicationID != "" && !extendsPrefix(dec.OtherApplicationID, o.ApplicationID):
			d.Unrelated = append(d.Unrelated, dec.Topic) // another application's, not under this prefix
		case dec.OtherApplicationID != "":
			d.LeftOut = append(d.LeftOut, LeftOutTopic{Topic: dec.Topic, OtherApplicationID: dec.OtherApplicationID,
				Reason: reason + "; include it by hand if it is this application's"})
			if slices.Contains(sel.Classifier.OtherApplicationIDs, dec.OtherApplicationID) {
				d.OtherApplicationIDs = append(d.OtherApplicationIDs, dec.OtherApplicationID)
			}
		case dec.Class == topicfilter.Repartition:
			d.LeftOut = append(d.LeftOut, LeftOutTopic{Topic: dec.Topic, Repartition: true, Reason: reason})
		case dec.Role != "" || dec.Class != topicfilter.External:
			d.LeftOut = append(d.LeftOut, LeftOutTopic{Topic: dec.Topic, Reason: reason})
		default:
			d.Unrelated = append(d.Unrelated, dec.Topic)
		}
	}
	if len(d.Topics) == 0 {
		return &ApplicationNotFoundError{ApplicationID: app, Looked: []string{fmt.Sprintf("none of the topics of %s is on the cluster", from)}}
	}
	return nil
}

// foundRole is the Role of a topic a topology selects (Decision.Role):
// a global store's input and a source changelog are inputs, a dead-letter
// queue topic is an output.
func foundRole(role string) Role {
	switch role {
	case topicfilter.RoleOutput, topicfilter.RoleDeadLetter:
		return RoleOutput
	case topicfilter.RoleChangelog:
		return RoleChangelog
	}
	return RoleInput
}

// extendsPrefix reports whether application.id other extends app's
// internal-topic prefix ("<app>-..."): only such an application's internal
// topics can be mistaken for app's (KAFKA-14922), so only it belongs in
// other_application_ids.
func extendsPrefix(other, app string) bool {
	return app != "" && strings.HasPrefix(other, app+"-")
}

// discoverByOffsets fills d from the group's committed offsets and the
// reset tool's naming rule: see Discover.
func discoverByOffsets(ctx context.Context, adm *kadm.Client, d *Discovery, o DiscoverOptions, log *slog.Logger) error {
	app := o.ApplicationID
	ct, err := readClusterTopics(ctx, adm, o.RetryTimeout, nil, log)
	if err != nil {
		return err
	}
	for name, td := range ct.details {
		if td.IsInternal || strings.HasPrefix(name, "__") {
			d.BrokerInternal = append(d.BrokerInternal, name)
		}
	}
	if ct.groupsErr != nil {
		d.Notes = append(d.Notes, groupsNote(app, ct.groupsErr))
	}
	others := ct.otherGroups(app, nil)
	names := ct.names
	exists := map[string]bool{}
	for _, n := range names {
		exists[n] = true
	}
	found := map[string]*FoundTopic{}
	leftOut := map[string]*LeftOutTopic{}
	add := func(topic string, role Role, why string) {
		if _, ok := found[topic]; !ok {
			found[topic] = &FoundTopic{Topic: topic, Role: role, Why: why}
		}
	}
	// known are the topics the group accounts for: the prefix scan below
	// does not judge them again.
	known := map[string]bool{}

	d.Method = fmt.Sprintf("the committed offsets of consumer group %q and the internal-topic naming rule of Kafka's StreamsResetter", app)
	committed, err := committedTopics(ctx, adm, app, o.RetryTimeout)
	if err != nil {
		return err
	}
	c := topicfilter.Classifier{ApplicationID: app, OtherApplicationIDs: others}
	for _, topic := range committed {
		if strings.HasPrefix(topic, "__") {
			continue
		}
		class, _, _ := c.Classify(topic)
		if class != topicfilter.External {
			continue // its own repartition topic (or changelog): judged by the prefix scan
		}
		known[topic] = true
		if !exists[topic] {
			leftOut[topic] = &LeftOutTopic{Topic: topic, Reason: fmt.Sprintf("the group %q has committed offsets on it, but it is not on the cluster (deleted?)", app)}
			continue
		}
		add(topic, RoleInput, fmt.Sprintf("the group %q has committed offsets on it", app))
	}
	_, member := ct.groups[app]
	if len(committed) == 0 && !member && !underPrefix(names, app) {
		looked := []string{
			fmt.Sprintf("no consumer group %q (ListGroups)", app),
			fmt.Sprintf("no committed offsets of group %q (OffsetFetch)", app),
			fmt.Sprintf("no topic named %q (%d topics on the cluster)", app+"-*", len(names)),
		}
		return &ApplicationNotFoundError{ApplicationID: app, Looked: looked}
	}
	if len(committed) == 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("the group %q has no committed offsets, so its inputs are not known: add them to source.topics.include (or give --topology FILE)", app))
	}

	// The topics under the application's prefix that the group did not
	// account for, by the reset tool's naming rule; Plan (with no include)
	// says which are other applications' internal topics.
	all, _, err := planLiteral(c, nil, ct.infos())
	if err != nil {
		return err
	}
	owner := map[string]string{}
	for _, dec := range all {
		owner[dec.Topic] = dec.OtherApplicationID
	}
	for _, topic := range names {
		if known[topic] {
			continue
		}
		class, _, reason := c.Classify(topic)
		other := owner[topic]
		switch {
		case other != "" && !extendsPrefix(other, app):
			d.Unrelated = append(d.Unrelated, topic) // another application's, not under this prefix
		case other != "":
			leftOut[topic] = &LeftOutTopic{Topic: topic, OtherApplicationID: other, Reason: reason}
			d.OtherApplicationIDs = append(d.OtherApplicationIDs, other)
		case class == topicfilter.Changelog:
			add(topic, RoleChangelog, reason+", by the reset tool's naming rule")
		case class == topicfilter.Repartition:
			leftOut[topic] = &LeftOutTopic{Topic: topic, Repartition: true, Reason: reason + ": never backed up as data; its in-flight tail is captured"}
		default:
			d.Unrelated = append(d.Unrelated, topic)
		}
	}
	for _, f := range found {
		if f.Role == RoleInput && ct.compacted(f.Topic) {
			f.MaybeSourceChangelog = true
		}
	}

	// What a backup with the found set as a literal include selects: a
	// topic it would not (an input named like a repartition topic of this
	// application, say) is left out with Plan's reason.
	var include []string
	for topic := range found {
		include = append(include, topic)
	}
	slices.Sort(include)
	if len(include) == 0 {
		return &ApplicationNotFoundError{ApplicationID: app, Looked: []string{fmt.Sprintf("nothing to back up: %s", d.Method)}}
	}
	decisions, warnings, err := planLiteral(c, include, ct.infos())
	if err != nil {
		return err
	}
	// A changelog found by name whose store name is a name Kafka Streams
	// generates after a prefix belongs, most likely, to an application
	// whose group is gone (Plan's warning says which).
	for _, w := range warnings {
		for topic, f := range found {
			if f.Role == RoleChangelog && strings.HasPrefix(w, fmt.Sprintf("changelog %q is taken as store", topic)) {
				delete(found, topic)
				leftOut[topic] = &LeftOutTopic{Topic: topic, Reason: strings.TrimSuffix(w, "; otherwise exclude it") + "; if it is this application's, include it by hand"}
			}
		}
	}
	for _, dec := range decisions {
		if f, ok := found[dec.Topic]; ok && !dec.Selected {
			delete(found, dec.Topic)
			leftOut[dec.Topic] = &LeftOutTopic{Topic: dec.Topic, Reason: fmt.Sprintf("found as %s (%s), but a backup would not copy it: %s", f.Role, f.Why, strings.TrimPrefix(dec.Reason, "not selected: "))}
		}
	}
	for _, f := range found {
		d.Topics = append(d.Topics, *f)
	}
	for _, l := range leftOut {
		d.LeftOut = append(d.LeftOut, *l)
	}
	return nil
}

// appTopologyName names a topology for people: its From, or "the topology".
func appTopologyName(a *topicfilter.AppTopology) string {
	if a.From == "" {
		return "the topology"
	}
	return a.From
}

// subTopologyIndex says which sub-topologies read, write and keep the
// stores of which topics (broker names), from a describe() text.
type subTopologyIndex struct {
	readBy, writtenBy, storeIn map[string][]int
}

// subTopologies indexes t's sub-topologies for application app; an empty
// index for a nil t.
func subTopologies(t *topicfilter.Topology, app string) subTopologyIndex {
	x := subTopologyIndex{readBy: map[string][]int{}, writtenBy: map[string][]int{}, storeIn: map[string][]int{}}
	if t == nil {
		return x
	}
	note := func(m map[string][]int, topic string, id int) {
		if !slices.Contains(m[topic], id) {
			m[topic] = append(m[topic], id)
		}
	}
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			for _, topic := range n.Topics {
				note(x.readBy, topic, st.ID)
			}
			if n.Kind == topicfilter.SinkNode && n.Topic != "" {
				note(x.writtenBy, n.Topic, st.ID)
			}
			for _, store := range n.Stores {
				note(x.storeIn, app+"-"+store+"-changelog", st.ID)
			}
		}
	}
	return x
}

// name is "sub-topology 0" or "sub-topologies 0, 2" for ids, or dflt for
// none.
func (subTopologyIndex) name(ids []int, dflt string) string {
	if len(ids) == 0 {
		return dflt
	}
	ids = slices.Sorted(slices.Values(ids))
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(s) == 1 {
		return "sub-topology " + s[0]
	}
	return "sub-topologies " + strings.Join(s, ", ")
}

// planLiteral is topicfilter.Plan of infos with c and include as a
// literal include (nil: none) and no exclude.
func planLiteral(c topicfilter.Classifier, include []string, infos []topicfilter.TopicInfo) ([]topicfilter.Decision, []string, error) {
	f, err := topicfilter.NewFilter(include, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("discover: %w", err)
	}
	ds, ws, err := topicfilter.Plan(f, c, infos, topicfilter.PlanOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("discover: %w", err)
	}
	return ds, ws, nil
}

// underPrefix reports whether a topic of names starts with app+"-".
func underPrefix(names []string, app string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, app+"-") })
}

// committedTopics returns the topics group has committed offsets on
// (OffsetFetch), sorted; none for a group that does not exist.
func committedTopics(ctx context.Context, adm *kadm.Client, group string, retryTimeout time.Duration) ([]string, error) {
	var topics []string
	err := retrying(ctx, retryTimeout, func() error {
		resps, err := adm.FetchOffsets(ctx, group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			topics = nil
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetch the committed offsets of group %q: %w", group, err)
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("fetch the committed offsets of group %q: %w", group, err)
		}
		topics = topics[:0]
		for topic, ps := range resps {
			for _, r := range ps {
				if r.At >= 0 {
					topics = append(topics, topic)
					break
				}
			}
		}
		return nil
	})
	slices.Sort(topics)
	return topics, err
}

// why is a found topic's Why with a topology: which sub-topologies read,
// write or keep it (from the describe() text, when there is one), the
// topology's name, and Plan's reason for selecting it, e.g.
// `read by sub-topology 0 (topology file "x.txt"); input topic of the
// topology`.
func (x subTopologyIndex) why(dec topicfilter.Decision, from, reason string) string {
	var by string
	switch dec.Role {
	case topicfilter.RoleInput, topicfilter.RoleSourceChangelog, topicfilter.RoleGlobalInput:
		by = x.name(x.readBy[dec.Topic], "")
		if by != "" {
			by = "read by " + by
		}
	case topicfilter.RoleOutput:
		by = x.name(x.writtenBy[dec.Topic], "")
		if by != "" {
			by = "written by " + by
		}
	case topicfilter.RoleChangelog:
		by = x.name(x.storeIn[dec.Topic], "")
		if by != "" {
			by = "a store of " + by
		}
	}
	if dec.Role == topicfilter.RoleSourceChangelog {
		// init's comment names the role ("input, source-topic changelog"):
		// keep of Plan's reason only what it adds, the store.
		const what = "source-topic changelog: an input a store restores from"
		if note, ok := strings.CutPrefix(reason, what+" ("); ok {
			reason = strings.TrimSuffix(note, ")")
		} else if reason == what {
			reason = "an input a store restores from"
		}
	}
	if by == "" {
		return fmt.Sprintf("%s (%s)", reason, from)
	}
	return fmt.Sprintf("%s (%s); %s", by, from, reason)
}
