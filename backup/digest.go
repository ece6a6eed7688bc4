package backup

import (
	"context"
	"errors"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// hasState reports whether t is a changelog (class changelog, or an input
// used as a store's changelog), whose partitions get a state digest.
func hasState(t *format.Topic) bool {
	return t.Class == string(topicfilter.Changelog) || t.SourceChangelog
}

// digestWork gives each work item of a changelog partition a Digester. It
// is seeded (seedDigest) before the copy and fed every copied record by
// noteRecord.
func (r *runner) digestWork(todo []*work) {
	states := map[string]bool{}
	for i := range r.m.Topics {
		states[r.m.Topics[i].Name] = hasState(&r.m.Topics[i])
	}
	for _, w := range todo {
		if states[w.topic] {
			w.digest = statedigest.New()
		}
	}
}

// seedDigest feeds w's Digester the records the chain already holds below
// w.from: the segments the manifest names for the partition before this
// run copies (an incremental backup's parent chain, or what an interrupted
// run had made durable), read back through the verified reader. The state
// digest then covers the whole chain, whatever run copied which part; the
// cost is one read of the partition's earlier segments per backup that
// copies new records into it.
func (r *runner) seedDigest(ctx context.Context, w *work) error {
	if w.digest == nil {
		return nil
	}
	r.mu.Lock()
	p := *w.cut
	p.Segments = append([]format.Segment(nil), w.cut.Segments...)
	r.mu.Unlock()
	err := repository.ReadPartition(ctx, r.store, w.topic, &p, w.from, func(rec *format.Record) error {
		w.digest.Add(rec.Key, rec.Value)
		return nil
	})
	if errors.Is(err, repository.ErrSegmentDamaged) {
		r.noDigest(w.topic, w.partition, err)
		w.digest = nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("state digest of topic %q partition %d: read the chain's earlier records: %w", w.topic, w.partition, err)
	}
	return nil
}

// noDigest warns that the partition's state digest is not recorded
// because a segment of its chain is damaged (err); a restore of this
// backup then says "not recorded" for it (and refuses the damaged
// segment anyway). The backup itself goes on: it does not need the
// earlier segments, and `backup --full` starts a chain without them.
func (r *runner) noDigest(topic string, partition int32, err error) {
	r.mu.Lock()
	if r.undigested == nil {
		r.undigested = map[string]bool{}
	}
	r.undigested[partitionKey(topic, partition)] = true
	r.mu.Unlock()
	r.warn(fmt.Sprintf("topic %q partition %d: no state digest recorded: %v; run `kafkastreams-dr backup --full` to start a chain without it", topic, partition, err))
}

// setStateDigests sets the state digest of every changelog partition of
// the manifest, after the copy: from its work item's Digester; for a
// partition this run copied nothing into, the parent's digest when the
// chain is the parent's (same segments), or else one computed from the
// segments the manifest names (a resumed run whose interrupted part
// finished the partition, a parent written before digests existed).
func (r *runner) setStateDigests(ctx context.Context, todo []*work, parent map[string]*format.Partition) error {
	fed := map[*format.Partition]*statedigest.Digester{}
	for _, w := range todo {
		if w.digest != nil {
			fed[w.cut] = w.digest
		}
	}
	for ti := range r.m.Topics {
		t := &r.m.Topics[ti]
		if !hasState(t) {
			continue
		}
		for pi := range t.PartitionCuts {
			p := &t.PartitionCuts[pi]
			if r.undigested[partitionKey(t.Name, p.Partition)] || !r.owns(t.Name, p.Partition) {
				continue // another shard's partition is its to digest
			}
			if d, ok := fed[p]; ok {
				sum := d.Sum()
				p.StateDigest = &sum
				continue
			}
			if pp := parent[partitionKey(t.Name, p.Partition)]; pp != nil && pp.StateDigest != nil && sameChain(pp, p) {
				sum := *pp.StateDigest
				p.StateDigest = &sum
				continue
			}
			d := statedigest.New()
			err := repository.ReadPartition(ctx, r.store, t.Name, p, -1, func(rec *format.Record) error {
				d.Add(rec.Key, rec.Value)
				return nil
			})
			if errors.Is(err, repository.ErrSegmentDamaged) {
				r.noDigest(t.Name, p.Partition, err)
				continue
			}
			if err != nil {
				return fmt.Errorf("state digest of topic %q partition %d: %w", t.Name, p.Partition, err)
			}
			sum := d.Sum()
			p.StateDigest = &sum
		}
	}
	return nil
}

func partitionKey(topic string, p int32) string { return fmt.Sprintf("%s/%d", topic, p) }

// sameChain reports whether p names exactly the segments of the parent's
// partition pp over the same range.
func sameChain(pp, p *format.Partition) bool {
	if pp.StartOffset != p.StartOffset || pp.EndOffset != p.EndOffset || len(pp.Segments) != len(p.Segments) {
		return false
	}
	for i := range pp.Segments {
		if pp.Segments[i].Key != p.Segments[i].Key || pp.Segments[i].SHA256 != p.Segments[i].SHA256 {
			return false
		}
	}
	return true
}
