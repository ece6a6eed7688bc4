// Package streamsgroup reads a Kafka Streams application's streams group
// (KIP-1071, Kafka 4.1 and later) from the broker: its state, epoch,
// members, and the topology the group coordinator holds for it (the
// subtopologies' source, repartition and changelog topics, with the
// Topology#describe() text of KIP-1331 when the broker stores it). The
// topology is what the classification of the application's topics uses
// when the user gives none (AppTopology).
//
// It speaks the protocol through franz-go's kgo and kmsg and imports no
// other package of this module than topicfilter.
package streamsgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// Errors of Describe. Each is wrapped with the group's id; test with
// errors.Is.
var (
	// ErrNotFound: the broker knows no group of that id (GROUP_ID_NOT_FOUND,
	// "Group <id> not found.").
	ErrNotFound = errors.New("no such group")
	// ErrNotStreamsGroup: the group exists but is a classic or consumer
	// group (the application runs with group.protocol=classic, the
	// default). The broker answers GROUP_ID_NOT_FOUND with the message
	// "Group <id> is not a streams group." (GroupMetadataManager
	// .streamsGroup).
	ErrNotStreamsGroup = errors.New("not a streams group")
	// ErrUnsupported: the broker does not serve StreamsGroupDescribe
	// (API key 89 is not in its ApiVersions, or it answers
	// UNSUPPORTED_VERSION): Kafka before 4.1, or, presumably, a broker
	// whose streams protocol is turned off (the streams.version feature;
	// not measured here). Tested against kfake, which serves no key 89.
	ErrUnsupported = errors.New("broker does not serve StreamsGroupDescribe (Kafka 4.1 or later with the streams rebalance protocol enabled is needed)")
)

// Streams group states, as StreamsGroupDescribe's State carries them
// (the toString of GroupMetadataManager's StreamsGroup.StreamsGroupState,
// Kafka 4.4; not the enum names EMPTY, NOT_READY, ...).
const (
	StateEmpty       = "Empty"       // no members
	StateNotReady    = "NotReady"    // the topology's source topics are missing or not co-partitioned, or internal topics are missing
	StateAssigning   = "Assigning"   // a new target assignment is being computed
	StateReconciling = "Reconciling" // members are moving to the target assignment
	StateStable      = "Stable"      // every member has its target assignment
	StateDead        = "Dead"        // the group is being removed
)

// Description statuses (StreamsGroupDescribeResponse v1
// TopologyDescriptionStatus, KIP-1331), as Group.DescriptionStatus
// carries them.
const (
	DescriptionNotRequested = "NOT_REQUESTED" // v0, or not asked for
	DescriptionNotStored    = "NOT_STORED"    // the broker keeps no descriptions (no plugin configured) or has none yet
	DescriptionError        = "ERROR"         // the broker's description plugin failed
	DescriptionAvailable    = "AVAILABLE"     // Group.Description is set
)

// Group is a streams group as the group coordinator describes it
// (StreamsGroupDescribeResponse, KIP-1071).
type Group struct {
	// ID is the group id, the application's application.id.
	ID string
	// State is the broker's state string, one of the State* constants.
	State string
	// Epoch is the group epoch; AssignmentEpoch the epoch of the target
	// assignment.
	Epoch, AssignmentEpoch int32
	// Members are the group's members, sorted by member id.
	Members []Member
	// Topology is the topology the coordinator holds; nil while the group
	// has none (no member has joined since it was created).
	Topology *Topology
	// DescriptionStatus is one of the Description* constants.
	DescriptionStatus string
	// Description is the application's Topology#describe(), converted to
	// topicfilter's form, when DescriptionStatus is AVAILABLE; nil
	// otherwise. As in a describe() text (topicfilter.ParseTopology), its
	// repartition topics are named without the "<application.id>-"
	// prefix (the broker's answer carries them prefixed; the prefix is
	// taken off the topics Topology names as repartition topics), so
	// Description.Topics(applicationID, ...) classifies as for the text.
	Description *topicfilter.Topology
}

