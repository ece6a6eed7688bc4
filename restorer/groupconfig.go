package restorer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
)

// groupConfigsToSet are the backup's group configs (format.Group.Configs)
// a restore sets on the target, name to value; configs without a value
// (sensitive, or null) are named in the second result, not set.
func groupConfigsToSet(cfgs map[string]format.TopicConfig) (map[string]string, []string) {
	set := map[string]string{}
	var unset []string
	for k, c := range cfgs {
		if c.Value == nil {
			unset = append(unset, k)
			continue
		}
		set[k] = *c.Value
	}
	slices.Sort(unset)
	if len(set) == 0 {
		set = nil
	}
	return set, unset
}

// alterGroupConfigs sets configs on the GROUP config resource of group on
// the target (IncrementalAlterConfigs, op SET; KIP-848 / KIP-1071,
// Kafka's GroupConfig), or, with validateOnly, has the target validate
// them without setting them. It returns the broker's refusal as an error
// naming the group, the configs and the fix; a request that cannot be sent
// is an error as well.
func (r *restore) alterGroupConfigs(ctx context.Context, group string, configs map[string]string, validateOnly bool) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(configs[k])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, r.cl)
	if err == nil && len(resp.Resources) != 1 {
		err = fmt.Errorf("the broker answered for %d resources, not 1", len(resp.Resources))
	}
	var msg string
	if err == nil {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		if m := resp.Resources[0].ErrorMessage; m != nil && *m != "" {
			msg = " (" + *m + ")"
		}
	}
	if err == nil {
		return nil
	}
	what := "set"
	if validateOnly {
		what = "accept"
	}
	bounds := "the broker's group.<type>.min.* and group.<type>.max.* settings bound them"
	if b := brokerBounds(configs); len(b) > 0 {
		bounds = "the broker settings that bound them: " + strings.Join(b, ", ")
	}
	fix := "pass --skip-group-configs to restore without them (the offsets are still committed; the application runs with the target's group configs and the broker's defaults), or restore into a target that accepts them (streams.* group configs need Kafka 4.1 or later; " + bounds + ")"
	if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) {
		fix = "grant the restore's principal ALTER_CONFIGS on the group (kafka-acls --operation AlterConfigs --group " + group + ")"
	}
	return fmt.Errorf("the target does not %s the configs of group %q (%s): %w%s: %s", what, group, configString(configs), err, msg, fix)
}

// groupConfigBounds are the broker settings that bound each group config
// a target validates (Kafka's GroupConfig.validate against the broker's
// GroupCoordinatorConfig / ShareGroupConfig: a group config outside them
// is INVALID_CONFIG, "must be less than or equal to N").
var groupConfigBounds = map[string][]string{
	"consumer.session.timeout.ms":    {"group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	"consumer.heartbeat.interval.ms": {"group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	"share.session.timeout.ms":       {"group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	"share.heartbeat.interval.ms":    {"group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	"share.record.lock.duration.ms":  {"group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	"streams.session.timeout.ms":     {"group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	"streams.heartbeat.interval.ms":  {"group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	"streams.num.standby.replicas":   {"group.streams.max.standby.replicas"},
}

// brokerBounds names, sorted, the broker settings bounding configs
// (groupConfigBounds), each as "<config> by <setting>[ and <setting>]".
func brokerBounds(configs map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if b := groupConfigBounds[k]; len(b) > 0 {
			out = append(out, k+" by "+strings.Join(b, " and "))
		}
	}
	return out
}

// groupConfigResource describes the GROUP config resource of group on the
// target (DescribeConfigs, KIP-848's group configs): every config entry,
// or the request's or the resource's error.
func (r *restore) groupConfigResource(ctx context.Context, group string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, r.cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("the broker answered for %d resources, not 1", len(resp.Resources))
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return nil, err
	}
	return resp.Resources[0].Configs, nil
}

// targetGroupConfigs reads the configs set on group on the target
// (DescribeConfigs, source DYNAMIC_GROUP_CONFIG), name to value; nil when
// none is set.
func (r *restore) targetGroupConfigs(ctx context.Context, group string) (map[string]string, error) {
	configs, err := r.groupConfigResource(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("read the configs of group %q on the target: %w", group, err)
	}
	var got map[string]string
	for _, c := range configs {
		if c.Source != kmsg.ConfigSourceGroupConfig {
			continue
		}
		if got == nil {
			got = map[string]string{}
		}
		got[c.Name] = deref(c.Value)
	}
	return got, nil
}

// describeGroupConfigs reads the GROUP config resource of group on the
// target (DescribeConfigs), every config with its value ("" when null).
func (r *restore) describeGroupConfigs(ctx context.Context, group string) (map[string]string, error) {
	configs, err := r.groupConfigResource(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("read back the configs of group %q on the target: %w", group, err)
	}
	got := map[string]string{}
	for _, c := range configs {
		got[c.Name] = deref(c.Value)
	}
	return got, nil
}

// groupConfigsBudget bounds how long setGroupConfigs reads the configs
// back until the broker it asks shows them: a config change reaches the
// brokers through the metadata log, and a DescribeConfigs answered right
// after the IncrementalAlterConfigs can still show the old values
// (measured on a single Kafka 4.4 node).
const groupConfigsBudget = 30 * time.Second

// setGroupConfigs sets the plan's group configs on the target and reads
// them back until every one holds the value set (groupConfigsBudget at
// most; then an error naming each that differs).
func (r *restore) setGroupConfigs(ctx context.Context, group string, configs map[string]string) error {
	if len(configs) == 0 {
		return nil
	}
	if err := r.alterGroupConfigs(ctx, group, configs, false); err != nil {
		return err
	}
	began := time.Now()
	for n := 1; ; n++ {
		got, err := r.describeGroupConfigs(ctx, group)
		if err != nil {
			return err
		}
		var diffs []string
		for _, k := range slices.Sorted(maps.Keys(configs)) {
			if got[k] != configs[k] {
				diffs = append(diffs, fmt.Sprintf("%s: set %q, read back %q", k, configs[k], got[k]))
			}
		}
		if len(diffs) == 0 {
			return nil
		}
		if time.Since(began) > groupConfigsBudget {
			return fmt.Errorf("configs of group %q read back still differ from what was set after %s: %s", group, groupConfigsBudget, strings.Join(diffs, "; "))
		}
		if err := sleep(ctx, backoff(n)); err != nil {
			return err
		}
	}
}
