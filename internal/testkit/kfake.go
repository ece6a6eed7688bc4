package testkit

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kfake is a franz-go kfake cluster started by StartKfake. The embedded
// *kfake.Cluster gives the control hooks for fault injection (Control,
// ControlKey, SleepControl, MoveTopicPartition, RemoveNode, ...). Bootstrap
// and Addrs mirror Kafka's, so a test can run against either.
type Kfake struct {
	*kfake.Cluster
	addrs []string
}

// StartKfake starts an in-process kfake cluster of the given number of
// brokers, each on its own free TCP port on 127.0.0.1, and closes it in
// t.Cleanup. opts are applied after kfake.NumBrokers(brokers), so
// kfake.Ports overrides the count. kfake's defaults apply otherwise: no
// auto topic creation, 10 partitions by default, cluster ID "kfake", no
// logging (pass kfake.WithLogger to see its logs).
func StartKfake(t testing.TB, brokers int, opts ...kfake.Opt) *Kfake {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(brokers)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake cluster of %d brokers: %v", brokers, err)
	}
	t.Cleanup(c.Close)
	return &Kfake{Cluster: c, addrs: c.ListenAddrs()}
}

// Bootstrap returns the broker addresses joined by commas, for
// bootstrap.servers or kcat -b.
func (k *Kfake) Bootstrap() string { return strings.Join(k.addrs, ",") }

// Addrs returns the brokers' "127.0.0.1:<port>" addresses as started (a
// node added later with AddNode is not included).
func (k *Kfake) Addrs() []string { return append([]string(nil), k.addrs...) }

// Client returns a franz-go client seeded with addrs, closed in t.Cleanup.
// opts are added after kgo.SeedBrokers.
func Client(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatalf("new kafka client for %v: %v", addrs, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm admin client on a Client seeded with addrs; the
// underlying client is closed in t.Cleanup.
func Admin(t testing.TB, addrs []string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	return kadm.NewClient(Client(t, addrs, opts...))
}