// Member is one member of a streams group: a StreamThread's consumer.
type Member struct {
	MemberID, ProcessID, ClientID, ClientHost string
	MemberEpoch                               int32
}

// Topology is the topology a streams group's coordinator holds, as the
// members sent it in StreamsGroupHeartbeat (StreamsRebalanceData).
type Topology struct {
	// Epoch is the topology epoch.
	Epoch int32
	// Subtopologies, sorted by id; nil when the broker could not
	// configure the topology (source topics missing or incorrectly
	// partitioned: the group is NOT_READY).
	Subtopologies []Subtopology
}

// Subtopology is one subtopology of a streams group's topology. Topic
// names are broker names (internal ones prefixed "<application.id>-").
type Subtopology struct {
	ID string
	// SourceTopics are the input topics it reads: not the repartition
	// topics it reads, which are RepartitionSourceTopics (measured on
	// Kafka 4.4: the drill app's sub-topology 1 reads only its repartition
	// topic and has no SourceTopics). (StreamsGroupDescribe does not return the source topic patterns a
	// member's StreamsGroupHeartbeat may send, SourceTopicRegex.)
	SourceTopics []string
	// RepartitionSinkTopics are the repartition topics it writes.
	RepartitionSinkTopics []string
	// StateChangelogTopics are the changelogs of its stores, and
	// RepartitionSourceTopics the repartition topics it reads, with the
	// partitions and configs the application asks for.
	StateChangelogTopics, RepartitionSourceTopics []TopicInfo
}

// TopicInfo is an internal topic of a subtopology.
type TopicInfo struct {
	Topic string
	// Partitions is the partition count the application enforces, 0 when
	// none (always 0 for a changelog, which has its subtopology's
	// count); ReplicationFactor 0 means the broker's default.
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string `json:",omitempty"`
}

// retry bounds Describe's retries of retriable coordinator errors
// (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR): attempts, first backoff, doubled each time up to
// maxBackoff (about 6 s in all).
const (
	attempts   = 8
	backoff    = 100 * time.Millisecond
	maxBackoff = time.Second
)

// Describe describes the streams group of id group: StreamsGroupDescribe
// (API key 89; v1 asks for the topology description of KIP-1331, a
// broker serving only v0 answers without one) sent to the group's
// coordinator (FindCoordinator). Retriable coordinator errors are retried
// up to 8 times with backoff from 100 ms to 1 s, within ctx.
//
// Errors: ErrNotFound, ErrNotStreamsGroup, ErrUnsupported (each wrapped,
// naming the group), a kerr error the broker answered (e.g.
// GROUP_AUTHORIZATION_FAILED: the principal lacks DESCRIBE on the group),
// or the client's request error.
func Describe(ctx context.Context, cl *kgo.Client, group string) (*Group, error) {
	var lastErr error
	wait := backoff
	for try := 0; try < attempts; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("describe streams group %q: %w (after %v)", group, ctx.Err(), lastErr)
			case <-time.After(wait):
			}
			wait = min(2*wait, maxBackoff)
		}
		g, err := describeOnce(ctx, cl, group)
		if err == nil {
			return g, nil
		}
		if !retriable(err) {
			return nil, fmt.Errorf("describe streams group %q: %w", group, err)
		}
		lastErr = err
	}
	return nil, fmt.Errorf("describe streams group %q: %d attempts: %w", group, attempts, lastErr)
}

func retriable(err error) bool {
	return errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator)
}

