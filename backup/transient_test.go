package backup_test

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/backupcheck"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// leaderNotAvailableMetadata answers a metadata request for all topics with
// topic "events" in error LEADER_NOT_AVAILABLE (and no other topic): what a
// broker says while the topic's leader is being elected.
func leaderNotAvailableMetadata(kf *testkit.Kfake, req *kmsg.MetadataRequest, topicID [16]byte) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for i, addr := range kf.Addrs() {
		host, port, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = int32(i), host, int32(n)
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ClusterID, resp.ControllerID = kmsg.StringPtr("kfake"), 0
	st := kmsg.NewMetadataResponseTopic()
	st.Topic, st.TopicID = kmsg.StringPtr(eventsTopic), topicID
	st.ErrorCode = kerr.LeaderNotAvailable.Code
	resp.Topics = append(resp.Topics, st)
	return resp
}

// TestTransientErrorsAreRetried: one retriable error from the cluster
// (LEADER_NOT_AVAILABLE on the topic listing or on the offsets,
// COORDINATOR_NOT_AVAILABLE while the offsets topic is created) is retried:
// the backup holds the topic and the group's offsets, with or without
// allow_missing (issue 9: the topic "did not exist", or the first backup
// against a fresh broker failed at once).
func TestTransientErrorsAreRetried(t *testing.T) {
	const group = "app"
	tests := []struct {
		name         string
		key          kmsg.Key
		allowMissing bool
		fault        func(kf *testkit.Kfake, topicID [16]byte, req kmsg.Request) kmsg.Response // nil: not this request
	}{
		{"topic listing LEADER_NOT_AVAILABLE", kmsg.Metadata, false, func(kf *testkit.Kfake, id [16]byte, kr kmsg.Request) kmsg.Response {
			if req := kr.(*kmsg.MetadataRequest); req.Topics == nil {
				return leaderNotAvailableMetadata(kf, req, id)
			}
			return nil
		}},
		{"topic listing LEADER_NOT_AVAILABLE with allow_missing", kmsg.Metadata, true, func(kf *testkit.Kfake, id [16]byte, kr kmsg.Request) kmsg.Response {
			if req := kr.(*kmsg.MetadataRequest); req.Topics == nil {
				return leaderNotAvailableMetadata(kf, req, id)
			}
			return nil
		}},
		{"FindCoordinator COORDINATOR_NOT_AVAILABLE", kmsg.FindCoordinator, false, func(_ *testkit.Kfake, _ [16]byte, kr kmsg.Request) kmsg.Response {
			req := kr.(*kmsg.FindCoordinatorRequest)
			resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.ErrorCode, resp.NodeID = kerr.CoordinatorNotAvailable.Code, -1
			for _, k := range append(req.CoordinatorKeys, req.CoordinatorKey) {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.ErrorCode = k, -1, kerr.CoordinatorNotAvailable.Code
				resp.Coordinators = append(resp.Coordinators, c)
			}
			return resp
		}},
		{"OffsetFetch COORDINATOR_NOT_AVAILABLE", kmsg.OffsetFetch, false, func(_ *testkit.Kfake, _ [16]byte, kr kmsg.Request) kmsg.Response {
			req := kr.(*kmsg.OffsetFetchRequest)
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			for _, g := range req.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, kerr.CoordinatorNotAvailable.Code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp
		}},
		{"ListGroups COORDINATOR_NOT_AVAILABLE", kmsg.ListGroups, false, func(_ *testkit.Kfake, _ [16]byte, kr kmsg.Request) kmsg.Response {
			resp := kr.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}},
		{"ListOffsets LEADER_NOT_AVAILABLE", kmsg.ListOffsets, false, func(_ *testkit.Kfake, _ [16]byte, kr kmsg.Request) kmsg.Response {
			req := kr.(*kmsg.ListOffsetsRequest)
			resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition, sp.ErrorCode, sp.Offset, sp.Timestamp = rp.Partition, kerr.LeaderNotAvailable.Code, -1, -1
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kf, topicID := eventsKfake(t)
			produceEvents(t, kf.Addrs(), 20, 10)
			var offs kadm.Offsets
			for p := range int32(3) {
				offs.Add(kadm.Offset{Topic: eventsTopic, Partition: p, At: 5})
			}
			if _, err := testkit.Admin(t, kf.Addrs()).CommitOffsets(t.Context(), group, offs); err != nil {
				t.Fatal(err)
			}
			var injected atomic.Int64
			kf.ControlKey(int16(tt.key), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				kf.KeepControl()
				if injected.Load() >= 2 { // two answers in a row, then the cluster is well
					return nil, nil, false
				}
				resp := tt.fault(kf, topicID, kr)
				if resp == nil {
					return nil, nil, false
				}
				injected.Add(1)
				return resp, nil, true
			})
			store, _ := storage.NewFilesystem(t.TempDir())
			o := eventsOptions(kf.Addrs(), store)
			o.Source = clusterOptions(t, kf.Addrs(), 5*time.Second, 20*time.Second)
			o.ApplicationID, o.AllowMissingTopics = group, tt.allowMissing
			res, err := backup.Run(t.Context(), o)
			if injected.Load() == 0 {
				t.Fatalf("no %s answer was injected (err %v)", tt.key.Name(), err)
			}
			if err != nil {
				t.Fatalf("backup after %d transient errors: %v", injected.Load(), err)
			}
			m := backupcheck.Latest(t, store, res.BackupID)
			if backupcheck.Topic(m, eventsTopic) == nil || res.Records != 3*20 {
				t.Fatalf("backup holds %d records of topics %+v; want topic %q with 60 records", res.Records, m.Topics, eventsTopic)
			}
			if m.Group == nil || len(m.Group.Offsets) != 3 {
				t.Errorf("group offsets = %+v; want 3", m.Group)
			}
			if tt.key == kmsg.ListGroups && (m.Group == nil || m.Group.State == "") {
				t.Errorf("group state not read after a transient ListGroups error: %+v", m.Group)
			}
		})
	}
}

// TestFirstBackupOnAFreshKafkaBroker: on a real Kafka 4.4 broker that has
// never served a consumer group, the backup's offset read makes the broker
// create __consumer_offsets and answer COORDINATOR_NOT_AVAILABLE meanwhile;
// the first backup waits for it and completes (issue 9: it failed at once).
func TestFirstBackupOnAFreshKafkaBroker(t *testing.T) {
	t.Parallel()
	k := testkit.StartKafka(t)
	adm := testkit.Admin(t, k.Addrs())
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, eventsTopic); err != nil {
		t.Fatal(err)
	}
	produceEvents(t, k.Addrs(), 20, 10)
	if ds, err := adm.ListTopicsWithInternal(t.Context()); err != nil || len(ds) != 1 {
		t.Fatalf("the broker is not fresh: topics %v (err %v); want only %q", ds.Names(), err, eventsTopic)
	}
	store, _ := storage.NewFilesystem(t.TempDir())
	o := eventsOptions(k.Addrs(), store)
	o.Source = clusterOptions(t, k.Addrs(), 0, 0) // the defaults
	o.RetryTimeout = 0
	o.ApplicationID = "fresh-app"
	res, err := backup.Run(t.Context(), o)
	if err != nil {
		t.Fatalf("first backup on a fresh broker: %v", err)
	}
	m := backupcheck.Latest(t, store, res.BackupID)
	if res.Records != 3*20 || m.Group == nil || m.Group.GroupID != "fresh-app" {
		t.Fatalf("backup holds %d records, group %+v; want 60 records and the group read", res.Records, m.Group)
	}
	backupcheck.MatchesCluster(t, store, m, k.Addrs())
}
