package backup

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Fetch sizes of the backup consumer (Kafka consumer settings fetch.max.bytes
// and max.partition.fetch.bytes). A broker returns at least one whole batch
// even when it is larger (KIP-74), so these bound memory, not record size.
const (
	fetchMaxBytes          = 2 << 20
	fetchPartitionMaxBytes = 2 << 20
	fetchMaxWait           = 500 * time.Millisecond
)

// segmentUpload streams one segment: records -> SegmentWriter (zstd) ->
// hashing writer -> pipe -> storage.Put, so no segment is ever held in
// memory. A batch segment has a BatchSegmentWriter (bw) instead of sw.
type segmentUpload struct {
	key  string
	pw   *io.PipeWriter
	hw   *format.HashingWriter
	sw   *format.SegmentWriter      // a record segment
	bw   *format.BatchSegmentWriter // a batch segment
	errc chan error
	// store is where the segment goes, read back when a retained object
	// refuses the write (finish).
	store storage.Backend
}

func (r *runner) openSegment(ctx context.Context, w *work, firstOffset int64, kind string) (*segmentUpload, error) {
	key := format.SegmentKey(r.m.BackupID, w.topic, w.partition, firstOffset)
	pr, pw := io.Pipe()
	u := &segmentUpload{key: key, pw: pw, hw: format.NewHashingWriter(pw), errc: make(chan error, 1), store: r.store}
	// The directory fsyncs of a segment's put wait for the next progress
	// write (writeProgress: before it names the segment).
	putCtx := storage.WithDeferredDirSyncs(ctx, r.dirSyncs)
	go func() {
		err := r.store.Put(putCtx, key, pr, -1)
		pr.CloseWithError(err)
		u.errc <- err
	}()
	var err error
	if kind == format.KindBatch {
		u.bw, err = format.NewBatchSegmentWriter(u.hw, w.topic, w.partition)
	} else {
		u.sw, err = format.NewSegmentWriterLevel(u.hw, w.topic, w.partition, r.o.CompressionLevel)
	}
	if err != nil {
		u.abort(err)
		return nil, err
	}
	return u, nil
}

// kind is the segment's kind (format.KindRecord or format.KindBatch).
func (u *segmentUpload) kind() string {
	if u.bw != nil {
		return format.KindBatch
	}
	return format.KindRecord
}

func (u *segmentUpload) stats() format.SegmentStats {
	if u.bw != nil {
		return u.bw.Stats()
	}
	return u.sw.Stats()
}

func (u *segmentUpload) abort(cause error) {
	u.pw.CloseWithError(cause)
	<-u.errc //nolint:errcheck // the Put fails with cause; abort only waits for it to end
}

// finish closes the segment and waits for its upload. A write the store
// refuses because an object under the key is under Object Lock retention
// (storage.ErrRetained) is the segment stored when that object holds
// exactly these bytes (storedAs): a resumed run writes again, under the
// same first offset, a segment the interrupted run stored but no progress
// manifest named, with the same records encoded alike, and a store with
// Object Lock and no versioning (versitygw) refuses to replace it.
func (u *segmentUpload) finish(ctx context.Context, backupID, keyID string) (format.Segment, error) {
	var st format.SegmentStats
	var err error
	if u.bw != nil {
		st, err = u.bw.Close()
	} else {
		st, err = u.sw.Close()
	}
	if err != nil {
		u.abort(err)
		return format.Segment{}, fmt.Errorf("encode segment %s: %w", u.key, err)
	}
	u.pw.Close()
	sum, size := u.hw.Sum()
	if err := <-u.errc; err != nil && (!errors.Is(err, storage.ErrRetained) || !storedAs(ctx, u.store, u.key, sum, size)) {
		return format.Segment{}, fmt.Errorf("store segment %s: %w", u.key, err)
	}
	s := format.Segment{Key: u.key, BackupID: backupID, Size: size, SHA256: sum, RawSize: st.RawBytes,
		Records: st.Records, FirstOffset: st.FirstOffset, LastOffset: st.LastOffset,
		MinTimestamp: st.MinTimestamp, MaxTimestamp: st.MaxTimestamp, MaxRecordBytes: st.MaxRecordBytes, NullKeys: st.NullKeys, KeyID: keyID}
	if u.bw != nil {
		s.Kind = format.KindBatch
	}
	return s, nil
}

// storedAs reports whether the object under key has size bytes whose
// SHA-256 is sum (hex).
func storedAs(ctx context.Context, store storage.Backend, key, sum string, size int64) bool {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return false
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	return err == nil && n == size && hex.EncodeToString(h.Sum(nil)) == sum
}

// copyPartition copies offsets [w.from, w.end) of one partition with
// read_committed Fetch requests to the partition leader. The partition is
// done when the fetch position reaches w.end, never when "last record ==
// end-1": transaction markers, aborted records and compaction leave offsets
// that carry no record (docs/DOMAIN.md#read-committed, field case 14), and
// the position steps over them.
//
// A fetch that does not move the position (a retriable error, or an answer
// with no records below w.end, which a healthy leader never gives) is
// retried with backoff for up to Options.RetryTimeout without progress.
// Then an error fails the run, naming the broker; empty answers end the
// partition where reading stopped (r.stopUnread): the manifest does not
// claim the rest, and the next backup reads it.
//
// With Options.SegmentKind batch (and not an in-flight tail) the response's
// record batches are kept as fetched (keepBatches) and written to batch
// segments; the position steps the same way.
func (r *runner) copyPartition(ctx context.Context, w *work) (err error) {
	log := r.log.With("topic", w.topic, "partition", w.partition)
	pos := w.from
	var seg *segmentUpload
	defer func() {
		if seg != nil {
			seg.abort(errors.Join(err, errors.New("backup stopped")))
		}
	}()
	var stalledSince time.Time // when the position last stopped moving; zero while it moves
	attempts := 0              // fetches in a row without progress
	var copied, copiedBytes int64
	// full closes the segment once it reached the segment limits.
	full := func() error {
		if st := seg.stats(); st.RawBytes >= r.o.SegmentMaxBytes || (r.o.SegmentMaxRecords > 0 && st.Records >= r.o.SegmentMaxRecords) {
			s, err := seg.finish(ctx, r.m.BackupID, r.o.KeyID)
			seg = nil
			if err != nil {
				return err
			}
			r.segmentDone(w, s)
		}
		return nil
	}
	// open makes seg a segment of kind starting at firstOffset, closing a
	// segment of the other kind first (a fetch of old message sets in a
	// batch backup).
	open := func(kind string, firstOffset int64) error {
		if seg != nil && seg.kind() != kind {
			s, err := seg.finish(ctx, r.m.BackupID, r.o.KeyID)
			seg = nil
			if err != nil {
				return err
			}
			r.segmentDone(w, s)
		}
		if seg == nil {
			var err error
			if seg, err = r.openSegment(ctx, w, firstOffset, kind); err != nil {
				return err
			}
		}
		return nil
	}
	// write appends rec to the partition's record segments.
	write := func(rec *kgo.Record, batches fetchTimes) error {
		copied++
		copiedBytes += int64(len(rec.Key) + len(rec.Value))
		if err := open(format.KindRecord, rec.Offset); err != nil {
			return err
		}
		fr := format.Record{Partition: w.partition, Offset: rec.Offset, Timestamp: batches.millis(rec),
			TimestampType: format.TimestampType(max(rec.Attrs.TimestampType(), 0)), Key: rec.Key, Value: rec.Value}
		if len(rec.Headers) > 0 {
			fr.Headers = make([]format.Header, len(rec.Headers))
			for i, h := range rec.Headers {
				fr.Headers[i] = format.Header{Key: h.Key, Value: h.Value}
			}
		}
		r.noteRecord(w, &fr)
		if err := seg.sw.Write(&fr); err != nil {
			return fmt.Errorf("topic %q partition %d offset %d: %w", w.topic, w.partition, rec.Offset, err)
		}
		return full()
	}
	// writeBatch appends a batch to the partition's batch segments.
	writeBatch := func(b keptBatch) error {
		if err := open(format.KindBatch, b.recs[0].Offset); err != nil {
			return err
		}
		for i := range b.recs {
			copied++
			copiedBytes += int64(len(b.recs[i].Key) + len(b.recs[i].Value))
			r.noteRecord(w, &b.recs[i])
		}
		if err := seg.bw.Write(b.raw, b.recs); err != nil {
			return fmt.Errorf("topic %q partition %d offset %d: %w", w.topic, w.partition, b.recs[0].Offset, err)
		}
		return full()
	}
	// A batch backup stores the broker's batches, except for an in-flight
	// tail, whose records tailFilter picks one by one.
	batchKind := r.o.SegmentKind == format.KindBatch && !w.inFlight
	var dec format.BatchDecoder // the batch kind's, its buffers reused from batch to batch
	oldFormatLogged := false
	// An in-flight tail is read with read_uncommitted to the high
	// watermark at the cut and keeps the transactions committed then
	// (tailFilter).
	var tail tailFilter
	isolation := kgo.ReadCommitted()
	if w.inFlight {
		isolation = kgo.ReadUncommitted()
	}
	if err := r.seedDigest(ctx, w); err != nil {
		return err
	}
copy:
	for pos < w.end {
		if err := r.lock.Err(); err != nil {
			return err
		}
		leader, topicID := r.leaderOf(w.topic, w.partition)
		rp, ferr := r.fetch(ctx, w.topic, w.partition, leader, topicID, pos, isolation, fetchMaxWait)
		if ferr == nil {
			ferr = kerr.ErrorForCode(rp.ErrorCode)
		}
		var empty string // why an answer without error made no progress
		// advance moves the position to next when the answer moved it
		// (with or without records: markers, aborted batches and
		// compacted-away offsets move it too) and reports the copy; else
		// it says why in empty.
		advance := func(next int64) bool {
			if next > pos {
				r.o.Observer.Copied(w.topic, w.partition, copied, copiedBytes, min(next, w.end))
				copied, copiedBytes = 0, 0
				pos, stalledSince, attempts = next, time.Time{}, 0
				return true
			}
			empty = fmt.Sprintf("%s answered fetches at offset %d with no records and no error (high watermark %d, last stable offset %d, log start %d)",
				r.brokerName(leader), pos, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset)
			return false
		}
		switch {
		case ferr != nil && ctx.Err() != nil:
			return context.Cause(ctx)
		case errors.Is(ferr, kerr.OffsetOutOfRange):
			// A real gap: retention or DeleteRecords moved the log start.
			next, gerr := r.outOfRange(ctx, w, pos)
			if gerr != nil {
				return gerr
			}
			pos, stalledSince, attempts = next, time.Time{}, 0
			continue
		case ferr != nil && !isRetriable(ferr):
			return fmt.Errorf("fetch topic %q partition %d at offset %d from %s: %w", w.topic, w.partition, pos, r.brokerName(leader), ferr)
		case ferr == nil:
			if batchKind {
				next, ok, err := keepBatches(rp, w.partition, pos, w.end, &dec, writeBatch)
				if ke, isKeep := err.(*keepError); isKeep {
					return ke.err
				}
				if err != nil {
					return fmt.Errorf("decode fetch of topic %q partition %d at offset %d: %w", w.topic, w.partition, pos, err)
				}
				if ok {
					if advance(next) {
						continue
					}
					break
				}
				// Old message sets (magic 0 or 1) are not stored as they
				// are: their records go into record segments.
				if !oldFormatLogged {
					log.Info("the broker returned message sets older than magic 2: storing their records in record segments", "offset", pos)
					oldFormatLogged = true
				}
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: pos, IsolationLevel: isolation, KeepControlRecords: w.inFlight, Topic: w.topic, Partition: w.partition,
			}, rp, kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return fmt.Errorf("decode fetch of topic %q partition %d at offset %d: %w", w.topic, w.partition, pos, fp.Err)
			}
			batches := batchTimestamps(rp.RecordBatches)
			for _, rec := range fp.Records {
				if rec.Offset < pos || rec.Offset >= w.end {
					continue
				}
				if !w.inFlight {
					if err := write(rec, batches); err != nil {
						return err
					}
					continue
				}
				for _, kept := range tail.add(rec, batches) {
					if err := write(kept.rec, kept.times); err != nil {
						return err
					}
				}
			}
			if advance(next) {
				continue
			}
		}

		// No progress: retry within the budget.
		if stalledSince.IsZero() {
			stalledSince = time.Now()
		}
		attempts++
		if stalled := time.Since(stalledSince); stalled >= r.o.RetryTimeout {
			if ferr != nil {
				return fmt.Errorf("fetch topic %q partition %d at offset %d from %s: no progress for %s (%d attempts; the source's retry_timeout is %s): %w",
					w.topic, w.partition, pos, r.brokerName(leader), stalled.Round(time.Millisecond), attempts, r.o.RetryTimeout, ferr)
			}
			r.stopUnread(w, pos, fmt.Sprintf("%s for %s (%d attempts)", empty, stalled.Round(time.Millisecond), attempts))
			break copy
		}
		r.o.Observer.Retried("fetch")
		log.Debug("retrying fetch", "offset", pos, "attempt", attempts, "err", ferr, "empty", empty)
		if merr := r.refreshMeta(ctx, w.topic); merr != nil {
			log.Debug("metadata refresh failed", "err", merr)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(retryBackoff(attempts)):
		}
	}
	// Records still waiting belong to transactions open at the cut: left
	// out; those kept behind them go in.
	for _, kept := range tail.finish() {
		if err := write(kept.rec, kept.times); err != nil {
			return err
		}
	}
	if seg != nil {
		s, err := seg.finish(ctx, r.m.BackupID, r.o.KeyID)
		seg = nil
		if err != nil {
			return err
		}
		r.segmentDone(w, s)
	}
	log.Debug("partition copied", "from", w.from, "end", w.end, "reached", pos)
	return nil
}

