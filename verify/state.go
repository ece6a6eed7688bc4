package verify

import (
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// StoreState is the state check of one changelog partition of a restored
// cluster (Result.States): the state digest of the target's partition
// compared with the one the backup recorded (docs/FORMAT.md, "State
// digest").
type StoreState struct {
	// Store is the state store the changelog belongs to (StoreName).
	Store     string `json:"store"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Result is format.StateDigestEqual, format.StateDigestDifferent, or
	// format.StateDigestNotRecorded when the manifest holds no digest (a
	// backup written before digests existed): never "equal" then.
	Result string              `json:"result"`
	Backup *format.StateDigest `json:"backup,omitempty"` // the manifest's; nil when not recorded
	Target *format.StateDigest `json:"target"`           // computed from the target's records
}

// StoreName is the state store whose changelog topic is topic in
// application applicationID: topic less "<applicationID>-" and
// "-changelog" (Kafka's ProcessorStateManager.storeChangelogTopic names a
// changelog <application.id>-<store>-changelog); a source-topic changelog,
// and a changelog that does not have that form (a named topology's or
// another prefix), is named by its topic.
func StoreName(applicationID, topic string, sourceChangelog bool) string {
	if sourceChangelog {
		return topic
	}
	name, ok := strings.CutSuffix(topic, "-changelog")
	if !ok || applicationID == "" {
		return topic
	}
	if s, ok := strings.CutPrefix(name, applicationID+"-"); ok && s != "" {
		return s
	}
	return topic
}

// stateDigester returns a Digester for a changelog partition compared
// without a cut (cut -1), nil otherwise.
func stateDigester(t *format.Topic, cut int64) *statedigest.Digester {
	if cut >= 0 || (t.Class != string(topicfilter.Changelog) && !t.SourceChangelog) {
		return nil
	}
	return statedigest.New()
}

// compareState compares the target's state digest got of partition p of
// topic t with the manifest m's.
func compareState(m *format.Manifest, t *format.Topic, p format.Partition, got statedigest.StateDigest) StoreState {
	st := StoreState{Store: StoreName(m.ApplicationID, t.Name, t.SourceChangelog), Topic: t.Name, Partition: p.Partition, Target: &got}
	switch {
	case p.StateDigest == nil:
		st.Result = format.StateDigestNotRecorded
	case p.StateDigest.Equal(got):
		st.Result, st.Backup = format.StateDigestEqual, p.StateDigest
	default:
		st.Result, st.Backup = format.StateDigestDifferent, p.StateDigest
	}
	return st
}

// Stores sums up states per store, in the order stores first appear: its
// result is "different" when any partition differs, else "not recorded"
// when any has no digest in the backup, else "equal".
func Stores(states []StoreState) []StoreSummary {
	var out []StoreSummary
	idx := map[string]int{}
	for _, st := range states {
		i, ok := idx[st.Store]
		if !ok {
			i = len(out)
			idx[st.Store] = i
			out = append(out, StoreSummary{Store: st.Store, Topic: st.Topic, Result: format.StateDigestEqual})
		}
		s := &out[i]
		s.Partitions++
		switch st.Result {
		case format.StateDigestDifferent:
			s.Result = format.StateDigestDifferent
			s.Different = append(s.Different, st.Partition)
		case format.StateDigestNotRecorded:
			if s.Result != format.StateDigestDifferent {
				s.Result = format.StateDigestNotRecorded
			}
		}
	}
	return out
}

// StoreSummary is the state check of one store over its changelog's
// partitions (Stores).
type StoreSummary struct {
	Store      string  `json:"store"`
	Topic      string  `json:"topic"`
	Result     string  `json:"result"` // equal, different or not recorded
	Partitions int     `json:"partitions"`
	Different  []int32 `json:"different_partitions,omitempty"`
}
