// Package estimate answers the operator's question before an incident
// (docs/DOMAIN.md#rto): what recovery time does each strategy give us? For
// each strategy of docs/DOMAIN.md#strategies it sums the data a restore
// must move, from the latest backup's manifest (and, when the source
// cluster is reachable, the current log sizes of the input topics a rebuild
// must reprocess), and projects the restore time from the throughput this
// repository's own past restores measured (their reports), or a stated
// default.
package estimate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// DefaultRecordsPerSecond is the restore throughput assumed when the
// repository holds no restore report to measure it from. It is this
// project's own figure for a restore into a small cluster; a restore or
// drill into the real target replaces it with a measured one.
const DefaultRecordsPerSecond = 20000

// Throughput is the restore throughput used for the projections.
type Throughput struct {
	RecordsPerSecond float64  `json:"records_per_second"`
	Source           string   `json:"source"`            // "measured" or "default"
	Reports          []string `json:"reports,omitempty"` // restore ids it was measured from
	Records          int64    `json:"records,omitempty"` // records those restores produced
	Seconds          float64  `json:"seconds,omitempty"` // time they took
	// Unreadable names the reports that were skipped because they do not
	// decode (truncated, overwritten), each as "<key>: <error>", newest
	// first. They are not counted in Reports or in MaxReports.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Strategy is one strategy's estimate.
type Strategy struct {
	Name     string   `json:"name"` // changelog, rebuild, standby
	Topics   []string `json:"topics"`
	Records  int64    `json:"records"`   // records the restore produces
	RawBytes int64    `json:"raw_bytes"` // their keys, values and headers
	// RestoreSeconds is the projected time of the restore itself (the
	// tool writing the records), from the throughput.
	RestoreSeconds float64 `json:"restore_seconds"`
	// Reprocess is what the application must do after the restore before
	// it has caught up, which the tool cannot time.
	Reprocess string `json:"reprocess"`
	Note      string `json:"note,omitempty"`
}

// Estimate is the answer for one backup.
type Estimate struct {
	BackupID   string     `json:"backup_id"`
	CutAt      time.Time  `json:"cut_at"`
	Throughput Throughput `json:"throughput"`
	Strategies []Strategy `json:"strategies"`
}

// Options says what to estimate.
type Options struct {
	Store    storage.Backend
	BackupID string // "" or "latest"
	// InputLogRecords, when non-nil, gives the current number of offsets
	// (log end - log start) of an input topic on the source cluster: a
	// rebuild reprocesses those, which can exceed what the backup holds.
	InputLogRecords func(topic string) (int64, bool)
	// MaxReports bounds how many of the latest restore reports the
	// throughput is measured from; default 5.
	MaxReports int
}

// Run computes the estimate. A restore report that does not decode is
// skipped (Throughput.Unreadable names it); an error reading the manifest,
// listing the reports or reading one (the storage failed) is returned.
func Run(ctx context.Context, o Options) (*Estimate, error) {
	if o.MaxReports <= 0 {
		o.MaxReports = 5
	}
	m, err := repository.Manifest(ctx, o.Store, o.BackupID)
	if err != nil {
		return nil, err
	}
	tp, err := measure(ctx, o.Store, o.MaxReports)
	if err != nil {
		return nil, err
	}
	e := &Estimate{BackupID: m.BackupID, CutAt: m.CutAt, Throughput: tp}
	changelog := Strategy{Name: "changelog", Reprocess: "Kafka Streams restores every store from its restored changelog (about as many records as the changelogs hold), then processes the input after the committed offsets"}
	rebuild := Strategy{Name: "rebuild", Reprocess: "the application reprocesses every restored input record from the start to rebuild its state: this takes as long as processing that volume takes (not measured here)"}
	for _, t := range m.Topics {
		var recs, raw int64
		for _, p := range t.PartitionCuts {
			recs += p.Records
			for _, s := range p.Segments {
				raw += s.RawSize
			}
		}
		changelog.Topics = append(changelog.Topics, t.Name)
		changelog.Records += recs
		changelog.RawBytes += raw
		if t.Class != string(topicfilter.Changelog) || t.SourceChangelog {
			rebuild.Topics = append(rebuild.Topics, t.Name)
			rebuild.Records += recs
			rebuild.RawBytes += raw
		}
	}
	var reprocess int64
	for _, name := range rebuild.Topics {
		if o.InputLogRecords != nil {
			if n, ok := o.InputLogRecords(name); ok {
				reprocess += n
			}
		}
	}
	if reprocess > 0 {
		rebuild.Note = fmt.Sprintf("the source cluster's logs of these topics hold %d offsets now", reprocess)
	}
	changelog.RestoreSeconds = float64(changelog.Records) / tp.RecordsPerSecond
	rebuild.RestoreSeconds = float64(rebuild.Records) / tp.RecordsPerSecond
	standby := Strategy{Name: "standby", Reprocess: "none", Note: "num.standby.replicas > 0 keeps a warm copy of each task on another instance: near-instant failover, but it does not survive the loss of the cluster or region (standbys read the same cluster)"}
	e.Strategies = []Strategy{changelog, rebuild, standby}
	return e, nil
}

// measure derives the throughput from the latest restore reports, newest
// first. A report that does not decode (repository.ErrUnreadableReport) is
// skipped and named in Unreadable, as state check skips it; any other error
// (the storage failed, the listing failed) is returned.
func measure(ctx context.Context, store storage.Backend, max int) (Throughput, error) {
	ids, err := repository.ReportIDs(ctx, store)
	if err != nil {
		return Throughput{}, err
	}
	tp := Throughput{Source: "measured"}
	var unreadable []string
	for _, id := range ids {
		if len(tp.Reports) == max {
			break
		}
		rep, err := repository.LoadReport(ctx, store, id)
		if errors.Is(err, repository.ErrUnreadableReport) && !storage.IsTransient(err) {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if err != nil {
			return Throughput{}, err
		}
		d := rep.FinishedAt.Sub(rep.StartedAt).Seconds()
		if rep.Records <= 0 || d <= 0 {
			continue // a resumed or complete run measures nothing
		}
		tp.Reports = append(tp.Reports, id)
		tp.Records += rep.Records
		tp.Seconds += d
	}
	if tp.Records == 0 {
		return Throughput{RecordsPerSecond: DefaultRecordsPerSecond, Source: "default", Unreadable: unreadable}, nil
	}
	tp.RecordsPerSecond = float64(tp.Records) / tp.Seconds
	tp.Unreadable = unreadable
	return tp, nil
}
