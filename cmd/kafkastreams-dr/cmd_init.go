package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/streamsgroup"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// initOptions are the flags of `init`.
type initOptions struct {
	ApplicationID    string
	BootstrapServers []string
	// Output is the file to write; "-" is stdout. Default
	// "<application-id>.yaml".
	Output   string
	Topology string // a Topology#describe() text file; "" for none
	Force    bool   // overwrite an existing Output
	// Timeout bounds the whole run (reaching the cluster and every
	// request); default 1m.
	Timeout time.Duration

	// Storage flags, mirroring the config's storage keys.
	StoragePath, Bucket, Prefix, Region, Endpoint string
	PathStyle                                     bool

	Logger *slog.Logger
	now    func() time.Time // the header's time; time.Now when nil
}

func newInitCmd(g *globalOptions, s *iostreams, runF func(context.Context, *initOptions, *iostreams) error) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init --application-id APP --bootstrap-servers HOST:PORT[,HOST:PORT] [-o FILE]",
		Short: "Discover an application on its cluster and write its config",
		Long: `Connect to the application's cluster, find the topics of the Kafka Streams application
APP (its application.id), and write a commented config file that selects exactly its
inputs, outputs and changelogs, each with a comment giving its role and how it was
found, and names what it left out and why. Nothing is written to the cluster.

DISCOVERY, the first that knows the application:
  1. --topology FILE: the text of the application's Topology#describe(), the multi-line
     format or the older one-line one. Sources of non-internal topics are inputs (source
     patterns are matched against the cluster's topics, global stores' topics too),
     sinks to non-internal topics are outputs, and stores give their changelogs
     "APP-<store>-changelog". A source table's store with no "APP-<store>-changelog" on
     the cluster restores from its input (topology.optimization=all): that input is
     written under source_changelog_topics.
  2. The streams group APP (KIP-1071, Kafka 4.1 and later, an application run with
     group.protocol=streams): the topology the broker holds for it (StreamsGroupDescribe):
     its source topics, repartition topics and changelogs, and its outputs when the
     broker also holds the Topology#describe() text (KIP-1331); otherwise the outputs
     are unknown, as in 3.
  3. The consumer group APP's committed offsets (OffsetFetch): the topics it has
     committed offsets on, other than internal topics, are its inputs; the topics named
     "APP-*" that pass Kafka's internal-topic rule (StreamsResetter) and end in
     "-changelog" are its changelogs. Outputs cannot be found this way: the file says
     so, and how to add them. A compacted input gets a comment that it may be a
     source-topic changelog; a changelog whose store name is a generated name after a
     prefix ("APP-v1-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog") is left out as
     most likely another application's.
  Either way, repartition and foreign-key-join topics are left out (a backup captures
  their in-flight tails), and so are internal topics of other applications whose
  consumer group id extends APP (e.g. "APP-v1", KAFKA-14922; written under
  other_application_ids). With a topology (1 or 2), init selects exactly what
  "topics -c" selects on a config with topology_file and no include (one
  classification, its reasons in the comments); topics the topology names that are not
  on the cluster, and source patterns Go cannot read as Java reads them (e.g. a class
  intersection "&&"), are notes in the header.

THE FILE
  A header says when, from which cluster and by which discovery it was written;
  application_id; source.bootstrap_servers (with a commented security block: add TLS or
  SASL there, init connects in plaintext); source.topics.include as a literal list;
  source_changelog_topics and other_application_ids when known; topology_file naming the
  --topology file (relative to the config's directory when it is under it), so that backups
  classify by it too; a "Left out:" comment;
  and storage: a directory, --storage-path (default ./backups, taken from the file's
  directory), or S3 with --bucket (and --prefix, --region, --endpoint, --path-style).
  The file is parsed as every command parses it, and the topics a backup with it would
  select are checked to be exactly the discovered ones, before it is written. It is
  written whole or not at all (a temporary file renamed), never over an existing file
  without --force. -o - writes it to stdout; the summary goes to stderr.

  Check it with: kafkastreams-dr topics -c FILE

REFUSALS (exit 2)
  no --application-id or --bootstrap-servers, a server that is not host:port, --bucket
  with --storage-path, --region/--endpoint/--path-style without --bucket; the output
  file exists (without --force), is a directory, or its directory does not exist; a
  --topology file that cannot be read or parsed; the application is not found: no
  streams group APP, no consumer group APP, no committed offsets, no topic "APP-*" (or,
  with --topology, none of its topics on the cluster).
  The cluster not reached within --timeout (default 1m) is exit 1.`,
		Example: `  kafkastreams-dr init --application-id order-processor --bootstrap-servers kafka-1:9092,kafka-2:9092
  kafkastreams-dr init --application-id order-processor --bootstrap-servers kafka:9092 \
      --topology order-processor.topology.txt --bucket my-backups --prefix order-processor -o order-processor.yaml
  kafkastreams-dr init --application-id order-processor --bootstrap-servers kafka:9092 -o - | less`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			o.Logger = g.Logger()
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runInit(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ApplicationID, "application-id", "", "the Kafka Streams application.id `APP` of the application (required)")
	f.StringSliceVar(&o.BootstrapServers, "bootstrap-servers", nil, "`HOST:PORT,...` of the application's cluster (required)")
	f.StringVarP(&o.Output, "output", "o", "", "the config `FILE` to write; - for stdout (default \"<application-id>.yaml\")")
	f.StringVar(&o.Topology, "topology", "", "a `FILE` holding the application's Topology#describe() text: the authority for inputs, outputs and changelogs")
	f.BoolVar(&o.Force, "force", false, "overwrite the output file if it exists")
	durationFlag(f, &o.Timeout, "timeout", time.Minute, "", "give up on the cluster after this long, above zero, e.g. 30s")
	f.StringVar(&o.StoragePath, "storage-path", "", "storage.path: the backup repository `DIR` (filesystem backend; default ./backups)")
	f.StringVar(&o.Bucket, "bucket", "", "storage.bucket: back up to this S3 `BUCKET` (backend s3) instead of a directory")
	f.StringVar(&o.Prefix, "prefix", "", "storage.prefix: the key `PREFIX` (s3) or subdirectory (filesystem) of the repository")
	f.StringVar(&o.Region, "region", "", "storage.region: the S3 `REGION` (default: from the AWS chain)")
	f.StringVar(&o.Endpoint, "endpoint", "", "storage.endpoint: the `URL` of an S3-compatible store")
	f.BoolVar(&o.PathStyle, "path-style", false, "storage.path_style: path-style S3 addressing (usual for S3-compatible stores)")
	return cmd
}

