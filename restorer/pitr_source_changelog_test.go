package restorer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestPointInTimeOfASourceChangelog: under --strategy rebuild a
// source-topic changelog (the sample's customers, which a store restores
// from) is an input: a --to-time cut of it is allowed, and cuts it (issue
// 12; it was refused as if its state were restored). With the changelog
// strategy, where its state would be restored, the cut stays refused,
// naming it.
func TestPointInTimeOfASourceChangelog(t *testing.T) {
	_, store, _ := backedUpSample(t)
	dst := testkit.StartKfake(t, 1)
	// The sample's customers: records a second apart from two hours ago,
	// and a third version of each an hour later: cut between them.
	at := time.Now().Add(-90 * time.Minute)
	o := restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ApplicationID: sample.AppID,
		Strategy: restorer.StrategyRebuild, ToTime: &at, ReplicationFactor: 1, DryRun: true}
	rep, err := restorer.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("rebuild --to-time with a source-topic changelog: %v", err)
	}
	cut := false
	for _, tp := range rep.Topics {
		if tp.Topic == sample.Changelog {
			t.Errorf("rebuild restores the changelog %s", tp.Topic)
		}
		if tp.Topic != sample.Customers {
			continue
		}
		for _, p := range tp.PartitionPlans {
			if p.CutAt >= 0 && p.CutAt < p.SourceEnd {
				cut = true
			}
		}
	}
	if !cut {
		t.Errorf("customers not cut by --to-time in the plan: %+v", rep.Topics)
	}

	o.Strategy, o.Topics = restorer.StrategyChangelog, []string{sample.Customers}
	_, err = restorer.Run(context.Background(), o)
	var re *restorer.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "point-in-time restore (--to-time) of changelog topics is refused: "+sample.Customers) {
		t.Fatalf("changelog strategy --to-time of a source-topic changelog: %v; want the changelog refusal naming it", err)
	}
}
