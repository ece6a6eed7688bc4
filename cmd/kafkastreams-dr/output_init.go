package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
)

// maxListed is how many unrelated topics the "Left out:" comment names
// before it counts the rest.
const maxListed = 20

// yamlString is s as a YAML double-quoted scalar (a JSON string is one).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// comment makes s safe for a one-line YAML comment.
func comment(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// renderInitConfig writes the config file of discovery d: a header, the
// application, its cluster, the literal include with each topic's role,
// the left-out topics as comments, and the storage of the flags of o.
func renderInitConfig(d *backup.Discovery, o *initOptions, at time.Time) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	servers := strings.Join(o.BootstrapServers, ",")
	cluster := servers
	if d.ClusterID != "" {
		cluster = fmt.Sprintf("%s (cluster id %s)", servers, d.ClusterID)
	}
	file := o.Output
	if file == "" || file == "-" {
		file = "FILE"
	}
	w("# kafkastreams-dr config of the Kafka Streams application %s.", yamlString(d.ApplicationID))
	w("# Written by `kafkastreams-dr init` at %s from cluster %s,", at.UTC().Format(time.RFC3339), comment(cluster))
	w("# discovered from %s.", comment(d.Method))
	w("# Check what a backup with it copies: kafkastreams-dr topics -c %s", comment(file))
	for _, n := range d.Notes {
		w("# Note: %s", comment(n))
	}
	w("application_id: %s", yamlString(d.ApplicationID))
	if o.Topology != "" {
		w("# The application's Topology#describe() text (relative to this file's directory): the")
		w("# authority for which topics are the application's; a backup refuses when the include")
		w("# leaves out one of its inputs or changelogs.")
		w("topology_file: %s", yamlString(topologyFileKey(o.Topology, o.Output)))
	}
	if scs := d.SourceChangelogs(); len(scs) > 0 {
		w("# Inputs a state store restores from as its changelog (topology.optimization=all):")
		w("# a point-in-time restore of them is refused.")
		w("source_changelog_topics:")
		for _, t := range scs {
			w("  - %s", yamlString(t))
		}
	}
	if len(d.OtherApplicationIDs) > 0 {
		w("# Other applications whose application.id starts with %s (KAFKA-14922):", yamlString(d.ApplicationID+"-"))
		w("# their internal topics are never selected, even if their group is deleted.")
		w("other_application_ids:")
		for _, a := range d.OtherApplicationIDs {
			w("  - %s", yamlString(a))
		}
	}
	if d.SchemaRegistryTopic != "" {
		w("# schema_registry: {}   # the Schema Registry's storage topic %q exists on this cluster: uncomment to back it up and restore it first", d.SchemaRegistryTopic)
	}
	w("source:")
	w("  bootstrap_servers:")
	for _, s := range o.BootstrapServers {
		w("    - %s", yamlString(s))
	}
	w("  # init connected in plaintext. For TLS or SASL, add (see: kafkastreams-dr config validate --help):")
	w("  # security:")
	w("  #   tls:")
	w("  #     ca_file: ca.pem")
	w("  #   sasl:")
	w("  #     mechanism: SCRAM-SHA-512")
	w("  #     username: kafkastreams-dr")
	w("  #     password: ${KAFKA_PASSWORD}")
	w("  topics:")
	w("    include:")
	for _, t := range d.Topics {
		why := t.Why
		if t.MaybeSourceChangelog {
			why += "; compacted: if a store reads it with topology.optimization=all, it is that store's changelog: list it under source_changelog_topics"
		}
		role := string(t.Role)
		if t.SourceChangelog {
			role = "input, source-topic changelog"
		}
		w("      # %s: %s", role, comment(why))
		w("      - %s", yamlString(t.Topic))
	}
	renderLeftOut(w, d)
	w("storage:")
	if o.Bucket != "" {
		w("  backend: s3")
		w("  bucket: %s", yamlString(o.Bucket))
		if o.Prefix != "" {
			w("  prefix: %s", yamlString(o.Prefix))
		}
		if o.Region != "" {
			w("  region: %s", yamlString(o.Region))
		}
		if o.Endpoint != "" {
			w("  endpoint: %s", yamlString(o.Endpoint))
		}
		if o.PathStyle {
			w("  path_style: true")
		}
		w("  # credentials come from the AWS chain (environment, shared config, pod role), never from this file")
	} else {
		path := o.StoragePath
		if path == "" {
			path = "./backups"
		}
		w("  backend: filesystem")
		w("  # a relative path is taken from the directory of this file")
		w("  path: %s", yamlString(path))
		if o.Prefix != "" {
			w("  prefix: %s", yamlString(o.Prefix))
		}
	}
	return b.String()
}

// renderLeftOut writes the "Left out:" comment block.
func renderLeftOut(w func(string, ...any), d *backup.Discovery) {
	w("    # Left out:")
	for _, l := range d.LeftOut {
		w("    #   %s: %s", l.Topic, comment(l.Reason))
	}
	if n := len(d.BrokerInternal); n > 0 {
		w("    #   %s of the broker's own (named \"__*\" or flagged internal, e.g. %s): never backed up", plural(n, "topic", "topics"), d.BrokerInternal[0])
	}
	if !d.OutputsKnown {
		if d.FromTopology {
			w("    #   outputs: not known (%s names what the application reads, not what it", comment(d.Method))
			w("    #   writes; a broker that stores the Topology#describe() text, KIP-1331, would):")
		} else {
			w("    #   outputs: not known without a topology (the group's offsets name what it reads, not")
			w("    #   what it writes):")
		}
		w("    #   add them to the include list above, or run init again with")
		w("    #   --topology FILE (the text of the application's Topology#describe())")
	}
	if d.FromTopology {
		w("    #   dead-letter queue topics (KIP-1034, errors.dead.letter.queue.topic.name): a topology")
		w("    #   does not show them; list them under dead_letter_queue_topics and in the include list")
	}
	if n := len(d.Unrelated); n > 0 {
		what := " of the cluster, which the topology neither reads nor writes"
		if d.FromTopology && !d.OutputsKnown {
			what = " of the cluster, which the topology does not read (its outputs are among them)"
		}
		if !d.FromTopology {
			what = " of the cluster, on which the group has no committed offsets (its outputs are among them)"
		}
		names := d.Unrelated
		more := ""
		if len(names) > maxListed {
			names, more = names[:maxListed], fmt.Sprintf(", and %d more", n-maxListed)
		}
		w("    #   %s%s: %s%s", plural(n, "other topic", "other topics"), what, comment(strings.Join(names, ", ")), more)
	}
}

// summarizeDiscovery is init's one summary line on stderr.
func summarizeDiscovery(d *backup.Discovery, where string) string {
	counts := map[backup.Role]int{}
	for _, t := range d.Topics {
		counts[t.Role]++
	}
	outputs := plural(counts[backup.RoleOutput], "output", "outputs")
	if !d.OutputsKnown {
		outputs = "outputs unknown"
	}
	return fmt.Sprintf("wrote %s: application %s, %s selected (%s, %s, %s), %s left out; discovered from %s",
		where, d.ApplicationID, plural(len(d.Topics), "topic", "topics"),
		plural(counts[backup.RoleInput], "input", "inputs"), outputs,
		plural(counts[backup.RoleChangelog], "changelog", "changelogs"),
		plural(len(d.LeftOut), "topic", "topics"), d.Method)
}