// check refuses, as usage errors, flags missing or contradicting each
// other; the values themselves are checked as config keys (flagConfig).
func (o *initOptions) check() error {
	switch {
	case o.ApplicationID == "":
		return &usageError{errors.New("no application id: use --application-id APP (the application.id in the application's StreamsConfig)")}
	case len(o.BootstrapServers) == 0:
		return &usageError{errors.New("no cluster: use --bootstrap-servers HOST:PORT[,HOST:PORT] (the application's bootstrap.servers)")}
	case o.Bucket != "" && o.StoragePath != "":
		return &usageError{errors.New("--bucket (S3) and --storage-path (a directory) name two repositories: give one")}
	case o.Bucket == "" && (o.Region != "" || o.Endpoint != "" || o.PathStyle):
		return &usageError{errors.New("--region, --endpoint and --path-style are S3 settings: give --bucket too")}
	}
	if o.Output == "" {
		o.Output = o.ApplicationID + ".yaml"
	}
	return nil
}

// flagKeys maps config keys to the init flags that set them.
var flagKeys = []struct{ key, flag string }{
	{"application_id", "--application-id"},
	{"source.bootstrap_servers", "--bootstrap-servers"},
	{"storage.path", "--storage-path"},
	{"storage.bucket", "--bucket"},
	{"storage.prefix", "--prefix"},
	{"storage.region", "--region"},
	{"storage.endpoint", "--endpoint"},
}

// flagConfig checks the flags' values as the config keys they become
// (host:port, bucket name, prefix, ...), by parsing a config holding them
// alone: an error names the flag. It returns that config, whose Source
// reaches the cluster.
func flagConfig(o *initOptions) (*config.Config, error) {
	text := renderInitConfig(&backup.Discovery{ApplicationID: o.ApplicationID, Topics: []backup.FoundTopic{{Topic: "t"}}}, o, time.Time{})
	cfg, err := config.Parse([]byte(text), "flags")
	var list config.ErrorList
	if errors.As(err, &list) {
		var msgs []string
		for _, e := range list {
			flag := "a flag"
			for _, fk := range flagKeys {
				if e.Key == fk.key || strings.HasPrefix(e.Key, fk.key+"[") || strings.HasPrefix(e.Key, fk.key+".") {
					flag = fk.flag
				}
			}
			msgs = append(msgs, fmt.Sprintf("invalid %s: %s", flag, e.Msg))
		}
		return nil, &usageError{errors.New(strings.Join(msgs, "; "))}
	}
	if err != nil {
		return nil, &usageError{err}
	}
	return cfg, nil
}

