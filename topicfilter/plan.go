package topicfilter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PlanOptions tunes [Plan].
type PlanOptions struct {
	// AllowMissing turns a literal include naming a topic that is not in the
	// topic list into a warning instead of a *[MissingTopicsError]
	// (config: source.topics.allow_missing, default false).
	AllowMissing bool
	// AllowTopologyMismatch turns the refusal of a topology's input,
	// changelog or source changelog that the include/exclude patterns do
	// not select (a *[TopologyMismatchError]) into warnings (config:
	// source.topics.allow_topology_mismatch, default false).
	AllowTopologyMismatch bool
	// IncludeKey and ExcludeKey name the include and exclude lists in the
	// fixes of a *[TopologyMismatchError], e.g.
	// "source.topics.include (line 12 of backup.yaml)"; defaults
	// "source.topics.include" and "source.topics.exclude".
	IncludeKey, ExcludeKey string
	// SchemaRegistryTopic is the Schema Registry's storage topic
	// (config: schema_registry.topic; "" for none). Plan selects it
	// whatever the filter says, as an External topic with
	// Decision.SchemaRegistry set, and never warns that it looks like
	// another system's topic. When it does not exist Plan returns a
	// *[MissingTopicsError] naming it (a warning with AllowMissing).
	SchemaRegistryTopic string
}

// AllowMissingSkipped ends Plan's warning for a topology input absent from
// the cluster with PlanOptions.AllowMissing.
const AllowMissingSkipped = "; skipped (source.topics.allow_missing: true)"

// MissingTopicsError is returned by [Plan] when literal includes name topics
// that do not exist, so that a typo never makes a backup "succeed" without
// the topic.
type MissingTopicsError struct {
	Topics []string // sorted
	// TopologyInputs are the topology's input topics and global store
	// inputs absent from the cluster (sorted; not in Topics), named by the
	// topology TopologyFrom (AppTopology.From): refused as a missing
	// literal include is, since a backup without the application's input
	// cannot restore it.
	TopologyInputs []string
	TopologyFrom   string
	// SchemaRegistryTopic is PlanOptions.SchemaRegistryTopic when that
	// topic is missing too ("" otherwise); it is not in Topics.
	SchemaRegistryTopic string
}

// Error reads, for one topic: include names topic "payments", which does
// not exist on the cluster; create the topic, fix the name, or set
// source.topics.allow_missing: true.
//
// A missing topology input reads: the topology (topology file "app.txt")
// names input topic "orders", which does not exist on the cluster; create
// it (or start the application once it exists), fix the topology, or set
// source.topics.allow_missing: true.
func (e *MissingTopicsError) Error() string {
	var msgs []string
	if len(e.Topics) > 0 || (e.SchemaRegistryTopic == "" && len(e.TopologyInputs) == 0) {
		msgs = append(msgs, e.includeError())
	}
	if len(e.TopologyInputs) > 0 {
		q := make([]string, len(e.TopologyInputs))
		for i, t := range e.TopologyInputs {
			q[i] = fmt.Sprintf("%q", t)
		}
		what, does := "input topic "+q[0]+", which does not exist", "it"
		if len(q) > 1 {
			what, does = "input topics "+strings.Join(q, ", ")+", which do not exist", "them"
		}
		msgs = append(msgs, fmt.Sprintf("the topology (%s) names %s on the cluster; create %s, fix the topology, or set source.topics.allow_missing: true", e.TopologyFrom, what, does))
	}
	if e.SchemaRegistryTopic != "" {
		msgs = append(msgs, fmt.Sprintf("schema_registry.topic names topic %q, which does not exist on the cluster; fix schema_registry.topic (the registry's kafkastore.topic), remove schema_registry, or set source.topics.allow_missing: true", e.SchemaRegistryTopic))
	}
	return strings.Join(msgs, "; ")
}