// retryBackoff is the wait before retry number attempt (1, 2, ...): 250ms
// doubling to at most 5s, with up to 20% jitter, like franz-go's default
// and Kafka's retry.backoff.ms / retry.backoff.max.ms (KIP-580).
func retryBackoff(attempt int) time.Duration {
	d := 5 * time.Second
	if attempt < 6 {
		d = 250 * time.Millisecond << max(attempt-1, 0)
	}
	return d - time.Duration(rand.Int64N(int64(d)/5))
}

// fetch sends one Fetch request for a single partition to its leader (no
// fetch session: SessionEpoch -1), read_committed or read_uncommitted as
// isolation says, waiting at most maxWait for records to arrive.
func (r *runner) fetch(ctx context.Context, topic string, partition, leader int32, topicID [16]byte, pos int64, isolation kgo.IsolationLevel, maxWait time.Duration) (*kmsg.FetchResponseTopicPartition, error) {
	if leader < 0 {
		return nil, kerr.LeaderNotAvailable
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = fetchMaxBytes
	req.IsolationLevel = 1 // read_committed
	if isolation == kgo.ReadUncommitted() {
		req.IsolationLevel = 0
	}
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = pos
	rp.PartitionMaxBytes = fetchPartitionMaxBytes
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r.cl.Broker(int(leader)))
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if p := &resp.Topics[i].Partitions[j]; p.Partition == partition {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("fetch response has no data for topic %q partition %d", topic, partition)
}

// outOfRange handles OFFSET_OUT_OF_RANGE at pos: when retention or
// DeleteRecords moved the log start past pos, the deleted range becomes a
// gap and copying continues at the new log start.
func (r *runner) outOfRange(ctx context.Context, w *work, pos int64) (int64, error) {
	starts, err := r.adm.ListStartOffsets(ctx, w.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("topic %q partition %d: offset %d out of range, and listing the log start failed: %w", w.topic, w.partition, pos, err)
	}
	so, _ := starts.Lookup(w.topic, w.partition)
	if so.Offset <= pos {
		return 0, fmt.Errorf("topic %q partition %d: offset %d out of range although the log start is %d (log truncated?)", w.topic, w.partition, pos, so.Offset)
	}
	to := min(so.Offset, w.end)
	r.addGap(w, format.Gap{From: pos, To: to, BackupID: r.m.BackupID, Reason: "deleted by retention or DeleteRecords while the backup ran"})
	return to, nil
}

func isRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		// UNKNOWN_SERVER_ERROR too: a fetch only reads, and one of them
		// failed a whole backup (issue 14); RetryTimeout bounds it.
		return ke.Retriable || errors.Is(err, kerr.UnknownServerError) || errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
	}
	// Connection errors: the broker may be restarting or the leader moving.
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// batchTimes is the header of one v2 record batch in a fetch response:
// its offsets and the timestamp its records' deltas count from.
type batchTimes struct {
	base, last int64 // first and last offset
	first      int64 // firstTimestamp, or maxTimestamp under LogAppendTime
}

