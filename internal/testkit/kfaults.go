package testkit

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaFaultKind is what an injected Kafka fault does to a request.
type KafkaFaultKind int

const (
	// FaultError answers the request with KafkaFault.Code on every topic,
	// partition or group it asks about (or as the request's own error
	// code where the API has no finer one).
	FaultError KafkaFaultKind = iota
	// FaultEmpty answers with no topics, partitions or groups at all: an
	// answer that says nothing about what was asked.
	FaultEmpty
	// FaultDelay holds the request for KafkaFault.Delay (past the client's
	// request timeout), then lets the broker answer it.
	FaultDelay
	// FaultDrop closes the connection the request came on, unanswered.
	FaultDrop
)

// KafkaFault is one fault a kfake cluster injects with InjectFault.
type KafkaFault struct {
	Name       string         // the case's name in a test table
	Kind       KafkaFaultKind // what the fault does
	Code       int16          // the Kafka error code, for FaultError
	Delay      time.Duration  // how long FaultDelay holds the request
	Persistent bool           // every matching request, not only the first
}

// KafkaFaults returns the fault kinds of the fault suite (issue 14): three
// error codes once (UNKNOWN_SERVER_ERROR, NOT_LEADER_OR_FOLLOWER,
// REQUEST_TIMED_OUT), UNKNOWN_SERVER_ERROR on every request, an empty
// answer once, an answer delayed by delay (past the request timeout) once,
// and a dropped connection once.
func KafkaFaults(delay time.Duration) []KafkaFault {
	return []KafkaFault{
		{Name: "UNKNOWN_SERVER_ERROR once", Kind: FaultError, Code: kerr.UnknownServerError.Code},
		{Name: "NOT_LEADER_OR_FOLLOWER once", Kind: FaultError, Code: kerr.NotLeaderForPartition.Code},
		{Name: "REQUEST_TIMED_OUT once", Kind: FaultError, Code: kerr.RequestTimedOut.Code},
		{Name: "UNKNOWN_SERVER_ERROR persistent", Kind: FaultError, Code: kerr.UnknownServerError.Code, Persistent: true},
		{Name: "empty answer once", Kind: FaultEmpty},
		{Name: "delayed answer once", Kind: FaultDelay, Delay: delay},
		{Name: "dropped connection once", Kind: FaultDrop},
	}
}

// Injected counts the requests an InjectFault hook answered with its
// fault; Heal stops the fault (the cluster answers normally after it).
type Injected struct {
	n      atomic.Int64
	healed atomic.Bool
}

// Count is the number of requests the fault was injected into.
func (i *Injected) Count() int64 { return i.n.Load() }

// Heal makes the cluster answer every later request normally.
func (i *Injected) Heal() { i.healed.Store(true) }

// InjectFault makes kf inject f into requests of key for which match
// returns true (nil: all of them): the first one, or every one if
// f.Persistent. topics are the topics an error answer to a Metadata
// request for all topics names (with f.Code). The hook stays installed
// for the cluster's life; Heal on the result turns it off.
func InjectFault(kf *Kfake, key kmsg.Key, match func(kmsg.Request) bool, f KafkaFault, topics ...string) *Injected {
	inj := new(Injected)
	kf.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if inj.healed.Load() || (match != nil && !match(req)) || (!f.Persistent && inj.n.Load() > 0) {
			return nil, nil, false
		}
		inj.n.Add(1)
		switch f.Kind {
		case FaultDelay:
			kf.SleepControl(func() { time.Sleep(f.Delay) })
			return nil, nil, false
		case FaultDrop:
			return nil, errors.New("fault: connection dropped"), true
		case FaultEmpty:
			return FaultResponse(kf, req, 0, true, topics), nil, true
		default:
			return FaultResponse(kf, req, f.Code, false, topics), nil, true
		}
	})
	return inj
}

// FaultResponse is kf's answer to req carrying code on everything req asks
// about (all topics: topics), or, if empty, naming nothing of it. It covers Metadata,
// ListOffsets, Fetch, Produce, CreateTopics, OffsetFetch and OffsetCommit;
// any other request panics.
func FaultResponse(kf *Kfake, kr kmsg.Request, code int16, empty bool, topics []string) kmsg.Response {
	switch req := kr.(type) {
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		for i, addr := range kf.Addrs() {
			host, port, _ := net.SplitHostPort(addr)
			n, _ := strconv.Atoi(port)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = int32(i), host, int32(n)
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.ClusterID, resp.ControllerID = kmsg.StringPtr("kfake"), 0
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewMetadataResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = rt.Topic, rt.TopicID, code
			resp.Topics = append(resp.Topics, st)
		}
		if req.Topics == nil {
			for _, topic := range topics {
				st := kmsg.NewMetadataResponseTopic()
				st.Topic, st.ErrorCode = kmsg.StringPtr(topic), code
				resp.Topics = append(resp.Topics, st)
			}
		}
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.Offset, sp.Timestamp = rp.Partition, code, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.FetchRequest:
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rp.Partition, code, -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if empty {
			return resp
		}
		resp.ErrorCode = code
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		if empty {
			return resp
		}
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	default:
		panic(fmt.Sprintf("testkit.FaultResponse: no fault answer for %s", kmsg.NameForKey(kr.Key())))
	}
}
