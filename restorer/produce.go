package restorer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/kgotime"
	"github.com/kafkastreams-dr/kafkastreams-dr/offsets"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// This file holds the restore's writes of topics and records: the
// topics created (or prepared) on the target, every partition's records
// produced in order to the same partition, and the final configs.

// Kafka's defaults, used when the target does not report a setting.
const (
	defaultMessageMaxBytes = 1048588 // message.max.bytes
	produceChunk           = 2000    // records per ProduceSync call and partition
	produceBytes           = 4 << 20 // bytes per ProduceSync call and partition
)

// createTopics creates the plan's topics to create (recording each one's
// topic id in the journal, saved after each), applies the pre-configs of
// the others, and waits until every partition is ready (waitReady). A
// created topic's log starts at 0.
func (r *restore) createTopics(ctx context.Context) error {
	for i := range r.plan.Topics {
		tp := &r.plan.Topics[i]
		_, recorded := r.jour.FilledConfigs[tp.Topic]
		if was := r.preConfigsWere[tp.Topic]; tp.Action == format.ActionFill && (r.jour.Filled[tp.Topic] != tp.TargetTopicID || was != nil && !recorded) {
			// Before anything is written into it: a run killed after its
			// first records resumes it (the journal's filled), not
			// refuses it as another writer's; and before its pre-configs:
			// a run killed after them plans the resumed fill from the
			// configs they replaced (filled_configs), so it ends with the
			// final configs.
			if r.jour.Filled == nil {
				r.jour.Filled = map[string]string{}
			}
			r.jour.Filled[tp.Topic] = tp.TargetTopicID
			if was != nil {
				if r.jour.FilledConfigs == nil {
					r.jour.FilledConfigs = map[string]map[string]format.TopicConfig{}
				}
				r.jour.FilledConfigs[tp.Topic] = was
			}
			if err := r.saveJournal(ctx); err != nil {
				return err
			}
		}
		if tp.Action != format.ActionCreate {
			if err := r.applyPreConfigs(ctx, tp); err != nil {
				return err
			}
			continue
		}
		// A retriable error or an UNKNOWN_SERVER_ERROR is asked again for
		// the target's retry_timeout (issue 14); a retry that finds the
		// topic (TOPIC_ALREADY_EXISTS) goes to createdAnyway.
		var resp kadm.CreateTopicResponse
		err := r.retrying(ctx, "CreateTopics", func() (err error) {
			if resp, err = r.adm.CreateTopic(ctx, int32(tp.Partitions), int16(tp.ReplicationFactor), ptrs(tp.Configs), tp.Topic); err == nil {
				err = resp.Err
			}
			return err
		})
		if errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, kerr.TopicAlreadyExists) {
			// A CreateTopics that timed out may have created the topic
			// all the same (Kafka does not undo it), and a retry of it
			// then finds it there.
			id, aerr := r.createdAnyway(ctx, tp, err)
			if aerr != nil {
				return aerr
			}
			resp.ID, err = id, nil
		}
		if err != nil {
			return fmt.Errorf("create topic %q (CreateTopics) on the target: %w %s", tp.Topic, err, resp.ErrMessage)
		}
		r.jour.Topics[tp.Topic] = kafkaTopicID(resp.ID)
		if err := r.saveJournal(ctx); err != nil {
			return err
		}
		for _, pp := range tp.PartitionPlans {
			setOff(r.targetStart, tp.Topic, pp.Partition, 0)
		}
	}
	r.log.Debug("topics created", "topics", len(r.jour.Topics))
	if err := r.waitReady(ctx); err != nil {
		return err
	}
	r.log.Debug("every partition has a leader and answers")
	return nil
}