// fetchTimes are the batch headers of one partition's fetch response, in
// offset order.
type fetchTimes []batchTimes

// batchTimestamps reads the batch headers of raw (a fetch response's
// RecordBatches: DefaultRecordBatch's layout, big-endian: baseOffset int64,
// batchLength int32, partitionLeaderEpoch int32, magic int8, crc int32,
// attributes int16, lastOffsetDelta int32, firstTimestamp int64,
// maxTimestamp int64, ...). franz-go's consumer hands out a record's time
// as time.Unix(0, ms*1e6), which wraps outside 1677..2262; with the batch's
// own firstTimestamp every timestamp is recovered exactly (kgotime.InBatch),
// Long.MAX_VALUE included. A truncated last batch and message sets older
// than magic 2 are left out (their records fall back to kgotime.Millis).
func batchTimestamps(raw []byte) fetchTimes {
	var out fetchTimes
	for len(raw) >= 61 {
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length < 49 || int64(len(raw)) < 12+length {
			break
		}
		if raw[16] == 2 {
			b := batchTimes{base: int64(binary.BigEndian.Uint64(raw[0:8]))}
			b.last = b.base + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
			b.first = int64(binary.BigEndian.Uint64(raw[27:35]))
			if binary.BigEndian.Uint16(raw[21:23])&0x8 != 0 { // LogAppendTime: every record has maxTimestamp
				b.first = int64(binary.BigEndian.Uint64(raw[35:43]))
			}
			out = append(out, b)
		}
		raw = raw[12+length:]
	}
	return out
}

