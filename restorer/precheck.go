package restorer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// precheckWorkers is how many segments the pre-check reads at once. Each
// worker holds one zstd decoder (the segment window, 1 MiB as written,
// at most 64 MiB as read) and 64 KiB of buffers: the pre-check's memory
// does not grow with the backup or a segment's size.
const precheckWorkers = 8

// Precheck is how much of each segment the restore's pre-check decodes
// before the first write (restore --precheck): PrecheckDigest or
// PrecheckDeep. "" is PrecheckDigest.
type Precheck = string

const (
	// PrecheckDigest, the default, reads every object the restore will
	// read and checks its existence, size and SHA-256 against the
	// manifest (which finds every storage fault: a flipped byte, a
	// truncated, swapped or missing object), and decodes only each
	// segment's header (its topic, partition and kind), not its records
	// (repository.CheckHeader): the restore's own read decodes them once
	// (issue 13: no decode done twice). A segment whose bytes match the
	// manifest but whose records do not (a writer's fault) is found by
	// that read, at the segment's trailer: a *DamageError with Written
	// true.
	PrecheckDigest Precheck = "digest"
	// PrecheckDeep also decodes every record and checks each segment's
	// record count and first and last offsets before the first write
	// (repository.CheckRecords): one more decode of all the data.
	PrecheckDeep Precheck = "deep"
)

// ParsePrecheck checks a --precheck setting: digest or deep (any case);
// "" is PrecheckDigest. The error names the values accepted.
func ParsePrecheck(s string) (Precheck, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "":
		return PrecheckDigest, nil
	case PrecheckDigest, PrecheckDeep:
		return s, nil
	}
	return "", fmt.Errorf("unknown pre-check %q: use digest (size, SHA-256 and header of every segment) or deep (every record decoded too)", s)
}

// checkDepth is what the pre-check decodes under mode.
func checkDepth(mode Precheck) repository.CheckDepth {
	if mode == PrecheckDeep {
		return repository.CheckRecords
	}
	return repository.CheckHeader
}

// Damage is one object of a backup that fails its check: missing, another
// size or SHA-256 than the manifest records, not decoding, a header naming
// another topic or partition, or other record counts or offsets.
type Damage struct {
	Key       string `json:"key"`
	Topic     string `json:"topic"`     // as the manifest names it
	Partition int32  `json:"partition"` // as the manifest names it
	Problem   string `json:"problem"`
	// InFlight is true when the object is a segment of an in-flight tail
	// (Manifest.InFlight): a restore with SkipInFlight does not read it.
	InFlight bool `json:"in_flight,omitempty"`
}

// DamageError is returned when the backup's objects disagree with its
// manifest: the backup cannot be restored as it is, and running the same
// restore again cannot help. The pre-check returns it before the first
// write, naming every damaged object; a segment read during the restore
// returns it for that segment. The remedies are `verify` and an older
// --backup-id.
type DamageError struct {
	BackupID string
	Damaged  []Damage // sorted by key
	// Written is true when the restore had written to the target before
	// the damage was found: an object changed after the pre-check, or,
	// under PrecheckDigest, records that differ from the manifest in a
	// segment whose bytes match it (found at the segment's trailer).
	Written bool
	// RunWritten is true for a shard of a sharded restore refused before
	// its own first write whose run had written already: shard 0 created
	// every topic, and other shards may have restored their partitions.
	RunWritten bool
}

func (e *DamageError) Error() string {
	lines := make([]string, len(e.Damaged))
	for i, d := range e.Damaged {
		lines[i] = fmt.Sprintf("%s (topic %q partition %d): %s", d.Key, d.Topic, d.Partition, d.Problem)
	}
	what := "backup " + e.BackupID + " is damaged"
	if e.BackupID == "" {
		what = "the backup is damaged"
	}
	if len(lines) == 1 {
		return what + ": " + lines[0]
	}
	return fmt.Sprintf("%s: %d segments fail their check:\n  - %s", what, len(lines), strings.Join(lines, "\n  - "))
}

// precheck reads every segment the restore will read (those of the
// selected partitions below each partition's cut), streaming, with
// precheckWorkers at once, and checks each against the manifest: it exists
// and has the recorded size and SHA-256, and its header names the topic,
// partition and kind the manifest has it under; under PrecheckDeep it also
// decodes to the recorded record count and first and last offsets. Damage
// found is returned as one *DamageError naming every damaged object; an
// object that cannot be read for another reason (the storage failed) is
// returned as that error. owns, when not nil, leaves out the partitions
// for which it is false (a shard's precheck: shardOwns).
func precheck(ctx context.Context, store storage.Backend, sel *selection, mode Precheck, owns func(topic string, partition int32) bool) error {
	depth := checkDepth(mode)
	type job struct {
		topic string
		p     int32
		s     format.Segment
	}
	var jobs []job
	for _, t := range sel.topics {
		for _, p := range t.PartitionCuts {
			if owns != nil && !owns(t.Name, p.Partition) {
				continue
			}
			cut, ok := sel.cuts[t.Name][p.Partition]
			if !ok {
				cut = -1
			}
			for _, s := range p.Segments {
				if cut >= 0 && s.FirstOffset >= cut {
					break
				}
				jobs = append(jobs, job{t.Name, p.Partition, s})
			}
		}
	}
	var (
		mu      sync.Mutex
		damaged []Damage
		failed  error
		wg      sync.WaitGroup
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan job)
	for range min(precheckWorkers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				problem, err := checkSegment(cctx, store, j.topic, j.p, j.s, depth)
				mu.Lock()
				switch {
				case err != nil && failed == nil:
					failed = err
					cancel()
				case problem != "":
					damaged = append(damaged, Damage{Key: j.s.Key, Topic: j.topic, Partition: j.p, Problem: problem, InFlight: sel.inFlight[j.topic]})
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-cctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(damaged) > 0 {
		sort.Slice(damaged, func(i, j int) bool { return damaged[i].Key < damaged[j].Key })
		return &DamageError{BackupID: sel.m.BackupID, Damaged: damaged}
	}
	return failed
}

// checkSegment reads one segment in full (repository.CheckSegment, to
// depth) and returns what is wrong with it ("" when nothing), or an error
// when it cannot be read.
func checkSegment(ctx context.Context, store storage.Backend, topic string, partition int32, s format.Segment, depth repository.CheckDepth) (string, error) {
	c, err := repository.CheckSegment(ctx, store, topic, partition, s, depth)
	if err != nil {
		return "", err
	}
	return strings.Join(c.Problems(s), "; "), nil
}

// allDamage turns the damage a read of the plan found (in one segment) into
// the pre-check's account (under mode) of every damaged object of the
// selection (of the whole backup when sel is nil); when that account finds
// none (the read's damage is in records, which PrecheckDigest does not
// decode), the read's damage is returned. Other errors are returned as
// they are.
func allDamage(ctx context.Context, store storage.Backend, m *format.Manifest, sel *selection, mode Precheck, err error) error {
	de, ok := errors.AsType[*DamageError](err)
	if !ok {
		return err
	}
	if sel == nil {
		sel = &selection{m: m}
		for i := range m.Topics {
			sel.topics = append(sel.topics, &m.Topics[i])
		}
	}
	full := precheck(ctx, store, sel, mode, nil)
	if _, ok := errors.AsType[*DamageError](full); ok {
		return full
	}
	de.BackupID = m.BackupID
	return de
}
