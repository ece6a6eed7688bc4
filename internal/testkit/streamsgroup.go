package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupDescriptionAvailable is the TopologyDescriptionStatus of a
// StreamsGroupDescribe v1 group whose topology description (KIP-1331) the
// broker holds and returned: 0 NOT_REQUESTED, 1 NOT_STORED, 2 ERROR,
// 3 AVAILABLE (StreamsGroupDescribeResponse.json).
const StreamsGroupDescriptionAvailable int8 = 3

// DescribeStreamsGroup asks the cluster at addrs for the streams group
// group (KIP-1071) with a StreamsGroupDescribe request of its own (API key
// 89, the highest version both sides know, asking for the topology
// description of KIP-1331 from v1), sent to the group's coordinator, and
// returns the group's entry as the broker gave it, ErrorCode included: a
// group that does not exist, or is not a streams group, comes back with
// GROUP_ID_NOT_FOUND. It is independent of the code under test (package
// streamsgroup). A request that fails or times out (30 s) fails the test.
func DescribeStreamsGroup(t testing.TB, addrs []string, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	g, err := TryDescribeStreamsGroup(addrs, group)
	if err != nil {
		t.Fatalf("StreamsGroupDescribe %q on %v: %v", group, addrs, err)
	}
	return g
}

// TryDescribeStreamsGroup is DescribeStreamsGroup returning its error
// instead of failing a test: for polls from another goroutine.
func TryDescribeStreamsGroup(addrs []string, group string) (kmsg.StreamsGroupDescribeResponseGroup, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 0 // group
	fc.CoordinatorKeys = []string{group}
	fc.CoordinatorKey = group
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("find its coordinator: %w", err)
	}
	node := fresp.NodeID
	if len(fresp.Coordinators) == 1 {
		c := fresp.Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("find its coordinator: %w", err)
		}
		node = c.NodeID
	} else if err := kerr.ErrorForCode(fresp.ErrorCode); err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("find its coordinator: %w", err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	req.IncludeTopologyDescription = true // v1+; dropped when the broker speaks v0 only
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("%d groups in the response, want 1", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// WaitStreamsGroupState polls DescribeStreamsGroup every 250 ms until the
// streams group group is in state want (the broker's names, as
// StreamsGroupDescribe carries them: "Empty", "NotReady", "Assigning",
// "Reconciling", "Stable", "Dead"; Kafka 4.4 StreamsGroup.StreamsGroupState)
// and returns it; it fails
// the test after timeout, naming the last state or error seen.
func WaitStreamsGroupState(t testing.TB, addrs []string, group, want string, timeout time.Duration) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		g, err := TryDescribeStreamsGroup(addrs, group)
		last := ""
		switch {
		case err != nil:
			last = err.Error()
		case g.ErrorCode != 0:
			last = kerr.ErrorForCode(g.ErrorCode).Error()
		case g.State == want:
			return g
		default:
			last = "state " + g.State
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams group %q not %s after %v: last %s", group, want, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
