package restorer

import (
	"context"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// metadata.version feature levels of Kafka 4.2 (Kafka's server-common
// MetadataVersion: IBP_4_2_IV0 = 28, IBP_4_2_IV1 = 29; IBP_4_1_IV1 = 27
// and IBP_4_3_IV0 = 30 around them). A cluster whose finalized
// metadata.version is in this range runs Kafka 4.2 brokers, or newer
// brokers not yet finalized past it.
const (
	metadataVersion42Min = 28
	metadataVersion42Max = 29
)

// targetMetadataVersion is the target's finalized metadata.version feature
// level (ApiVersions v3+ FinalizedFeatures, KIP-584; the highest any
// broker reports), and false when no broker reports one (a broker before
// Kafka 3.3, or a ZooKeeper cluster).
func (r *restore) targetMetadataVersion(ctx context.Context) (int16, bool, error) {
	vs, err := r.adm.ApiVersions(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("read the target's finalized features (ApiVersions): %w", err)
	}
	var level int16
	found := false
	for _, v := range vs.Sorted() {
		if v.Err != nil || v.Raw() == nil {
			continue
		}
		for _, f := range v.Raw().FinalizedFeatures {
			if f.Name == "metadata.version" {
				level, found = max(level, f.MaxVersionLevel), true
			}
		}
	}
	return level, found, nil
}

// kafka20254 guards against KAFKA-20254 (Kafka 4.2.0, fixed in 4.2.1):
// offsets committed before a streams group exists create a classic group,
// and after __consumer_offsets is compacted and a broker restarts, the
// streams group can fail to load. "Restore the offsets, then start the
// application" is exactly that. On a target whose finalized
// metadata.version is 4.2's (the protocol cannot tell 4.2.0 from 4.2.1),
// the offsets of a backed-up streams group (KIP-1071) are refused unless
// o.AllowKafka42; a classic or consumer group gets a warning (its
// application could be started with group.protocol=streams on the
// target). A plan that commits no offset (g.Offsets holds no
// format.OffsetCommit, e.g. --topics of an output only) is not refused
// either: it commits nothing, so it makes no classic group; it gets the
// warning. A target that already holds the application's streams group
// (empty) is not refused: the offsets are committed into that streams
// group, and no classic group is made.
func (r *restore) kafka20254(ctx context.Context, g *GroupPlan, mg *format.Group) (f findings, err error) {
	if g.TargetType == format.GroupTypeStreams {
		return f, nil
	}
	level, ok, err := r.targetMetadataVersion(ctx)
	if err != nil || !ok || level < metadataVersion42Min || level > metadataVersion42Max {
		return f, err
	}
	commits := 0
	for _, o := range g.Offsets {
		if o.Action == format.OffsetCommit {
			commits++
		}
	}
	// A plan that commits no offset makes no classic group: nothing to
	// guard but the application's own start.
	streams := mg.Type == format.GroupTypeStreams && commits > 0
	switch {
	case streams && !r.o.AllowKafka42:
		f.refuse("the target's metadata.version is Kafka 4.2's (feature level %d) and group %q is a streams group (KIP-1071): on Kafka 4.2.0, offsets committed before the streams group exists can make it fail to load after __consumer_offsets is compacted and a broker restarts (KAFKA-20254, fixed in 4.2.1): upgrade the target's brokers to Kafka 4.2.1 or later; if they already run 4.2.1 or later (the protocol cannot tell), pass --allow-kafka-4-2",
			level, mg.GroupID)
	case streams:
		f.warn("the target's metadata.version is Kafka 4.2's (feature level %d): restoring the offsets of streams group %q as allowed (--allow-kafka-4-2); on Kafka 4.2.0 brokers KAFKA-20254 can make the group fail to load after a broker restart", level, mg.GroupID)
	default:
		f.warn("the target's metadata.version is Kafka 4.2's (feature level %d): if the application runs on it with group.protocol=streams and the brokers are 4.2.0, its streams group can fail to load after a broker restart (KAFKA-20254, fixed in 4.2.1): upgrade them to 4.2.1 or later first", level)
	}
	return f, nil
}