func runInit(ctx context.Context, o *initOptions, s *iostreams) error {
	now := time.Now
	if o.now != nil {
		now = o.now
	}
	if err := refuseExisting(o); err != nil {
		return err
	}
	flagCfg, err := flagConfig(o)
	if err != nil {
		return err
	}
	var topology *topicfilter.AppTopology
	var described *topicfilter.Topology
	if o.Topology != "" {
		if topology, described, err = readTopologyFile(o.Topology, o.ApplicationID); err != nil {
			return err
		}
	}
	servers := strings.Join(flagCfg.Source.BootstrapServers, ",")
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, initTimeout(o.Timeout))
		defer cancel()
	}
	opts, err := flagCfg.Source.ClientOptions()
	if err != nil {
		return withCode(exitUsage, err, "")
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithLogger(kslog.New(o.Logger)))...)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("cluster client: %w", err), "")
	}
	defer cl.Close()
	if err := config.Reach(ctx, cl, "cluster"); err != nil {
		return withCode(exitError, err, "check --bootstrap-servers; a cluster that needs TLS or SASL cannot be reached by init (write the config by hand: see \"kafkastreams-dr config validate --help\")")
	}
	adm := kadm.NewClient(cl)

	var notes []string
	streamsGroup := ""
	if topology == nil {
		topology, described, streamsGroup, notes = streamsGroupTopology(ctx, cl, o.ApplicationID, o.Logger)
	}
	d, err := backup.Discover(ctx, adm, backup.DiscoverOptions{ApplicationID: o.ApplicationID, Topology: topology, Described: described}, o.Logger)
	var notFound *backup.ApplicationNotFoundError
	if errors.As(err, &notFound) {
		if streamsGroup != "" {
			notFound.Looked = append(notFound.Looked, streamsGroup)
		}
		hint := "check --application-id (the application.id in the application's StreamsConfig) and --bootstrap-servers; an application that has never run has none of these: give --topology FILE once its topics exist"
		if o.Topology != "" {
			hint = "check --bootstrap-servers and that --topology is this application's (its Topology#describe() text) and --application-id its application.id; an application that has never run has none of its topics: run init again once the application has created them"
		}
		return withCode(exitUsage, fmt.Errorf("cluster %s: %w", servers, err), hint)
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("cluster %s: %w", servers, err), "check --bootstrap-servers; raise --timeout for a slow cluster")
	}

	d.Notes = append(notes, d.Notes...)
	text := renderInitConfig(d, o, now())
	name := o.Output
	if name == "-" {
		name = "stdout"
	}
	cfg, err := config.Parse([]byte(text), name)
	if err != nil {
		return withCode(exitError, fmt.Errorf("the config init wrote does not parse (a bug; nothing written): %w", err), "")
	}
	// What a backup with the file selects must be what was discovered.
	// As topics -c does: the source's client (so that a streams group's
	// topology classifies) and the topology file's topology.
	bo := backupOptionsFromConfig(cfg)
	bo.Source = opts
	if o.Topology != "" {
		bo.Topology = topology
	}
	sel, err := backup.SelectTopics(ctx, adm, bo, o.Logger)
	if err != nil {
		return withCode(exitError, fmt.Errorf("cluster %s: check the discovered topics: %w", servers, err), "run init again")
	}
	var selected []string
	for _, dec := range sel.Selected() {
		selected = append(selected, dec.Topic)
	}
	if want := d.Include(); !slices.Equal(selected, want) {
		return withCode(exitError, fmt.Errorf("a backup with the discovered config would select %v, not the discovered %v (the cluster changed meanwhile?); nothing written", selected, want), "run init again")
	}

	if o.Output == "-" {
		_, err := fmt.Fprint(s.Out, text)
		if err == nil {
			fmt.Fprintln(s.ErrOut, summarizeDiscovery(d, "stdout"))
		}
		return err
	}
	if err := writeNew(o.Output, []byte(text), o.Force); err != nil {
		return err
	}
	fmt.Fprintln(s.ErrOut, summarizeDiscovery(d, o.Output))
	fmt.Fprintf(s.ErrOut, "check it with: kafkastreams-dr topics -c %s\n", o.Output)
	return nil
}

