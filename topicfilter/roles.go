package topicfilter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DescribedTopology reads a Topology#describe() text (ParseTopology, both
// formats) as the topology of application applicationID: its topics by
// broker name (Topology.Topics, not optimized: a source table's
// "-changelog" topic is listed, and [Plan] takes the table's input topic
// for its changelog when that topic is absent from the cluster), From set
// to from, OutputsKnown (describe() names every sink's topic, but for a
// sink with a topic name extractor), and Digest the hex sha256 of text.
// Errors are ParseTopology's after from (`topology file "x.txt": topology
// description line 3: ...`), and an empty applicationID (internal topic
// names need the prefix).
func DescribedTopology(text, applicationID, from string) (*AppTopology, error) {
	if applicationID == "" {
		return nil, fmt.Errorf("%s: application_id is not set: a topology's internal topics are named \"<application.id>-<name>\"; set application_id", from)
	}
	top, err := ParseTopology(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	sum := sha256.Sum256([]byte(text))
	return &AppTopology{From: from, TopologyTopics: top.Topics(applicationID, false), OutputsKnown: true,
		Digest: hex.EncodeToString(sum[:])}, nil
}

// javaPattern translates a Java regular expression of a topology's source
// (Pattern.compile, matched as Pattern.matcher(topic).matches(): the whole
// name) to an anchored Go one. Topic names hold only [a-zA-Z0-9._-], so
// the differences that matter are of syntax: what RE2 cannot express
// (possessive quantifiers, atomic groups, lookaround, back references, the
// comments flag) fails to compile, and Java's class intersection "&&",
// which RE2 would read as literal characters, is refused here.
func javaPattern(p string) (*regexp.Regexp, error) {
	if strings.Contains(p, "&&") {
		return nil, fmt.Errorf("source pattern %q uses Java's character class intersection \"&&\", which cannot be translated; list the topics in source.topics.include", p)
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("source pattern %q cannot be read as a Go regular expression (%v); list its topics in source.topics.include", p, err)
	}
	return re, nil
}

// roles is what the topology says of the topics on one cluster.
type roles struct {
	role map[string]string // topic on the cluster -> Role
	note map[string]string // topic -> extra words for its reason
	// warnings are for people, in a stable order.
	warnings []string
	// missingInputs are the topology's inputs and global store inputs
	// absent from the cluster, sorted: [Plan] refuses them as it does a
	// missing literal include.
	missingInputs []string
}

// topologyRoles gives the topics of exists their roles (see the Role
// constants) from c.Topology. Warnings: topology changelogs absent from
// the cluster (logging disabled or not created yet), dead-letter topics
// not on it yet, source patterns that cannot be translated or match no
// topic. Absent inputs are
// missingInputs.
func (c Classifier) topologyRoles(names []string, exists map[string]bool) roles {
	t := c.Topology
	r := roles{role: map[string]string{}, note: map[string]string{}}
	set := func(topic, role, note string) {
		if !exists[topic] {
			return
		}
		if _, ok := r.role[topic]; !ok {
			r.role[topic] = role
			if note != "" {
				r.note[topic] = note
			}
		}
	}
	// Source changelogs first: they are inputs too.
	sourceChangelog := map[string]string{}
	for _, s := range t.SourceChangelogs {
		sourceChangelog[s] = "the topology's source-topic changelog"
	}
	skipMissing := map[string]bool{}
	for _, st := range t.SourceTables {
		store, topic, ok := strings.Cut(st, " <- ")
		if !ok {
			continue
		}
		own := ""
		for _, cl := range t.Changelogs {
			if strings.HasSuffix(cl, "-"+store+changelogSuffix) {
				own = cl
			}
		}
		if own != "" && exists[own] {
			continue
		}
		if exists[topic] {
			skipMissing[own] = true
			if _, ok := sourceChangelog[topic]; !ok {
				sourceChangelog[topic] = fmt.Sprintf("store %q restores from it: no %q topic exists (topology.optimization=all / reuse.ktable.source.topics)", store, own)
				if own == "" {
					sourceChangelog[topic] = fmt.Sprintf("store %q restores from it (topology.optimization=all / reuse.ktable.source.topics)", store)
				}
			}
		}
	}
	for _, s := range c.SourceChangelogTopics {
		if why := SourceChangelogConflict(s, t, c.DeadLetterTopics); why != "" {
			// The config and --topology refuse this; a topology from the
			// broker is only known here: its role wins.
			r.warnings = append(r.warnings, fmt.Sprintf("source_changelog_topics names %q, which %s; it is classified as the topology says: remove it from source_changelog_topics", s, why))
			continue
		}
		if _, ok := sourceChangelog[s]; !ok {
			sourceChangelog[s] = "declared in source_changelog_topics"
		}
	}
	for _, name := range names {
		if n, ok := sourceChangelog[name]; ok {
			set(name, RoleSourceChangelog, n)
		}
	}
	for _, cl := range t.Changelogs {
		set(cl, RoleChangelog, "")
	}
	written := map[string]bool{}
	if t.OutputsKnown {
		for _, o := range t.Outputs {
			written[o] = true
		}
	}
	for _, rp := range t.Repartition {
		set(rp, RoleRepartition, "")
		// describe() names a topic both read and written by the topology
		// as a repartition topic; when it is not under the prefix on the
		// cluster but its bare name is, it is a topic of the user's that
		// the application writes and reads back.
		for _, p := range c.prefixes() {
			if bare, ok := strings.CutPrefix(rp, p+"-"); ok && !exists[rp] {
				set(bare, RoleInput, "the application also writes it")
			}
		}
	}
	for _, in := range t.Inputs {
		note := ""
		if written[in] {
			note = "the application also writes it"
		}
		set(in, RoleInput, note)
	}
	for _, g := range t.GlobalInputs {
		set(g, RoleGlobalInput, "")
	}
	for _, p := range t.Patterns {
		re, err := javaPattern(p)
		if err != nil {
			r.warnings = append(r.warnings, fmt.Sprintf("topology (%s): %v", t.From, err))
			continue
		}
		matched := false
		for _, name := range names {
			if re.MatchString(name) && !isBrokerInternalName(name) {
				set(name, RoleInput, fmt.Sprintf("matches the topology's source pattern %q", p))
				matched = true
			}
		}
		if !matched {
			r.warnings = append(r.warnings, fmt.Sprintf("the topology's source pattern %q (%s) matches no topic on the cluster: the application's input may be missing, and nothing of it is backed up", p, t.From))
		}
	}
	if t.OutputsKnown {
		for _, o := range t.Outputs {
			set(o, RoleOutput, "")
		}
	}
	for _, d := range c.DeadLetterTopics {
		set(d, RoleDeadLetter, "dead_letter_queue_topics")
	}

	var missing []string
	for _, cl := range t.Changelogs {
		if !exists[cl] && !skipMissing[cl] {
			missing = append(missing, cl)
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		r.warnings = append(r.warnings, fmt.Sprintf("the topology's changelog %q does not exist on the cluster: its store has logging disabled, or the application has not created it yet; nothing of that store is backed up", m))
	}
	dlq := slices.Clone(c.DeadLetterTopics)
	slices.Sort(dlq)
	for _, d := range slices.Compact(dlq) {
		if !exists[d] {
			r.warnings = append(r.warnings, fmt.Sprintf("dead-letter queue topic %q (dead_letter_queue_topics) does not exist on the cluster yet: it appears with the application's first dead letter (KIP-1034; Kafka Streams does not create it, the broker does on the first write when it auto-creates topics), and a backup copies it once it exists", d))
		}
	}
	for _, in := range slices.Concat(t.Inputs, t.GlobalInputs) {
		if !exists[in] && !slices.Contains(r.missingInputs, in) {
			r.missingInputs = append(r.missingInputs, in)
		}
	}
	slices.Sort(r.missingInputs)
	return r
}

// roleClass is the Class of a topic with a topology role.
func roleClass(role string) Class {
	switch role {
	case RoleChangelog, RoleSourceChangelog:
		return Changelog
	case RoleRepartition:
		return Repartition
	}
	return External
}

// roleReason says what the topology makes of topic: a repartition-role
// topic that is a foreign-key join's subscription registration or response
// topic is called that (repartitionWord).
func roleReason(topic, role, note string) string {
	what := map[string]string{
		RoleInput:           "input topic of the topology",
		RoleOutput:          "output topic of the topology",
		RoleChangelog:       "changelog of the topology",
		RoleSourceChangelog: "source-topic changelog: an input a store restores from",
		RoleRepartition:     "repartition topic of the topology",
		RoleDeadLetter:      "dead-letter queue topic (KIP-1034): an output",
		RoleGlobalInput:     "input topic of a global store of the topology",
	}[role]
	if role == RoleRepartition {
		what = repartitionWord(topic) + " of the topology"
	}
	if note != "" {
		what += " (" + note + ")"
	}
	return what
}

// stateRole reports roles whose topics a backup must hold to restore the
// application: their absence from a selection is refused.
func stateRole(role string) bool {
	switch role {
	case RoleInput, RoleGlobalInput, RoleChangelog, RoleSourceChangelog:
		return true
	}
	return false
}

// likelyOwner guesses the application.id of an internal-format topic under
// prefix that the topology does not name: when the topic ends in one of
// the topology's own internal names ("<prefix>-v1-counts-changelog" and
// the topology's "<prefix>-counts-changelog") what comes between; when its
// store is a name Kafka Streams generates after something ("<prefix>-v1-
// KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"), what comes before
// it; else the prefix and the name's next "-"-separated word.
func (c Classifier) likelyOwner(topic, prefix string) string {
	rest := strings.TrimPrefix(topic, prefix+"-")
	for _, own := range slices.Concat(c.Topology.Changelogs, c.Topology.Repartition) {
		name := strings.TrimPrefix(own, prefix+"-")
		if mid, ok := strings.CutSuffix(rest, "-"+name); ok && mid != "" {
			return prefix + "-" + mid
		}
	}
	if m := generatedStore.FindStringSubmatch(strings.TrimSuffix(rest, changelogSuffix)); m != nil {
		return prefix + "-" + m[1]
	}
	word, _, _ := strings.Cut(rest, "-")
	return prefix + "-" + word
}

// roleWord names a role in a sentence.
func roleWord(role string) string {
	return map[string]string{
		RoleInput:           "input topic",
		RoleOutput:          "output topic",
		RoleChangelog:       "changelog",
		RoleSourceChangelog: "source-topic changelog",
		RoleDeadLetter:      "dead-letter queue topic",
		RoleGlobalInput:     "global store input topic",
	}[role]
}