// millis returns rec's timestamp as the broker holds it.
func (f fetchTimes) millis(rec *kgo.Record) int64 {
	i, _ := slices.BinarySearchFunc(f, rec.Offset, func(b batchTimes, o int64) int { return cmp.Compare(b.last, o) })
	if i < len(f) && f[i].base <= rec.Offset {
		return kgotime.InBatch(rec.Timestamp, f[i].first)
	}
	return kgotime.Millis(rec.Timestamp)
}

// keptBatch is one record batch a batch segment stores: its bytes as
// fetched and its records the backup holds (aliasing the batch and the
// decoder's buffers: valid only during keepBatches' callback).
type keptBatch struct {
	raw  []byte
	recs []format.Record
}

// keepBatches picks, of one read_committed fetch response of partition,
// the record batches a batch segment stores and the records of each it
// holds: data batches that are not transactional or whose transaction
// committed, their records in [pos, end) (a batch straddling pos or end is
// stored whole, its frame naming the records held), each handed to keep in
// offset order as soon as it is decoded with dec (its records alias the
// batch and dec's buffers, valid until keep returns: a batch's records
// are not copied, only looked at and written). Control batches
// (transaction markers) and the batches of aborted transactions are
// dropped by the response's aborted_transactions the way Kafka's consumer
// drops them (franz-go's source.go aborter; Java's CompletedFetch): a
// transactional batch of a producer with an aborted transaction whose first
// offset is at or below the batch's base offset is aborted, until that
// producer's ABORT marker. next is the offset after the last whole batch
// (kept or dropped), pos when none. ok is false when the response holds a
// message set older than magic 2 (keep is then never called): the caller
// copies its records into record segments. A batch that fails its CRC-32C
// or does not decode is an error, after keep has seen the batches before
// it; keep's own error is returned as it is.
func keepBatches(rp *kmsg.FetchResponseTopicPartition, partition int32, pos, end int64, dec *format.BatchDecoder, keep func(keptBatch) error) (next int64, ok bool, err error) {
	batches := format.SplitBatches(rp.RecordBatches)
	for _, b := range batches {
		if b.Magic != 2 {
			return pos, false, nil
		}
	}
	aborted := map[int64][]int64{} // producer id -> first offsets of its aborted transactions, ascending
	for _, t := range rp.AbortedTransactions {
		aborted[t.ProducerID] = append(aborted[t.ProducerID], t.FirstOffset)
	}
	for pid := range aborted {
		slices.Sort(aborted[pid])
	}
	next = pos
	for _, b := range batches {
		next = max(next, b.LastOffset+1)
		abortedTxn := b.Transactional && len(aborted[b.ProducerID]) > 0 && aborted[b.ProducerID][0] <= b.BaseOffset
		if b.Control {
			if abortedTxn {
				recs, err := dec.Decode(b.Bytes, partition)
				if err != nil {
					return pos, true, err
				}
				// A control record's key is version int16, type int16;
				// type 0 is ABORT (ControlRecordType).
				if len(recs) > 0 && len(recs[0].Key) >= 4 && recs[0].Key[2] == 0 && recs[0].Key[3] == 0 {
					aborted[b.ProducerID] = aborted[b.ProducerID][1:]
				}
			}
			continue
		}
		if abortedTxn || b.LastOffset < pos || b.BaseOffset >= end {
			continue
		}
		recs, err := dec.Decode(b.Bytes, partition)
		if err != nil {
			return pos, true, err
		}
		i, j := 0, len(recs)
		for i < j && recs[i].Offset < pos {
			i++
		}
		for j > i && recs[j-1].Offset >= end {
			j--
		}
		if i < j {
			if err := keep(keptBatch{raw: b.Bytes, recs: recs[i:j]}); err != nil {
				return pos, true, &keepError{err}
			}
		}
	}
	return next, true, nil
}

// keepError carries keepBatches' callback error out apart from its own.
type keepError struct{ err error }

func (e *keepError) Error() string { return e.err.Error() }
func (e *keepError) Unwrap() error { return e.err }