// createdAnyway returns the topic id of tp's topic after its CreateTopics
// answered createErr (REQUEST_TIMED_OUT, or TOPIC_ALREADY_EXISTS to a
// retry of it): the topic is this restore's own when it appears on the
// target within createdAnywayWait with the planned partition count, tp's
// configs and no record. Otherwise the error names createErr and what was
// found; running the restore again then plans the topic anew (an empty
// one is filled, one holding records refused).
func (r *restore) createdAnyway(ctx context.Context, tp *TopicPlan, createErr error) (kadm.TopicID, error) {
	fail := func(found string) (kadm.TopicID, error) {
		return kadm.TopicID{}, fmt.Errorf("create topic %q on the target: %w; %s: run the restore again (an empty topic is then filled, one holding records refused)", tp.Topic, createErr, found)
	}
	deadline := time.Now().Add(createdAnywayWait)
	var td kadm.TopicDetail
	for {
		tds, err := r.adm.ListTopics(ctx, tp.Topic)
		if err != nil {
			return fail(fmt.Sprintf("the topic could not be looked up (%v)", err))
		}
		if d, ok := tds[tp.Topic]; ok && d.Err == nil {
			td = d
			break
		}
		if !time.Now().Before(deadline) {
			return fail(fmt.Sprintf("the topic did not appear within %s", createdAnywayWait))
		}
		select {
		case <-ctx.Done():
			return kadm.TopicID{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if len(td.Partitions) != tp.Partitions {
		return fail(fmt.Sprintf("the topic exists with %d partitions, not the %d asked for", len(td.Partitions), tp.Partitions))
	}
	ends, err := r.adm.ListEndOffsets(ctx, tp.Topic)
	if err != nil {
		return fail(fmt.Sprintf("its end offsets could not be read (%v)", err))
	}
	var held int64
	ends.Each(func(lo kadm.ListedOffset) { held += lo.Offset })
	if held > 0 {
		return fail("the topic exists and holds records")
	}
	rcs, err := r.adm.DescribeTopicConfigs(ctx, tp.Topic)
	if err == nil && (len(rcs) != 1 || rcs[0].Err != nil) {
		err = errors.New("no configs in the answer")
		if len(rcs) == 1 {
			err = rcs[0].Err
		}
	}
	if err != nil {
		return fail(fmt.Sprintf("its configs could not be read (%v)", err))
	}
	have := map[string]string{}
	for _, c := range rcs[0].Configs {
		have[c.Key] = deref(c.Value)
	}
	for k, v := range tp.Configs {
		if have[k] != v {
			return fail(fmt.Sprintf("the topic exists with %s=%s, not the %s asked for (another client created it)", k, have[k], v))
		}
	}
	r.log.Warn("CreateTopics answered an error but the broker created the topic as asked: restoring into it", "topic", tp.Topic, "err", createErr)
	return td.ID, nil
}

// createdAnywayWait bounds how long createdAnyway waits for a topic whose
// CreateTopics timed out to appear in the metadata.
var createdAnywayWait = 30 * time.Second

// restoreRecords restores every planned partition (restorePartition),
// Options.Concurrency at once, and returns their reports in plan order.
// The Schema Registry's storage topic (TopicPlan.SchemaRegistry) goes
// first and alone: every other partition starts once its records are all
// in, so no restored record carries a schema id the target's registry
// cannot resolve yet. The first error cancels the others and is returned.
func (r *restore) restoreRecords(ctx context.Context) ([]PartitionReport, error) {
	type job struct {
		tp *TopicPlan
		pp PartitionPlan
		t  *format.Topic
		p  *format.Partition
	}
	var jobs []job
	for i := range r.plan.Topics {
		tp := &r.plan.Topics[i]
		t := topicOf(r.sel, tp.Topic)
		for _, pp := range tp.PartitionPlans {
			if r.shardRun != nil && !r.shardRun.Owns(r.o.Shard.Index, tp.Topic, pp.Partition) {
				continue // another shard's (shard.go)
			}
			for pi := range t.PartitionCuts {
				if t.PartitionCuts[pi].Partition == pp.Partition {
					jobs = append(jobs, job{tp, pp, t, &t.PartitionCuts[pi]})
				}
			}
		}
	}
	reports := make([]PartitionReport, len(jobs))
	var registry, rest []int // indexes in jobs
	for i, j := range jobs {
		if j.tp.SchemaRegistry {
			registry = append(registry, i)
		} else {
			rest = append(rest, i)
		}
	}
	for _, wave := range [][]int{registry, rest} {
		if len(wave) == 0 {
			continue
		}
		if err := r.restoreWave(ctx, wave, func(ctx context.Context, i int) error {
			j := jobs[i]
			began := time.Now()
			pr, err := r.restorePartition(ctx, j.tp, j.pp, j.t, j.p)
			r.log.Debug("partition restored", "topic", j.tp.Topic, "partition", j.pp.Partition, "records", pr.Records, "took", time.Since(began))
			reports[i] = pr
			return err
		}); err != nil {
			return nil, err
		}
	}
	return reports, nil
}

// restoreWave runs restore(ctx, i) for every i of wave, Options.Concurrency
// at once; the first error cancels the others and is returned.
func (r *restore) restoreWave(ctx context.Context, wave []int, restore func(ctx context.Context, i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan int)
	for range min(r.o.Concurrency, len(wave)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range queue {
				if err := restore(cctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for _, i := range wave {
		select {
		case queue <- i:
		case <-cctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// setFinalConfigs alters the configs the plan sets once the records are in
// (TopicPlan.FinalConfigs: message.timestamp.type=LogAppendTime).
func (r *restore) setFinalConfigs(ctx context.Context) error {
	for _, tp := range r.plan.Topics {
		if len(tp.FinalConfigs) == 0 {
			continue
		}
		var acs []kadm.AlterConfig
		for k, v := range tp.FinalConfigs {
			acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
		resp, err := r.adm.AlterTopicConfigs(ctx, acs, tp.Topic)
		if err == nil {
			for _, ar := range resp {
				if ar.Err != nil {
					err = ar.Err
				}
			}
		}
		if err != nil {
			return fmt.Errorf("set final configs %v of topic %q: %w", tp.FinalConfigs, tp.Topic, err)
		}
	}
	return nil
}

// checkEnds compares each restored partition's log end on the target with
// the end its offset map says: another producer writing during the restore
// would break the restored sequence and the offset translation (docs/DOMAIN.md#field-case-19 A4).
func (r *restore) checkEnds(ctx context.Context, reports []PartitionReport) error {
	var names []string
	for _, pr := range reports {
		if !slices.Contains(names, pr.Topic) {
			names = append(names, pr.Topic)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ends, err := r.listEnds(ctx, names...)
	if err != nil {
		return fmt.Errorf("check the end offsets of the restored topics: %w", err)
	}
	bad, err := endsMoved(reports, ends)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("another producer wrote to the restored topics during the restore (stop every writer, delete the topics and restore again): %s", strings.Join(bad, "; "))
	}
	return nil
}

// waitLeaders waits until every partition of every planned topic has a
// leader on the target (docs/DOMAIN.md#field-case-05 A4): metadata right
// after CreateTopics can still miss partitions, and a loaded broker
// creating thousands of them takes a while to elect every leader. It asks
// again with backoff (50ms doubling to leaderMaxBackoff) for the target's
// retry_timeout (DESIGN.md, "Every Kafka call is bounded"), then fails
// naming the first partition without a leader, the budget and the fix;
// it used to stop after a fixed 60s whatever the budget said (issue 13).
func (r *restore) waitLeaders(ctx context.Context) error {
	names := make([]string, len(r.plan.Topics))
	for i, tp := range r.plan.Topics {
		names[i] = tp.Topic
	}
	_, budget := r.timeouts()
	began := time.Now()
	for n := 1; ; n++ {
		ds, err := r.adm.ListTopics(ctx, names...)
		if err == nil {
			err = leaderless(r.plan.Topics, ds)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if waited := time.Since(began); waited >= budget {
			return fmt.Errorf("the target's topics have no leader for every partition after %s (target.retry_timeout %s; raise it for a broker that creates many partitions under load, then run the same restore again: it resumes): %w",
				waited.Round(time.Millisecond), budget, err)
		}
		if err := sleep(ctx, min(backoff(n), leaderMaxBackoff, budget-time.Since(began))); err != nil {
			return err
		}
	}
}

// leaderMaxBackoff caps the wait between two Metadata requests of
// waitLeaders: the leaders of a large creation come within seconds, and a
// Metadata request is cheap next to waiting a whole maxBackoff too long.
const leaderMaxBackoff = 500 * time.Millisecond

// leaderless returns nil when ds lists every partition of every planned
// topic with a leader and no error, else the first that has none: a
// *PartitionError with the broker's error (LEADER_NOT_AVAILABLE for a
// partition listed without a leader), in plan order.
func leaderless(topics []TopicPlan, ds kadm.TopicDetails) error {
	for _, tp := range topics {
		d, ok := ds[tp.Topic]
		switch {
		case !ok:
			return &PartitionError{Op: "wait for a leader", Topic: tp.Topic, Partition: -1, Err: kerr.UnknownTopicOrPartition}
		case d.Err != nil:
			return &PartitionError{Op: "wait for a leader", Topic: tp.Topic, Partition: -1, Err: d.Err}
		case len(d.Partitions) != tp.Partitions:
			return &PartitionError{Op: "wait for a leader", Topic: tp.Topic, Partition: -1,
				Err: fmt.Errorf("metadata lists %d of its %d partitions", len(d.Partitions), tp.Partitions)}
		}
		for _, pd := range d.Partitions.Sorted() {
			switch {
			case pd.Err != nil:
				return &PartitionError{Op: "wait for a leader", Topic: tp.Topic, Partition: pd.Partition, Err: pd.Err}
			case pd.Leader < 0:
				return &PartitionError{Op: "wait for a leader", Topic: tp.Topic, Partition: pd.Partition, Err: kerr.LeaderNotAvailable}
			}
		}
	}
	return nil
}

// restorePartition produces one partition's records in order to the same
// partition, skipping those a resumed restore finds on the target, and
// builds its offset map from the offsets the target assigned.
func (r *restore) restorePartition(ctx context.Context, tp *TopicPlan, pp PartitionPlan, t *format.Topic, p *format.Partition) (PartitionReport, error) {
	start := r.targetStart[tp.Topic][pp.Partition]
	pr := PartitionReport{Topic: tp.Topic, Partition: pp.Partition, Class: t.Class, SourceEnd: p.EndOffset, Map: &offsets.Map{NewEnd: start}}
	if t.SourceChangelog {
		pr.Class = string(topicfilter.Changelog)
	}
	cut := r.sel.cuts[tp.Topic][pp.Partition]
	var lastExisting *kgo.Record
	if pp.AlreadyThere > 0 {
		rec, err := fetchOne(ctx, r.o.Target, tp.Topic, pp.Partition, start+pp.AlreadyThere-1)
		if err != nil {
			return pr, fmt.Errorf("resume topic %q partition %d: read the last restored record: %w", tp.Topic, pp.Partition, err)
		}
		lastExisting = rec
	}
	cl, err := r.producerFor(tp)
	if err != nil {
		return pr, err
	}
	// The chunks are produced asynchronously, several in flight (bounded
	// by the client's Options.MaxBufferedBytes); the idempotent producer
	// keeps them in order, and their callbacks come in order. The first
	// error cancels the partition's produces and is returned once every
	// callback has come back.
	//
	// Nobody else may write to the partition: the restored sequence and
	// the offset map would break (the restore lock keeps other restores
	// out; this catches any other producer). Every record must land at
	// the offset after the one before, the first at the end preflight
	// read (start + AlreadyThere): a foreign record written before or
	// between ours moves the next one. One written after our last is
	// found by checkEnds, one ListOffsets for every partition once all
	// are in. No ListOffsets round trip per chunk or partition.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	var (
		mu         sync.Mutex
		first      error // the first failure, reported as it is
		produceErr error // the first produce error, named by produceError
		wg         sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil && produceErr == nil {
			first = err
		}
		mu.Unlock()
		pcancel()
	}
	var (
		batch  []*kgo.Record
		origs  []int64
		bytesN int
		i      int64
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		chunk, chunkOrigs, chunkBytes := batch, origs, int64(bytesN)
		batch, origs, bytesN = nil, nil, 0
		cctx, ccancel := context.WithTimeout(pctx, r.produceTimeout())
		done := func(failed bool) {
			ccancel()
			if !failed {
				r.o.Observer.Restored(tp.Topic, pp.Partition, int64(len(chunk)))
				if bo, ok := r.o.Observer.(BytesObserver); ok {
					bo.RestoredBytes(tp.Topic, pp.Partition, int64(len(chunk)), chunkBytes)
				}
			}
			wg.Done()
		}
		left := len(chunk)
		// One promise for the chunk, not a closure per record (a few
		// dozen bytes each, beside every record in flight): franz-go
		// calls a partition's promises serially and its successes in
		// the order produced, so the k-th callback before any failure is
		// chunk[k]'s (checked; after a failure the rest are skipped).
		k := 0
		promise := func(rec *kgo.Record, err error) {
			mu.Lock()
			at := k
			k++
			switch {
			case first != nil || produceErr != nil:
			case err != nil:
				produceErr = err
			case chunk[at] != rec:
				first = fmt.Errorf("topic %q partition %d: the producer acknowledged the records out of order (record %d of a chunk of %d)", tp.Topic, pp.Partition, at, len(chunk))
			case rec.Offset != pr.Map.NewEnd:
				first = foreignWriter(tp.Topic, pp.Partition, rec.Offset, pr.Map.NewEnd)
			default:
				if err := pr.Map.Add(chunkOrigs[at], rec.Offset); err != nil {
					first = fmt.Errorf("topic %q partition %d: %w", tp.Topic, pp.Partition, err)
				}
			}
			left--
			last, failed := left == 0, first != nil || produceErr != nil
			if last && !failed {
				pr.Records += int64(len(chunk))
			}
			mu.Unlock()
			if failed {
				pcancel()
			}
			if last {
				done(failed)
			}
		}
		wg.Add(1)
		for _, kr := range chunk {
			cl.Produce(cctx, kr, promise)
		}
		mu.Lock()
		defer mu.Unlock()
		if first != nil || produceErr != nil {
			return errStopped
		}
		return nil
	}
	oneAtATime := r.batches.oneAtATime(tp.Topic)
	r.o.Observer.RestoreStart(tp.Topic, pp.Partition, pp.Records-pp.AlreadyThere)
	defer func() { r.o.Observer.RestoreEnd(tp.Topic, pp.Partition, pr.Records) }()
	err = eachRecord(pctx, r.store, tp.Topic, p, cut, func(rec *format.Record) error {
		defer func() { i++ }()
		if i < pp.AlreadyThere {
			if i == pp.AlreadyThere-1 && !sameRecord(rec, lastExisting) {
				return fmt.Errorf("resume topic %q partition %d: the target's record at offset %d is not the backup's record at original offset %d: the topic holds other data; delete it and restore again",
					tp.Topic, pp.Partition, start+i, rec.Offset)
			}
			return pr.Map.Add(rec.Offset, start+i)
		}
		if batch == nil {
			batch, origs = make([]*kgo.Record, 0, produceChunk), make([]int64, 0, produceChunk)
		}
		batch = append(batch, produceRecord(rec, tp.Topic, pp.Partition))
		origs = append(origs, rec.Offset)
		bytesN += int(recordBytes(rec))
		if oneAtATime {
			// One record in the partition's buffer at a time: franz-go
			// sends it alone (batchLimits.oneAtATime).
			err := flush()
			wg.Wait()
			return err
		}
		if len(batch) >= produceChunk || bytesN >= produceBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil && !errors.Is(err, errStopped) {
		fail(err)
	}
	wg.Wait()
	switch {
	case produceErr != nil:
		return pr, r.produceError(ctx, tp.Topic, pp.Partition, produceErr)
	case first != nil:
		return pr, first
	}
	pr.NewEnd = pr.Map.NewEnd
	if got := pr.Map.Records(); got != pp.Records {
		return pr, fmt.Errorf("topic %q partition %d: restored %d records, the plan says %d", tp.Topic, pp.Partition, got, pp.Records)
	}
	return pr, nil
}

// inlineHeaders is how many headers a produced record carries in its own
// allocation (produceRecord): Kafka Streams and most producers add a few.
const inlineHeaders = 4

// recordWithHeaders is a kgo.Record and room for its headers, allocated
// together.
type recordWithHeaders struct {
	kgo.Record
	headers [inlineHeaders]kgo.RecordHeader
}

// produceRecord is the kgo.Record producing rec to partition of topic: its
// key, value and header values shared with rec (not copied), its timestamp
// in milliseconds. A record of at most inlineHeaders headers is one heap
// object with them (the restore allocated the header slice apart).
func produceRecord(rec *format.Record, topic string, partition int32) *kgo.Record {
	var kr *kgo.Record
	switch n := len(rec.Headers); {
	case n == 0:
		kr = new(kgo.Record)
	case n <= inlineHeaders:
		rh := new(recordWithHeaders)
		rh.Headers = rh.headers[:0:n]
		kr = &rh.Record
	default:
		kr = &kgo.Record{Headers: make([]kgo.RecordHeader, 0, n)}
	}
	kr.Topic, kr.Partition, kr.Key, kr.Value, kr.Timestamp = topic, partition, rec.Key, rec.Value, time.UnixMilli(rec.Timestamp)
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

// produceTimeout bounds the produce of one chunk of records: the target's
// retry budget plus one request, the same bound as every other Kafka call
// of the restore (DESIGN.md, "Every Kafka call is bounded").
func (r *restore) produceTimeout() time.Duration {
	request, retry := r.o.RequestTimeout, r.o.RetryTimeout
	if request <= 0 {
		request = defaultRequestTimeout
	}
	if retry <= 0 {
		retry = defaultRetryTimeout
	}
	return retry + request
}

// The defaults of Options.RequestTimeout and RetryTimeout
// (config.DefaultRequestTimeout and DefaultRetryTimeout).
const (
	defaultRequestTimeout = 30 * time.Second
	defaultRetryTimeout   = 2 * time.Minute
)

// produceError names the partition's leader on the target in a produce
// error. A chunk that ran out of time (ctx itself still live) is told as
// such, without the context's error: the restore failed, it was not
// cancelled.
func (r *restore) produceError(ctx context.Context, topic string, partition int32, err error) error {
	broker := r.leaderOf(ctx, topic, partition)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("produce to topic %q partition %d on broker %s: not acknowledged within %v (target.retry_timeout + target.request_timeout): the broker does not answer",
			topic, partition, broker, r.produceTimeout())
	}
	return fmt.Errorf("produce to topic %q partition %d on broker %s: %w", topic, partition, broker, err)
}

// leaderOf is "ID (host:port)" of the partition's leader on the target, as
// a fresh metadata request says (bounded by one request timeout), or as
// far as it is known.
func (r *restore) leaderOf(ctx context.Context, topic string, partition int32) string {
	request := r.o.RequestTimeout
	if request <= 0 {
		request = defaultRequestTimeout
	}
	mctx, cancel := context.WithTimeout(ctx, request)
	defer cancel()
	leader := int32(-1)
	if ds, err := r.adm.ListTopics(kadm.WithAuthorizedOps(mctx), topic); err == nil {
		if pd, ok := ds[topic].Partitions[partition]; ok {
			leader = pd.Leader
		}
	}
	for _, b := range r.bm.Brokers {
		if b.NodeID == leader {
			return fmt.Sprintf("%d (%s)", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
	}
	if leader >= 0 {
		return fmt.Sprintf("%d", leader)
	}
	var seeds []string
	for _, b := range r.bm.Brokers {
		seeds = append(seeds, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return "unknown, one of " + strings.Join(seeds, ",")
}

func sameRecord(a *format.Record, b *kgo.Record) bool {
	if b == nil || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) {
		return false
	}
	return a.Timestamp == kgotime.Millis(b.Timestamp) && len(a.Headers) == len(b.Headers)
}

// fetchOne reads the record at offset of one partition of the target.
func fetchOne(ctx context.Context, target []kgo.Opt, topic string, p int32, offset int64) (*kgo.Record, error) {
	cl, err := kgo.NewClient(append(slices.Clone(target),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("no record at offset %d: %w", offset, err)
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == offset && found == nil {
				found = r
			}
		})
		if found != nil {
			return found, nil
		}
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

func ptrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

func recordBytes(r *format.Record) int64 {
	n := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		n += int64(len(h.Key) + len(h.Value))
	}
	return n
}