func describeOnce(ctx context.Context, cl *kgo.Client, group string) (*Group, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 0 // group
	fc.CoordinatorKey = group
	fc.CoordinatorKeys = []string{group}
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("find coordinator: %w", err)
	}
	node := fcr.NodeID
	code := fcr.ErrorCode
	if len(fcr.Coordinators) > 0 {
		node, code = fcr.Coordinators[0].NodeID, fcr.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("find coordinator: %w", err)
	}

	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	req.IncludeTopologyDescription = true // v1+; kgo sends v0 to a broker without v1
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		if unsupported(err) {
			return nil, ErrUnsupported
		}
		return nil, err
	}
	for _, g := range resp.Groups {
		if g.Group != group {
			continue
		}
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			msg := ""
			if g.ErrorMessage != nil {
				msg = *g.ErrorMessage
			}
			switch {
			case errors.Is(err, kerr.GroupIDNotFound) && strings.Contains(msg, "not a streams group"):
				return nil, ErrNotStreamsGroup
			case errors.Is(err, kerr.GroupIDNotFound):
				return nil, ErrNotFound
			case errors.Is(err, kerr.UnsupportedVersion):
				return nil, ErrUnsupported
			case msg != "":
				return nil, fmt.Errorf("%w: %s", err, msg)
			}
			return nil, err
		}
		return fromResponse(&g), nil
	}
	return nil, fmt.Errorf("the broker's answer names no group %q", group)
}

// unsupported reports whether a request error means the broker does not
// serve the request: kgo fails it before sending when the broker's
// ApiVersions lacks the key ("broker is too old"), and a broker answers
// UNSUPPORTED_VERSION.
func unsupported(err error) bool {
	return errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "broker is too old")
}

// fromResponse converts one described group.
func fromResponse(g *kmsg.StreamsGroupDescribeResponseGroup) *Group {
	out := &Group{ID: g.Group, State: g.State, Epoch: g.Epoch, AssignmentEpoch: g.AssignmentEpoch}
	for _, m := range g.Members {
		out.Members = append(out.Members, Member{MemberID: m.MemberID, ProcessID: m.ProcessID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch})
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].MemberID < out.Members[j].MemberID })
	if g.Topology != nil {
		t := &Topology{Epoch: g.Topology.Epoch}
		for _, s := range g.Topology.Subtopologies {
			t.Subtopologies = append(t.Subtopologies, Subtopology{
				ID:                      s.SubtopologyID,
				SourceTopics:            sorted(s.SourceTopics),
				RepartitionSinkTopics:   sorted(s.RepartitionSinkTopics),
				StateChangelogTopics:    topicInfos(s.StateChangelogTopics),
				RepartitionSourceTopics: topicInfos(s.RepartitionSourceTopics),
			})
		}
		sort.Slice(t.Subtopologies, func(i, j int) bool { return subLess(t.Subtopologies[i].ID, t.Subtopologies[j].ID) })
		out.Topology = t
	}
	out.DescriptionStatus = descriptionStatus(g.TopologyDescriptionStatus)
	if g.TopologyDescription != nil && out.DescriptionStatus == DescriptionAvailable {
		out.Description = convertDescription(g.TopologyDescription, g.Group, out.Topology)
	}
	return out
}

func descriptionStatus(s int8) string {
	switch s {
	case 0:
		return DescriptionNotRequested
	case 1:
		return DescriptionNotStored
	case 2:
		return DescriptionError
	case 3:
		return DescriptionAvailable
	}
	return fmt.Sprintf("UNKNOWN(%d)", s)
}

// subLess orders subtopology ids numerically when both are numbers
// (Kafka Streams numbers them "0", "1", ..., "10").
func subLess(a, b string) bool {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return len(a) < len(b)
	}
	return a < b
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func topicInfos(in []kmsg.TopicInfo) []TopicInfo {
	var out []TopicInfo
	for _, ti := range in {
		t := TopicInfo{Topic: ti.Topic, Partitions: ti.NumPartitions, ReplicationFactor: ti.ReplicationFactor}
		for _, c := range ti.Configs {
			if t.Configs == nil {
				t.Configs = map[string]string{}
			}
			t.Configs[c.Key] = c.Value
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}
