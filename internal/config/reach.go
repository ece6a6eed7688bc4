package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reach waits until the cluster of cl answers a Metadata request (for no
// topics: its brokers only). Every command calls it right after
// kgo.NewClient on the options of ClientOptions, as its first contact with
// a cluster, so that every command survives a cluster that is restarting
// when it starts, and fails the same way when the cluster stays away.
//
// It asks again, with RetryBackoff between tries, while the cluster fails
// retriably: a refused, reset or timed-out connection (franz-go's "unable
// to dial"), a request that timed out (request_timeout), a connection
// closed mid-request, or a retriable Kafka error code. franz-go does not
// retry a refused connection to the only seed broker (it fails fast
// "so that a typo'd address is found", kgo's isRetryableBrokerErr) and
// stops retrying timeouts up to one backoff before its RetryTimeout; this
// loop is what makes retry_timeout the bound.
//
// The bound: with request (kgo.RequestTimeoutOverhead) and budget
// (kgo.RetryTimeout) of cl, an unreachable cluster fails no earlier than
// budget after the call and no later than budget + request. A permanent
// error (an unknown host, a TLS or SASL failure) ends the wait at once;
// ctx ending ends it with ctx's error, wrapped. The error is what names the cluster: "NAME SEEDS did not answer
// for DURATION (retry_timeout ...)" with the last error wrapped, e.g.
// "source cluster 10.0.0.7:9092 did not answer for 2m0s (retry_timeout
// 2m0s, 14 tries): unable to dial: dial tcp 10.0.0.7:9092: connect:
// connection refused".
func Reach(ctx context.Context, cl *kgo.Client, name string) error {
	request, _ := cl.OptValue(kgo.RequestTimeoutOverhead).(time.Duration)
	budget, _ := cl.OptValue(kgo.RetryTimeout).(time.Duration)
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	start := time.Now()
	// franz-go counts its own RetryTimeout from each call: a call started
	// just before the budget ends would retry for another whole budget.
	deadline := start.Add(budget + request)
	var last error
	for tries := 1; ; tries++ {
		tctx, cancel := context.WithDeadline(ctx, deadline)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		_, err := req.RequestWith(tctx, cl)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return stopped(ctx, name, seeds, tries, err)
		}
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err // our deadline ending a try says less than the try before
		}
		waited := time.Since(start)
		if !reachRetriable(err) || waited >= budget {
			return fmt.Errorf("%s %s did not answer for %s (retry_timeout %s, %d tries): %w",
				name, strings.Join(seeds, ","), waited.Round(time.Millisecond), budget, tries, last)
		}
		t := time.NewTimer(min(RetryBackoff(tries), budget-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(ctx, name, seeds, tries, last)
		case <-t.C:
		}
	}
}

// stopped is Reach's error when ctx ends first: ctx's error (so that a
// cancelled run stays cancelled), naming the cluster and its last error.
func stopped(ctx context.Context, name string, seeds []string, tries int, last error) error {
	return fmt.Errorf("%s %s: %w (%d tries; last: %v)", name, strings.Join(seeds, ","), context.Cause(ctx), tries, last)
}

// reachRetriable reports whether a failed Metadata request is worth asking
// again: a transient network failure, a timeout, or a retriable Kafka error
// code.
func reachRetriable(err error) bool {
	return Transient(err) || errors.Is(err, context.DeadlineExceeded) || kerr.IsRetriable(err)
}

// Transient reports whether err is a network failure that a broker
// restart causes and that a retry can outlast: a refused, reset or
// timed-out connection (franz-go's "unable to dial", which franz-go itself
// retries only on another broker: kgo's isRetryableBrokerErr), a request
// that timed out or whose connection closed (kgo.IsRetryableBrokerErr).
// An unknown host is not transient. Kafka error codes are kerr.IsRetriable's.
func Transient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return false
	}
	var op *net.OpError
	return kgo.IsRetryableBrokerErr(err) || errors.As(err, &op)
}