func (e *MissingTopicsError) includeError() string {
	q := make([]string, len(e.Topics))
	for i, t := range e.Topics {
		q[i] = fmt.Sprintf("%q", t)
	}
	if len(q) == 1 {
		return fmt.Sprintf("include names topic %s, which does not exist on the cluster; create the topic, fix the name, or set source.topics.allow_missing: true", q[0])
	}
	return fmt.Sprintf("include names topics %s, which do not exist on the cluster; create the topics, fix the names, or set source.topics.allow_missing: true",
		strings.Join(q, ", "))
}

// Plan applies the filter and the classifier to the topics of a cluster.
//
// It returns one Decision per topic, sorted by name. A topic is Selected
// only when f matches it (an include matches, no exclude matches) and it is
// not a repartition topic, not broker-internal (name starts with "__" or
// TopicInfo.Internal), and not an internal topic of another application.
// Every Decision has a Reason, starting with "selected: " or
// "not selected: ".
//
// Warnings, for people, in a stable order: missing literal includes (with
// AllowMissing), include patterns that matched repartition topics or other
// applications' internal topics (dropped), selected changelogs whose store
// name is a name Kafka Streams generates after a prefix (probably another
// application's, see Classifier.OtherApplicationIDs), selected compacted external
// topics not declared in Classifier.SourceChangelogTopics (they may be a
// store's source changelog, and then a point-in-time restore of them is
// unsafe), declared source changelogs that are missing or not selected, and
// selected names that look like other systems' topics ("_schemas",
// "connect-offsets", ...).
//
// With a topology (c.Topology) the topology is the authority: every topic
// it names gets its Role (and a Class to match), and an internal-format
// topic under the application's prefix that it does not name is another
// application's (KAFKA-14922), never selected, with no group or
// OtherApplicationIDs needed. An empty include then selects exactly the
// topology's inputs (source patterns: Java regular expressions matched
// against the whole name), global stores' inputs, outputs, dead-letter
// topics, changelogs and source changelogs present on the cluster (a
// source table's input is its store's changelog when the store's
// "-changelog" topic is absent: topology.optimization=all); repartition
// and FK-join topics never. With an include, a topology input, changelog
// or source changelog the patterns leave out returns a
// *[TopologyMismatchError] naming each fix (o.AllowTopologyMismatch: a
// warning); an output left out is a warning. Topology changelogs absent
// from the cluster, and source patterns that match no topic, are
// warnings; topology inputs absent from it are refused as missing literal
// includes are (a *[MissingTopicsError] with TopologyInputs; a warning
// with o.AllowMissing).
//
// A PlanOptions.SchemaRegistryTopic that is one of the application's own
// topics (Classifier.SchemaRegistryConflict) returns a
// *[SchemaRegistryTopicError], the topic planned in its own role.
//
// Errors: a nil f, or a topic named twice in topics, returns only an error.
// Literal includes (see [Filter.Literals]) absent from topics return a
// *[MissingTopicsError] unless o.AllowMissing; the decisions and warnings
// are then returned too, complete, so a dry run can still show them (and
// so with a *TopologyMismatchError; both at once are joined, errors.As
// finds either).
func Plan(f *Filter, c Classifier, topics []TopicInfo, o PlanOptions) (decisions []Decision, warnings []string, err error) {
	if f == nil {
		return nil, nil, fmt.Errorf("plan topics: nil filter")
	}
	sorted := slices.Clone(topics)
	slices.SortFunc(sorted, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	exists := make(map[string]bool, len(sorted))
	for i, t := range sorted {
		if i > 0 && sorted[i-1].Name == t.Name {
			return nil, nil, fmt.Errorf("plan topics: topic %q appears twice in the topic list", t.Name)
		}
		exists[t.Name] = true
	}

	// A registry topic that is one of the application's own is refused
	// and planned in its own role.
	var registryErr error
	if why := c.SchemaRegistryConflict(o.SchemaRegistryTopic); why != "" {
		registryErr = &SchemaRegistryTopicError{Topic: o.SchemaRegistryTopic, Why: why}
		o.SchemaRegistryTopic = ""
	}

	var missing []string
	for _, l := range f.Literals() {
		if !exists[l] {
			missing = append(missing, l)
		}
	}
	slices.Sort(missing)
	missingRegistry := o.SchemaRegistryTopic != "" && !exists[o.SchemaRegistryTopic]
	if o.AllowMissing {
		for _, m := range missing {
			warnings = append(warnings, fmt.Sprintf("include names topic %q, which does not exist on the cluster; skipped (source.topics.allow_missing: true)", m))
		}
		if missingRegistry {
			warnings = append(warnings, fmt.Sprintf("schema_registry.topic names topic %q, which does not exist on the cluster; skipped (source.topics.allow_missing: true): the backup holds no schemas", o.SchemaRegistryTopic))
		}
	}

	literal := map[string]bool{}
	for _, l := range f.Literals() {
		literal[l] = true
	}
	// dropped[pattern] lists the topics an include matched but Plan dropped
	// for a reason the pattern's author may not expect.
	droppedRepartition := map[string][]string{}
	droppedOther := map[string][]string{}
	otherApps := map[string][]string{} // include pattern -> application.ids of droppedOther
	var compactedWarnings, systemWarnings, storeWarnings []string
	selected := map[string]bool{}

	var tr roles
	var mismatch, topologyWarnings []string
	if c.Topology != nil {
		names := make([]string, len(sorted))
		for i, t := range sorted {
			names[i] = t.Name
		}
		tr = c.topologyRoles(names, exists)
	}
	includeKey, excludeKey := o.IncludeKey, o.ExcludeKey
	if includeKey == "" {
		includeKey = "source.topics.include"
	}
	if excludeKey == "" {
		excludeKey = "source.topics.exclude"
	}
	// leftOut notes a topology topic the patterns do not select: a
	// refusal for inputs and state, a warning for outputs.
	leftOut := func(topic, role, exc string) {
		fix := fmt.Sprintf("add %q to %s", topic, includeKey)
		if exc != "" {
			fix = fmt.Sprintf("it is excluded by pattern %q: remove the pattern from %s or narrow it", exc, excludeKey)
		}
		line := fmt.Sprintf("%s %q (%s) is not selected: %s", roleWord(role), topic, c.Topology.From, fix)
		if stateRole(role) {
			mismatch = append(mismatch, line)
			return
		}
		topologyWarnings = append(topologyWarnings, line+" (outputs are not needed to restore the application's state)")
	}
	topologyOnly := c.Topology != nil && len(f.include) == 0

	decisions = make([]Decision, 0, len(sorted))
	for _, t := range sorted {
		v := c.classify(t.Name)
		d := Decision{
			Topic:              t.Name,
			Class:              v.class,
			SourceChangelog:    v.sourceChangelog,
			OtherApplicationID: v.otherApp,
			BrokerInternal:     v.brokerInternal || t.Internal,
			Partitions:         t.Partitions,
		}
		role, hasRole := tr.role[t.Name]
		notOurs := ""
		if c.Topology != nil {
			if hasRole && !d.BrokerInternal {
				d.Role, d.Class, d.SourceChangelog, d.OtherApplicationID = role, roleClass(role), role == RoleSourceChangelog, ""
				v.reason = roleReason(t.Name, role, tr.note[t.Name])
				if role == RoleChangelog && v.store != "" {
					v.reason = fmt.Sprintf("changelog of the topology's store %q", v.store)
				}
			} else if v.class != External && v.prefix != "" {
				notOurs = c.likelyOwner(t.Name, v.prefix)
				d.OtherApplicationID = notOurs
				d.Class = External
				v.reason = fmt.Sprintf("an internal-topic name under %q that the topology (%s) does not name: not this application's, probably an internal topic of application.id %q (KAFKA-14922)", v.prefix+"-", c.Topology.From, notOurs)
			} else if !d.BrokerInternal {
				v.reason += fmt.Sprintf("; the topology (%s) does not name it", c.Topology.From)
			}
		}
		inc := f.firstInclude(t.Name)
		exc := f.firstExclude(t.Name)
		switch {
		case d.BrokerInternal:
			d.Reason = "not selected: broker-internal topic"
			if v.brokerInternal {
				d.Reason += ` (name starts with "__")`
			} else {
				d.Reason += " (the broker flags it internal)"
			}
			d.Reason += "; never backed up"
		case o.SchemaRegistryTopic != "" && t.Name == o.SchemaRegistryTopic:
			d.Selected, d.SchemaRegistry = true, true
			d.Class, d.SourceChangelog, d.OtherApplicationID = External, false, ""
			d.Reason = "selected: the Schema Registry's storage topic (schema_registry.topic), restored first"
			selected[t.Name] = true
		case notOurs != "":
			d.Reason = "not selected: " + v.reason
			if inc != "" && exc == "" {
				topologyWarnings = append(topologyWarnings, fmt.Sprintf("include pattern %q matched %q, an internal-topic name the topology (%s) does not name; not selected: it is probably application.id %q's", inc, t.Name, c.Topology.From, notOurs))
			}
		case topologyOnly && (!hasRole || role == RoleRepartition):
			d.Reason = "not selected: " + v.reason
			if role == RoleRepartition {
				d.Reason += "; " + c.repartitionNote(": ")
			}
		case topologyOnly && exc != "":
			d.Reason = fmt.Sprintf("not selected: excluded by pattern %q; %s", exc, v.reason)
			d.ExcludedBy = exc
			leftOut(t.Name, role, exc)
		case inc == "" && !topologyOnly:
			d.Reason = "not selected: no include pattern matches; " + v.reason
			if hasRole && role != RoleRepartition {
				leftOut(t.Name, role, "")
			}
		case exc != "":
			d.Reason = fmt.Sprintf("not selected: excluded by pattern %q; %s", exc, v.reason)
			d.ExcludedBy = exc
			if hasRole && role != RoleRepartition {
				leftOut(t.Name, role, exc)
			}
		case d.OtherApplicationID != "":
			d.Reason = "not selected: " + v.reason + "; back it up with that application's configuration"
			droppedOther[inc] = append(droppedOther[inc], t.Name)
			if !slices.Contains(otherApps[inc], d.OtherApplicationID) {
				otherApps[inc] = append(otherApps[inc], d.OtherApplicationID)
			}
		case d.Class == Repartition:
			d.Reason = "not selected: " + v.reason + "; " + c.repartitionNote(": ")
			droppedRepartition[inc] = append(droppedRepartition[inc], t.Name)
		default:
			d.Selected = true
			selected[t.Name] = true
			switch {
			case topologyOnly:
				d.Reason = "selected: " + v.reason
			case d.Class == External:
				d.Reason = fmt.Sprintf("selected: %s; matched by include %q", v.reason, inc)
			default:
				d.Reason = "selected: " + v.reason
			}
			if d.Class == Changelog && !d.SourceChangelog && c.Topology == nil {
				if w := c.foreignGeneratedStore(t.Name, v); w != "" {
					storeWarnings = append(storeWarnings, w)
				}
			}
			if d.Class == External && t.Compacted && c.Topology == nil {
				compactedWarnings = append(compactedWarnings, fmt.Sprintf("topic %q is compacted and not declared in source_changelog_topics: if a KTable reads it with topology.optimization=all (or reuse.ktable.source.topics), it is that store's changelog; declare it in source_changelog_topics so point-in-time restore is refused for it", t.Name))
			}
			if d.Class == External && !literal[t.Name] && !hasRole && looksLikeSystemTopic(t.Name) {
				systemWarnings = append(systemWarnings, fmt.Sprintf("topic %q looks like another system's topic (Schema Registry, Kafka Connect, ksqlDB) and is selected by include pattern %q; add it to exclude if it is not this application's data", t.Name, inc))
			}
		}
		decisions = append(decisions, d)
	}

	for _, p := range f.include {
		if ts := droppedRepartition[p.src]; len(ts) > 0 {
			warnings = append(warnings, fmt.Sprintf("include pattern %q matched %s, dropped because %s: %s",
				p.src, plural(len(ts), "repartition topic", "repartition topics"), c.repartitionNote(" ("), strings.Join(ts, ", ")))
		}
	}
	for _, p := range f.include {
		if ts := droppedOther[p.src]; len(ts) > 0 {
			apps := otherApps[p.src]
			slices.Sort(apps)
			owner := "application.id " + apps[0]
			if len(apps) > 1 {
				owner = "application.ids " + strings.Join(apps, ", ")
			}
			warnings = append(warnings, fmt.Sprintf("include pattern %q matched %s of %s, dropped: %s",
				p.src, plural(len(ts), "internal topic", "internal topics"), owner, strings.Join(ts, ", ")))
		}
	}
	warnings = append(warnings, storeWarnings...)
	warnings = append(warnings, compactedWarnings...)
	declared := slices.Clone(c.SourceChangelogTopics)
	slices.Sort(declared)
	for _, s := range slices.Compact(declared) {
		switch {
		case c.Topology != nil && SourceChangelogConflict(s, c.Topology, c.DeadLetterTopics) != "":
			// topologyRoles warned: not a source changelog at all
		case !exists[s]:
			warnings = append(warnings, fmt.Sprintf("source changelog topic %q (source_changelog_topics) does not exist on the cluster", s))
		case !selected[s]:
			warnings = append(warnings, fmt.Sprintf("source changelog topic %q (source_changelog_topics) is not selected, so its store cannot be restored from this backup; include it", s))
		}
	}
	warnings = append(warnings, systemWarnings...)
	warnings = append(warnings, tr.warnings...)
	warnings = append(warnings, topologyWarnings...)
	if o.AllowTopologyMismatch {
		for _, m := range mismatch {
			warnings = append(warnings, m+" (source.topics.allow_topology_mismatch: true: backed up without it)")
		}
		mismatch = nil
	}

	if o.AllowMissing {
		for _, m := range tr.missingInputs {
			warnings = append(warnings, fmt.Sprintf("the topology's input topic %q does not exist on the cluster"+AllowMissingSkipped, m))
		}
	}

	var errs []error
	if (len(missing) > 0 || missingRegistry || len(tr.missingInputs) > 0) && !o.AllowMissing {
		e := &MissingTopicsError{Topics: missing, TopologyInputs: tr.missingInputs}
		if c.Topology != nil {
			e.TopologyFrom = c.Topology.From
		}
		if missingRegistry {
			e.SchemaRegistryTopic = o.SchemaRegistryTopic
		}
		errs = append(errs, e)
	}
	if len(mismatch) > 0 {
		errs = append(errs, &TopologyMismatchError{Fixes: mismatch})
	}
	if registryErr != nil {
		errs = append(errs, registryErr)
	}
	return decisions, warnings, errors.Join(errs...)
}

// looksLikeSystemTopic reports names that a "*" include catches but that
// usually belong to other systems: Schema Registry ("_schemas"), Confluent
// and ksqlDB ("_confluent-..."), and Kafka Connect's default storage topics.
func looksLikeSystemTopic(name string) bool {
	switch name {
	case "connect-offsets", "connect-configs", "connect-status":
		return true
	}
	return strings.HasPrefix(name, "_")
}

// plural returns "1 topic" or "2 topics": n and the noun for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// repartitionNote says what a backup keeps of a repartition topic: only
// its in-flight tail (docs/DOMAIN.md#in-flight), read from the
// application.id group's committed offset, so nothing at all without an
// ApplicationID (no group, no tail). sep joins the two halves of the
// first form: ": " in a reason, " (" in a warning (closed here).
func (c Classifier) repartitionNote(sep string) string {
	if c.ApplicationID == "" {
		return "repartition topics are never backed up as data, and without application_id no in-flight tail is captured either (there is no group): a changelog restore cannot bring back records in flight"
	}
	if sep == " (" {
		return "repartition topics are never backed up as data (only their in-flight tail is captured)"
	}
	return "repartition topics are never backed up as data" + sep + "only their in-flight tail is captured"
}
