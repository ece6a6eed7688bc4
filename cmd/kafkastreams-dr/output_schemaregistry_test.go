package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestPlanMarksTheSchemaRegistryTopic: the restore plan says which topic
// is the registry's and that it goes first; other topics say nothing of it.
func TestPlanMarksTheSchemaRegistryTopic(t *testing.T) {
	p := &restorer.Plan{BackupID: "20261201T000000.000Z-00000001", Strategy: restorer.StrategyChangelog, Topics: []restorer.TopicPlan{
		{Topic: "_schemas", Class: "external", SchemaRegistry: true, Action: format.ActionCreate, Partitions: 1, ReplicationFactor: 1,
			PartitionPlans: []restorer.PartitionPlan{{Partition: 0, Records: 4, SourceEnd: 4, CutAt: -1}}},
		{Topic: "orders", Class: "external", Action: format.ActionCreate, Partitions: 1, ReplicationFactor: 1,
			PartitionPlans: []restorer.PartitionPlan{{Partition: 0, Records: 9, SourceEnd: 9, CutAt: -1}}},
	}}
	var b bytes.Buffer
	printPlan(&b, p, "kafka-dr:9092")
	var registry, orders string
	for _, l := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "_schemas ") && registry == "":
			registry = l
		case strings.HasPrefix(l, "orders ") && orders == "":
			orders = l
		}
	}
	if !strings.Contains(registry, "external (schema registry: restored first)") {
		t.Errorf("the registry topic's row %q does not say it is restored first; plan:\n%s", registry, b.String())
	}
	if orders == "" || strings.Contains(orders, "schema registry") {
		t.Errorf("orders' row %q; plan:\n%s", orders, b.String())
	}
}

// TestDescribeMarksTheSchemaRegistryTopic: describe marks the registry's
// topic as the restore plan does (new-user pass, issue 12: describe did
// not show manifest topics[].schema_registry).
func TestDescribeMarksTheSchemaRegistryTopic(t *testing.T) {
	m := &format.Manifest{BackupID: "20261201T000000.000Z-00000001", State: format.StateComplete, Topics: []format.Topic{
		{Name: "_schemas", Class: "external", SchemaRegistry: true, Partitions: 1, PartitionCuts: []format.Partition{{Partition: 0, EndOffset: 4}}},
		{Name: "orders", Class: "external", Partitions: 1, PartitionCuts: []format.Partition{{Partition: 0, EndOffset: 9}}},
	}}
	dt := catalog.Describe(m)
	if !dt.Topics[0].SchemaRegistry || dt.Topics[1].SchemaRegistry {
		t.Errorf("detail topics %+v: want only _schemas flagged schema_registry (describe --json)", dt.Topics)
	}
	var b bytes.Buffer
	printDescription(&b, dt, m)
	var registry, orders string
	for _, l := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "_schemas ") && registry == "":
			registry = l
		case strings.HasPrefix(l, "orders ") && orders == "":
			orders = l
		}
	}
	if !strings.Contains(registry, "external (schema registry: restored first)") {
		t.Errorf("the registry topic's row %q does not say it is restored first; describe:\n%s", registry, b.String())
	}
	if orders == "" || strings.Contains(orders, "schema registry") {
		t.Errorf("orders' row %q; describe:\n%s", orders, b.String())
	}
}