// streamsGroupTopology returns the topology the broker holds for the
// application's streams group (KIP-1071), or nil with what was found
// instead, for a not-found error (looked) and for the file (notes): no
// streams group (a classic group, an older broker) is not an error, and a
// group that cannot be described is a note, discovery going on without.
func streamsGroupTopology(ctx context.Context, cl *kgo.Client, app string, log *slog.Logger) (t *topicfilter.AppTopology, described *topicfilter.Topology, looked string, notes []string) {
	g, err := streamsgroup.Describe(ctx, cl, app)
	switch {
	case errors.Is(err, streamsgroup.ErrNotFound):
		return nil, nil, fmt.Sprintf("no streams group %q (StreamsGroupDescribe)", app), nil
	case errors.Is(err, streamsgroup.ErrNotStreamsGroup):
		return nil, nil, fmt.Sprintf("group %q is not a streams group", app), nil
	case errors.Is(err, streamsgroup.ErrUnsupported):
		return nil, nil, "no streams groups on this cluster (StreamsGroupDescribe not served)", nil
	case err != nil:
		log.Warn("could not describe the streams group; discovering without it", "group", app, "err", err)
		return nil, nil, "", []string{fmt.Sprintf("the streams group %q could not be described (%v): discovered without its topology", app, err)}
	}
	if t = g.AppTopology(app); t == nil {
		return nil, nil, fmt.Sprintf("streams group %q holds no topology (state %s)", app, g.State),
			[]string{fmt.Sprintf("the streams group %q holds no topology yet (state %s): discovered without it; run init again while the application runs", app, g.State)}
	}
	return t, g.Description, "", nil
}

// initTimeout is the cause of init's context when --timeout ends it: the
// errors of the calls it cuts short then say "--timeout 1m0s ran out".
type initTimeout time.Duration

func (d initTimeout) Error() string { return fmt.Sprintf("--timeout %s ran out", time.Duration(d)) }

// errFileExists refuses to overwrite the output file without --force.
func errFileExists(path string) error {
	return withCode(exitUsage, fmt.Errorf("%s exists: init does not overwrite a file", path),
		"give --force to replace it, or -o another file (-o - writes to stdout)")
}

// refuseExisting refuses an existing output file before the cluster is
// asked anything (writeNew refuses again if one appears meanwhile).
// A directory at the output path, or an output directory that is not
// one, is refused too (exit 2), whatever --force says.
func refuseExisting(o *initOptions) error {
	if o.Output == "-" {
		return nil
	}
	if fi, err := os.Stat(o.Output); err == nil && fi.IsDir() {
		return withCode(exitUsage, fmt.Errorf("-o %s is a directory", o.Output), "give a file name, e.g. -o "+filepath.Join(o.Output, o.ApplicationID+".yaml"))
	}
	dir := filepath.Dir(o.Output)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return withCode(exitUsage, fmt.Errorf("-o %s: directory %s does not exist", o.Output, dir), "create it first, or give -o a file in an existing directory (-o - writes to stdout)")
	}
	if o.Force {
		return nil
	}
	if _, err := os.Lstat(o.Output); err == nil {
		return errFileExists(o.Output)
	}
	return nil
}

// readTopologyFile reads and parses a Topology#describe() text as every
// topology text is read (config.ReadTopologyFile: a regular file of at
// most 1 MiB); any problem is a usage error naming --topology and the
// file.
func readTopologyFile(path, app string) (*topicfilter.AppTopology, *topicfilter.Topology, error) {
	data, described, err := config.ReadTopologyFile(path)
	if err != nil {
		return nil, nil, topologyFileError("--topology", err)
	}
	t, err := topicfilter.DescribedTopology(data, app, fmt.Sprintf("topology file %q", filepath.Base(path)))
	if err != nil {
		return nil, nil, withCode(exitUsage, fmt.Errorf("--topology %s: %w", path, err), "")
	}
	if len(t.Inputs)+len(t.Patterns)+len(t.GlobalInputs) == 0 {
		return nil, nil, withCode(exitUsage, fmt.Errorf("--topology %s: no source topic in it (want the text of Topology#describe(), from \"Topologies:\" on)", path), "")
	}
	return t, described, nil
}

// topologyFileKey is the topology_file value that names path from the
// directory of the config file out: relative when path is under that
// directory, else absolute ("-": absolute).
func topologyFileKey(path, out string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if out == "-" {
		return abs
	}
	dir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return abs
}

// writeNew writes data to path whole or not at all: a temporary file in
// the same directory, synced, then linked to path (which fails if path
// exists: refused with exit 2) or, with force, renamed over it; then the
// directory is synced.
func writeNew(path string, data []byte, force bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return withCode(exitError, fmt.Errorf("write %s: %w", path, err), "")
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("write %s: %w", path, err), "")
	}
	if force {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
		if errors.Is(err, fs.ErrExist) {
			return errFileExists(path)
		}
	}
	if err != nil {
		return withCode(exitError, fmt.Errorf("write %s: %w", path, err), "")
	}
	if df, err := os.Open(dir); err == nil {
		_ = df.Sync()
		df.Close()
	}
	return nil
}
