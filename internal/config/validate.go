package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// parse decodes and validates a config. With checkFiles it also reads the
// TLS and SASL password files the config names, as ClientOptions would.
func parse(data []byte, name string, lookup func(string) (string, bool), checkFiles bool) (*Config, error) {
	d := &decoder{
		file:     name,
		lookup:   lookup,
		lines:    map[string]int{},
		bad:      map[string]bool{},
		envRef:   map[string]bool{},
		null:     map[string]bool{},
		emptyEnv: map[string][]string{},
		location: map[string]bool{},
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3 syntax errors read "yaml: line N: ..."; keep them whole.
		return nil, ErrorList{{File: name, Msg: fmt.Sprintf("not valid YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, ErrorList{{File: name, Line: 1, Msg: "the config is empty (it needs at least source and storage)"}}
	}
	root := doc.Content[0]
	c := &Config{file: name}
	if root.Kind != yaml.MappingNode {
		return nil, ErrorList{{File: name, Line: root.Line, Msg: fmt.Sprintf("the config must be a mapping of keys (source, storage, ...), not %s", kindName(root))}}
	}
	d.decode("", root, reflect.ValueOf(c).Elem())
	v := &validator{decoder: d, c: c, rootLine: root.Line, checkFiles: checkFiles}
	v.validate()
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	c.lines = d.lines
	c.warnings = v.warnings
	return c, nil
}

type validator struct {
	*decoder
	c          *Config
	rootLine   int
	checkFiles bool // read the TLS and SASL password files too
	warnings   []warning
	// appTopology is topology_file's topology, when it was read (checkFiles).
	appTopology *topicfilter.AppTopology
}

// line returns the line of key, or of its nearest parent present in the
// file, or of the document.
func (v *validator) line(key string) int {
	if l, ok := v.keyLine(key); ok {
		return l
	}
	return v.rootLine
}

// keyLine returns the line of key or of its nearest parent in the file.
func (v *validator) keyLine(key string) (int, bool) {
	for k := key; k != ""; {
		if l, ok := v.lines[k]; ok {
			return l, true
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0, false
}

func (v *validator) has(key string) bool { _, ok := v.lines[key]; return ok }

func (v *validator) errf(key, format string, args ...any) {
	if v.bad[key] {
		return // already reported while decoding
	}
	v.fail(key, v.line(key), format, args...)
}

// errfAt reports a problem with key at the line of another key, e.g. a
// missing key at the line of the key that makes it required.
func (v *validator) errfAt(key, at, format string, args ...any) {
	if v.bad[key] {
		return
	}
	v.fail(key, v.line(at), format, args...)
}

func (v *validator) warnf(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l, ok := v.keyLine(key); ok {
		msg += fmt.Sprintf(" (line %d)", l)
	}
	v.warnings = append(v.warnings, warning{key: key, msg: msg})
}

func (v *validator) validate() {
	c := v.c
	if c.ApplicationID == "" && v.has("application_id") {
		// Present but empty: a ${VAR} the environment left empty, or a
		// value forgotten. Kafka Streams has no default application.id
		// (StreamsConfig: a required setting); a backup without one reads
		// no group offsets, so this is refused rather than warned about.
		v.errf("application_id", "application_id is empty: set it to the Kafka Streams application.id, or remove the application_id key to back up without one, which reads no consumer-group offsets")
	} else if c.ApplicationID == "" {
		v.warnf("application_id", "application_id is not set: topics are classified by name suffix only and no consumer-group offsets are read; set it to the Kafka Streams application.id")
	} else if bad := badTopicChars(c.ApplicationID); bad != "" {
		v.errf("application_id", "application_id %q contains %s; a Kafka Streams application.id uses only letters, digits, '.', '_' and '-'", c.ApplicationID, bad)
	} else if n := len(c.ApplicationID); n+len("-x-changelog") > maxTopicLength {
		v.errf("application_id", "application_id is %d characters long: no Kafka Streams internal topic <application.id>-<name>-changelog fits Kafka's limit of %d characters (org.apache.kafka.common.internals.Topic); use an application.id of at most %d characters",
			n, maxTopicLength, maxTopicLength-len("-x-changelog"))
	} else if n+len(autoInternalSuffix) > maxTopicLength {
		v.warnf("application_id", "application_id is %d characters long: auto-generated internal topic names do not fit Kafka's limit of %d characters (<application.id>%s adds %d); "+
			"name every store and repartition topic (Materialized.as, Grouped.as, Repartitioned.as) so that <application.id>-<name>-repartition is at most %d, or use an application.id of at most %d characters",
			n, maxTopicLength, autoInternalSuffix, len(autoInternalSuffix), maxTopicLength, maxTopicLength-len(autoInternalSuffix))
	}
	for i, t := range c.SourceChangelogTopics {
		k := fmt.Sprintf("source_changelog_topics[%d]", i)
		if t == "" {
			v.errf(k, "%s is empty", k)
		} else if bad := badTopicChars(t); bad != "" {
			v.errf(k, "%s %q is not a topic name: it contains %s", k, t, bad)
		} else if t == "." || t == ".." {
			v.errf(k, "%s %q is not a legal topic name (org.apache.kafka.common.internals.Topic)", k, t)
		} else if len(t) > maxTopicLength {
			v.errf(k, "%s is %d characters long: Kafka topic names have at most %d (org.apache.kafka.common.internals.Topic)", k, len(t), maxTopicLength)
		}
	}

	v.applications()
	v.topology()

	if !v.has("source") {
		v.errf("source", "source is required (the cluster to back up: source.bootstrap_servers and source.topics.include)")
	} else {
		v.cluster("source", &c.Source, true)
	}
	if c.Target != nil {
		v.cluster("target", c.Target, false)
	}
	v.storage()
	v.encryption()
	v.backup()
	v.drill()
	v.schemaRegistry()
	v.emptyEnvWarnings()
}

// schemaRegistry fills schema_registry.topic's default when the section is
// there (`schema_registry: {}` or with no value at all) and checks that the
// topic is a legal topic name, not a broker-internal one, and not one of
// the application's own topics (topicfilter.Classifier.SchemaRegistryConflict:
// the naming rule, source_changelog_topics, dead_letter_queue_topics, the
// topology_file's topology when it was read).
func (v *validator) schemaRegistry() {
	if !v.has("schema_registry") {
		return
	}
	if v.c.SchemaRegistry == nil {
		v.c.SchemaRegistry = &SchemaRegistry{}
	}
	const k = "schema_registry.topic"
	t := v.c.SchemaRegistry.Topic
	switch {
	case v.bad[k]:
	case t == "" && v.has(k):
		v.errf(k, "%s is empty: name the registry's storage topic, or remove the key for the default %q", k, DefaultSchemaRegistryTopic)
	case t == "":
		v.c.SchemaRegistry.Topic = DefaultSchemaRegistryTopic
	case badTopicChars(t) != "":
		v.errf(k, "%s %q is not a topic name: it contains %s", k, t, badTopicChars(t))
	case t == "." || t == ".." || len(t) > maxTopicLength:
		v.errf(k, "%s %q is not a legal topic name (org.apache.kafka.common.internals.Topic)", k, t)
	case strings.HasPrefix(t, "__"):
		v.errf(k, "%s %q is a broker-internal topic name (\"__\"): a registry's storage topic is never one; name the topic the registry stores its schemas in (default %q)", k, t, DefaultSchemaRegistryTopic)
	default:
		c := v.c
		own := topicfilter.Classifier{ApplicationID: c.ApplicationID, InternalPrefixes: c.InternalTopicPrefixes, OtherApplicationIDs: c.OtherApplicationIDs,
			SourceChangelogTopics: c.SourceChangelogTopics, DeadLetterTopics: c.DeadLetterQueueTopics, Topology: v.appTopology}
		if why := own.SchemaRegistryConflict(t); why != "" {
			v.errf(k, "%s", (&topicfilter.SchemaRegistryTopicError{Topic: t, Why: why}).Error())
		}
	}
}

// drill checks drill.app: a command is required once the section is
// there (a timeout without one would silently measure nothing).
func (v *validator) drill() {
	a := &v.c.Drill.App
	if v.has("drill.app") && strings.TrimSpace(a.Command) == "" && !v.bad["drill.app.command"] {
		v.errf("drill.app.command", "drill.app.command is required with drill.app: the shell command that starts the application against $KAFKASTREAMS_DR_BOOTSTRAP_SERVERS (or remove drill.app)")
	}
	if !v.has("drill.app.timeout") || v.bad["drill.app.timeout"] {
		a.Timeout = DefaultDrillAppTimeout
	}
	if !v.has("drill.app.stop_grace") || v.bad["drill.app.stop_grace"] {
		a.StopGrace = DefaultDrillAppStopGrace
	}
}

// emptyEnvWarnings warns about each ${VAR} that was set but empty, in line
// order: an empty variable is usually one the pod's environment forgot
// (a Secret key or ConfigMap entry missing), not a wish for "".
func (v *validator) emptyEnvWarnings() {
	keys := make([]string, 0, len(v.emptyEnv))
	for k := range v.emptyEnv {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(v.line(a), v.line(b)), cmp.Compare(a, b)) })
	for _, k := range keys {
		names := v.emptyEnv[k]
		noun := "environment variable " + names[0] + " is"
		if len(names) > 1 {
			noun = "environment variables " + strings.Join(names, ", ") + " are"
		}
		v.warnf(k, "%s: %s set but empty", k, noun)
	}
}

// applications checks other_application_ids and internal_topic_prefixes:
// each a valid application.id (the characters of a topic name), none
// empty, no prefix ending in "-", no other application that is this one.
func (v *validator) applications() {
	c := v.c
	for i, p := range c.InternalTopicPrefixes {
		k := fmt.Sprintf("internal_topic_prefixes[%d]", i)
		switch {
		case p == "":
			v.errf(k, "%s is empty", k)
		case badTopicChars(p) != "":
			v.errf(k, "%s %q contains %s; a topic prefix uses only letters, digits, '.', '_' and '-'", k, p, badTopicChars(p))
		case strings.HasSuffix(p, "-"):
			v.errf(k, `%s %q ends with "-": write the prefix without the trailing "-" (%q), as the application.id is written`, k, p, strings.TrimRight(p, "-"))
		}
	}
	if len(c.OtherApplicationIDs) > 0 && c.ApplicationID == "" && len(c.InternalTopicPrefixes) == 0 {
		v.errf("other_application_ids", "other_application_ids needs application_id (or internal_topic_prefixes): other applications' topics are told apart from this application's by its prefix")
	}
	for i, o := range c.OtherApplicationIDs {
		k := fmt.Sprintf("other_application_ids[%d]", i)
		switch {
		case o == "":
			v.errf(k, "%s is empty", k)
		case badTopicChars(o) != "":
			v.errf(k, "%s %q contains %s; a Kafka Streams application.id uses only letters, digits, '.', '_' and '-'", k, o, badTopicChars(o))
		case o == c.ApplicationID:
			v.errf(k, "%s %q is this config's application_id: list only the other applications", k, o)
		case slices.Contains(c.InternalTopicPrefixes, o):
			v.errf(k, "%s %q is also in internal_topic_prefixes: a prefix is this application's or another's, not both", k, o)
		}
	}
}

// sourceChangelogs refuses a source_changelog_topics entry that cannot be
// a source-topic changelog (topicfilter.SourceChangelogConflict): a
// repartition topic by name, a dead_letter_queue_topics entry, or with
// topology (from topology_file; nil when not read) a topic it names as a
// repartition topic, an output or a changelog and not as an input. The
// commands check the same against a --topology file (cmd loadTopology).
func (v *validator) sourceChangelogs(topology *topicfilter.AppTopology) {
	for i, t := range v.c.SourceChangelogTopics {
		if t == "" || badTopicChars(t) != "" {
			continue // refused above
		}
		if why := topicfilter.SourceChangelogConflict(t, topology, v.c.DeadLetterQueueTopics); why != "" {
			k := fmt.Sprintf("source_changelog_topics[%d]", i)
			v.errf(k, "%s %q %s; remove it from source_changelog_topics (list there only input topics a store restores from, topology.optimization=all)", k, t, why)
		}
	}
}

// topology checks topology_file (resolved against the config's directory;
// with checkFiles read and parsed as a Topology#describe() text, an error
// at its line naming what is wrong), source_changelog_topics against it
// (sourceChangelogs) and dead_letter_queue_topics (topic names, listed
// once, not broker-internal, not what the topology or the naming rule
// makes an input, a repartition topic or a changelog:
// topicfilter.Classifier.DeadLetterConflict).
func (v *validator) topology() {
	c := v.c
	var topology *topicfilter.AppTopology // read from topology_file, when checkFiles
	if c.TopologyFile != "" {
		c.TopologyFile = v.fromConfigDir(c.TopologyFile)
		switch {
		case c.ApplicationID == "":
			v.errf("topology_file", "topology_file needs application_id: the topology's internal topics are named \"<application.id>-<name>\" on the broker")
		case v.checkFiles:
			var re *TopologyReadError
			if text, _, err := ReadTopologyFile(c.TopologyFile); errors.As(err, &re) {
				v.errf("topology_file", "topology_file %v: give the file the application's Topology#describe() text was written to (a relative path is relative to the config file)", err)
			} else if err != nil {
				v.errf("topology_file", "topology_file %v", err)
			} else if top, err := topicfilter.DescribedTopology(text, c.ApplicationID, fmt.Sprintf("topology_file %q", c.TopologyFile)); err == nil {
				topology = top
				v.appTopology = top
			}
		}
	} else if v.has("topology_file") {
		v.errf("topology_file", "topology_file is empty: give the file holding the application's Topology#describe() text, or remove the key")
	}
	v.sourceChangelogs(topology)
	byName := topicfilter.Classifier{ApplicationID: c.ApplicationID, InternalPrefixes: c.InternalTopicPrefixes, OtherApplicationIDs: c.OtherApplicationIDs, Topology: topology}
	for i, t := range c.DeadLetterQueueTopics {
		k := fmt.Sprintf("dead_letter_queue_topics[%d]", i)
		if t == "" {
			v.errf(k, "%s is empty", k)
		} else if bad := badTopicChars(t); bad != "" {
			v.errf(k, "%s %q is not a topic name: it contains %s", k, t, bad)
		} else if j := slices.Index(c.DeadLetterQueueTopics, t); j < i {
			v.errf(k, "%s %q is listed twice (also dead_letter_queue_topics[%d]): remove one", k, t, j)
		} else if why := byName.DeadLetterConflict(t); why != "" {
			v.errf(k, "%s %q %s, not a dead-letter queue topic (KIP-1034 errors.dead.letter.queue.topic.name: an output the application writes): remove it from dead_letter_queue_topics", k, t, why)
		}
	}
}

func (v *validator) cluster(key string, cl *Cluster, isSource bool) {
	k := key + ".bootstrap_servers"
	if len(cl.BootstrapServers) == 0 {
		v.errf(k, "%s is required (a list of host:port, e.g. [kafka:9092])", k)
	}
	for i, s := range cl.BootstrapServers {
		ki := fmt.Sprintf("%s[%d]", k, i)
		if problem := checkHostPort(s); problem != "" {
			if s == "" {
				v.errf(ki, "%s %s", ki, problem)
			} else {
				v.errf(ki, "%s: %q %s", ki, s, problem)
			}
		}
	}
	v.timeouts(key, cl)
	for _, f := range []*string{&cl.Security.TLS.CAFile, &cl.Security.TLS.CertFile, &cl.Security.TLS.KeyFile, &cl.Security.SASL.PasswordFile} {
		*f = v.fromConfigDir(*f)
	}
	v.tls(key+".security.tls", &cl.Security.TLS)
	v.sasl(key+".security.sasl", &cl.Security.SASL, cl.Security.TLS)
	if v.checkFiles {
		v.files(key+".security", cl.Security)
	}

	if !isSource {
		// Cluster is one type for both sections; only the source selects
		// topics (what is backed up). A restore restores the backed-up
		// topics, or those its --topics flag selects.
		if v.has(key + ".topics") {
			v.errf(key+".topics", "%s.topics is not a key of %s: a restore restores every backed-up topic, or those restore --topics selects; delete %s.topics (source.topics selects what is backed up)", key, key, key)
		}
		return
	}
	v.patterns(key+".topics", cl.Topics)
	if isSource {
		v.excludes(key+".topics", cl.Topics)
	}
}

// fromConfigDir returns path made absolute against the directory of the
// config file (as given to Load or Parse, itself relative to the working
// directory), so that every command given the same file reads the same
// files and repository from any working directory: storage.path, the TLS
// files and the SASL password file. "" and absolute paths are returned as
// they are, and so is path when the config file's name cannot be made
// absolute.
func (v *validator) fromConfigDir(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	abs, err := filepath.Abs(v.file)
	if err != nil {
		return path
	}
	return filepath.Join(filepath.Dir(abs), path)
}

// kraftSessionTimeout is a KRaft broker's default broker.session.timeout.ms:
// the controller fences a broker that has not heartbeated for this long, so
// a restarting broker's partitions are led elsewhere after it at the latest.
const kraftSessionTimeout = 9 * time.Second

// timeouts fills the defaults of request_timeout and retry_timeout (the
// decoder refuses a value that is not a positive duration); a retry_timeout
// that a broker restart outlasts is a warning.
func (v *validator) timeouts(key string, cl *Cluster) {
	for _, f := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{{"request_timeout", &cl.RequestTimeout, DefaultRequestTimeout}, {"retry_timeout", &cl.RetryTimeout, DefaultRetryTimeout}} {
		if k := key + "." + f.name; !v.has(k) || v.bad[k] {
			*f.d = f.def
		}
	}
	if k := key + ".retry_timeout"; v.has(k) && cl.RetryTimeout > 0 && cl.RetryTimeout <= kraftSessionTimeout {
		v.warnf(k, "%s %s is not longer than a KRaft broker's session timeout (broker.session.timeout.ms, 9s): a run fails when a broker restarts; the default is %s",
			k, cl.RetryTimeout, DefaultRetryTimeout)
	}
}

// patterns compiles the topic filters with topicfilter.NewFilter and
// reports each bad pattern at the line of its list item.
func (v *validator) patterns(key string, t Topics) {
	if len(t.Include) == 0 && len(t.Exclude) == 0 {
		return
	}
	_, err := topicfilter.NewFilter(t.Include, t.Exclude)
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var pe *topicfilter.PatternError
		if !errors.As(e, &pe) {
			v.errf(key, "%s: %v", key, e)
			continue
		}
		list := t.Include
		if pe.List == "exclude" {
			list = t.Exclude
		}
		found := false
		for i, p := range list {
			k := fmt.Sprintf("%s.%s[%d]", key, pe.List, i)
			if p == pe.Pattern {
				found = true
				v.errf(k, "%s %q: %v", k, p, pe.Err) // errf skips items already reported
			}
		}
		if !found {
			v.errf(key+"."+pe.List, "%s.%s: %v", key, pe.List, pe)
		}
	}
}

func (v *validator) tls(key string, t *TLS) {
	if !v.has(key) {
		return
	}
	set := t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
	if v.has(key+".enabled") && !t.Enabled && set {
		v.warnf(key+".enabled", "%s.enabled is false: TLS is off and the other %s keys are ignored", key, key)
		return
	}
	if set {
		t.Enabled = true
	}
	if !t.Enabled {
		return
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		missing := key + ".key_file"
		if t.CertFile == "" {
			missing = key + ".cert_file"
		}
		v.errf(missing, "%s.cert_file and %s.key_file go together (mutual TLS); %s is missing", key, key, missing)
	}
	if t.InsecureSkipVerify {
		v.warnf(key+".insecure_skip_verify", "%s.insecure_skip_verify is true: broker certificates are not verified", key)
	}
}

func (v *validator) sasl(key string, s *SASL, t TLS) {
	if !v.has(key) {
		return
	}
	mk := key + ".mechanism"
	switch strings.ToUpper(s.Mechanism) {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		s.Mechanism = strings.ToUpper(s.Mechanism)
	case "":
		if s.Username != "" || s.Password != "" || s.PasswordFile != "" {
			v.errf(mk, "%s is required when %s is set (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mk, key)
		}
		return
	default:
		v.errf(mk, "%s %q is not supported (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mk, s.Mechanism)
	}
	if s.Username == "" {
		v.errfAt(key+".username", mk, "%s.username is required when %s is set", key, mk)
	}
	switch {
	case s.Password != "" && s.PasswordFile != "":
		v.errf(key+".password_file", "%s.password and %s.password_file are both set; use one", key, key)
	case s.Password == "" && s.PasswordFile == "":
		v.errfAt(key+".password", mk, "%s.password or %s.password_file is required (write password: ${KAFKA_PASSWORD} to read it from the environment)", key, key)
	case s.Password != "" && !v.envRef[key+".password"]:
		v.c.plainSecrets = append(v.c.plainSecrets, key+".password")
		v.warnf(key+".password", "%s is written in the config file; prefer password: ${ENV_VAR} or password_file", key+".password")
	}
	if strings.EqualFold(s.Mechanism, MechanismPlain) && !t.Enabled {
		v.warnf(mk, "%s is PLAIN without TLS: the password crosses the network in clear text", mk)
	}
}

// files reads the files named under key (e.g. "source.security") the way
// ClientOptions does, and reports each unreadable or malformed one at its
// own key. Keys already reported are skipped.
func (v *validator) files(key string, sec Security) {
	t, tk := sec.TLS, key+".tls"
	if t.Enabled {
		if t.CAFile != "" {
			if _, err := readCAFile(t.CAFile); err != nil {
				v.errf(tk+".ca_file", "%s.ca_file: %v", tk, err)
			}
		}
		if t.CertFile != "" && t.KeyFile != "" {
			_, certErr, keyErr, pairErr := loadKeyPair(t.CertFile, t.KeyFile)
			if certErr != nil {
				v.errf(tk+".cert_file", "%s.cert_file: %v", tk, certErr)
			}
			if keyErr != nil {
				v.errf(tk+".key_file", "%s.key_file: %v", tk, keyErr)
			}
			if pairErr != nil {
				v.errf(tk+".cert_file", "%s.cert_file and key_file: %v", tk, pairErr)
			}
		}
	}
	if p := sec.SASL.PasswordFile; p != "" {
		if _, err := readPasswordFile(p); err != nil {
			v.errf(key+".sasl.password_file", "%s.sasl.password_file: %v", key, err)
		}
	}
}

func (v *validator) storage() {
	s := v.c.Storage
	if !v.has("storage") {
		v.errf("storage", "storage is required (storage.backend: s3 or filesystem)")
		return
	}
	bk := "storage.backend"
	var ignored []string
	switch s.Backend {
	case BackendS3:
		if s.Bucket == "" {
			v.errfAt("storage.bucket", bk, "storage.bucket is required when storage.backend is s3")
		} else if problem := checkBucketName(s.Bucket); problem != "" {
			v.errf("storage.bucket", "storage.bucket %q is not a valid S3 bucket name: %s; see %s", s.Bucket, problem, bucketRulesURL)
		}
		if s.Endpoint != "" {
			u, err := url.Parse(s.Endpoint)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.errf("storage.endpoint", "storage.endpoint %q is not an http(s) URL (e.g. http://minio:9000)", s.Endpoint)
			}
		}
		if s.Path != "" {
			ignored = append(ignored, "path")
		}
		if k := "storage.upload_buffer_bytes"; v.has(k) && !v.bad[k] && s.UploadBufferBytes < storage.DefaultS3PartSize {
			v.errf(k, "storage.upload_buffer_bytes must hold at least one S3 part of 8MiB, not %d bytes; leave it out for the default of 48MiB", int64(s.UploadBufferBytes))
		}
		v.serverSideEncryption()
		v.objectLock()
	case BackendFilesystem:
		if s.Path == "" {
			v.errfAt("storage.path", bk, "storage.path is required when storage.backend is filesystem")
		} else if strings.HasPrefix(s.Path, "~") {
			// YAML, Kafka's .properties files and Go do not expand "~":
			// relative to the config file it would name a directory
			// literally called "~".
			v.errf("storage.path", "storage.path %q starts with ~, which is not expanded (it would be a directory named %q next to the config file): write the absolute path, or ${HOME}/%s",
				s.Path, strings.SplitN(s.Path, "/", 2)[0], strings.TrimPrefix(strings.TrimPrefix(s.Path, "~"), "/"))
		} else {
			// Relative to the config file, not to the working directory:
			// a CronJob and a restore started elsewhere must open the same
			// repository.
			v.c.Storage.Path = v.fromConfigDir(s.Path)
		}
		if v.has("storage.object_lock") {
			// Ignored, it would let a user believe the backups immutable.
			v.errf("storage.object_lock", "storage.object_lock applies to the s3 backend only (S3 Object Lock); a filesystem repository cannot retain its objects: remove storage.object_lock, or use storage.backend: s3 with a bucket that has Object Lock enabled")
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"bucket", s.Bucket != ""}, {"region", s.Region != ""}, {"endpoint", s.Endpoint != ""}, {"path_style", v.has("storage.path_style")},
			{"request_timeout", s.RequestTimeout != 0}, {"retry_timeout", s.RetryTimeout != 0}, {"upload_buffer_bytes", v.has("storage.upload_buffer_bytes")},
			{"server_side_encryption", v.has("storage.server_side_encryption")}} {
			if f.set {
				ignored = append(ignored, f.name)
			}
		}
	case "":
		v.errf(bk, "storage.backend is required (s3 or filesystem)")
	default:
		msg := fmt.Sprintf("storage.backend %q is not supported (want s3 or filesystem)", s.Backend)
		if n := nearest(s.Backend, []string{BackendS3, BackendFilesystem}); n != "" {
			msg = fmt.Sprintf("storage.backend %q is not supported (did you mean %s?)", s.Backend, n)
		}
		v.errf(bk, "%s", msg)
	}
	for _, f := range ignored {
		v.warnf("storage."+f, "storage.%s does not apply to the %s backend and is ignored", f, s.Backend)
	}
	if slices.Contains(strings.Split(s.Prefix, "/"), "..") {
		v.errf("storage.prefix", `storage.prefix %q contains "..": the prefix names a place inside storage.path or the bucket, never above it (where another application's repository may be); write it without "..", e.g. streams/order-processor`, s.Prefix)
	} else if _, err := storage.S3Prefix(s.Prefix); err != nil && s.Backend == BackendS3 {
		// The storage's own rule (NewS3 refuses the same prefix).
		v.errf("storage.prefix", "storage.prefix %q is not a valid S3 key prefix: %v; write it as %s", s.Prefix, err, prefixFix(s.Prefix))
	}
}

// prefixFix suggests a valid S3 prefix for an invalid one: its path
// elements without empty and "." ones, backslashes read as '/'; or an
// example when that is still invalid (a reserved element).
func prefixFix(prefix string) string {
	var elems []string
	for _, e := range strings.Split(strings.ReplaceAll(prefix, `\`, "/"), "/") {
		if e != "" && e != "." {
			elems = append(elems, e)
		}
	}
	fix := strings.Join(elems, "/")
	if p, err := storage.S3Prefix(fix); err != nil || p == "" {
		return `a path of names separated by single "/", e.g. streams/order-processor`
	}
	return strconv.Quote(fix)
}

// serverSideEncryption checks storage.server_side_encryption (s3): an
// algorithm S3 knows (storage.SSES3, storage.SSEKMS), and the KMS settings
// only with aws:kms.
func (v *validator) serverSideEncryption() {
	const k = "storage.server_side_encryption"
	if !v.has(k) {
		return
	}
	sse := v.c.Storage.ServerSideEncryption
	switch alg := sse.Algorithm; alg {
	case storage.SSES3, storage.SSEKMS:
	case "":
		v.errf(k+".algorithm", "%s.algorithm is required: AES256 (SSE-S3) or aws:kms (SSE-KMS); leave %s out to use the bucket's default encryption", k, k)
	default:
		hint := ""
		switch strings.ToLower(strings.ReplaceAll(alg, "_", "-")) {
		case "aes256", "sse-s3", "s3":
			hint = " (did you mean AES256?)"
		case "aws:kms", "kms", "sse-kms", "awskms":
			hint = " (did you mean aws:kms?)"
		case "aws:kms:dsse", "dsse-kms":
			hint = " (DSSE-KMS is not supported)"
		}
		v.errf(k+".algorithm", "%s.algorithm %q is not AES256 (SSE-S3) or aws:kms (SSE-KMS)%s", k, alg, hint)
	}
	if sse.Algorithm == "" || sse.Algorithm == storage.SSES3 { // an unknown one is reported once, above
		for _, f := range []struct {
			name string
			set  bool
		}{{"kms_key_id", sse.KMSKeyID != ""}, {"bucket_key", v.has(k + ".bucket_key")}} {
			if f.set {
				v.errf(k+"."+f.name, "%s.%s applies to algorithm aws:kms (SSE-KMS) only, and the algorithm is %q: set %s.algorithm: aws:kms, or remove %s", k, f.name, sse.Algorithm, k, f.name)
			}
		}
	}
}

// objectLock checks storage.object_lock (s3): a mode S3 knows and a
// retention period within S3's limits. It upper-cases the mode.
func (v *validator) objectLock() {
	const k = "storage.object_lock"
	if !v.has(k) {
		return
	}
	ol := &v.c.Storage.ObjectLock
	switch mode := strings.ToUpper(strings.TrimSpace(ol.Mode)); mode {
	case storage.RetentionGovernance, storage.RetentionCompliance:
		ol.Mode = mode
	case "":
		v.errf(k+".mode", "%s.mode is required: GOVERNANCE or COMPLIANCE (S3 Object Lock retention modes)", k)
	default:
		v.errf(k+".mode", "%s.mode %q is not GOVERNANCE or COMPLIANCE (S3 Object Lock retention modes)", k, ol.Mode)
	}
	if strings.TrimSpace(ol.Retention) == "" {
		v.errf(k+".retention", "%s.retention is required: how long each backup object is retained, in whole days (30d) or hours (36h)", k)
	} else if _, err := ol.Period(); err != nil {
		v.errf(k+".retention", "%s.retention %v", k, err)
	}
}

func (v *validator) backup() {
	b := &v.c.Backup
	switch {
	case !v.has("backup.compression") || b.Compression == "":
		b.Compression = DefaultCompression
	case b.Compression != DefaultCompression:
		v.errf("backup.compression", "backup.compression %q is not supported (only zstd)", b.Compression)
	}
	// Absent, it stays "": the backup's default level (format.CompressionDefault).
	switch {
	case !v.has("backup.compression_level") || v.bad["backup.compression_level"]:
	case v.null["backup.compression_level"] || b.CompressionLevel == "":
		v.errf("backup.compression_level", "backup.compression_level has no value: write one of %s, or remove the key for the default (default)", format.CompressionLevelNames())
	default:
		if _, err := format.ParseCompressionLevel(b.CompressionLevel); err != nil {
			v.errf("backup.compression_level", "backup.compression_level %q is not a zstd level: write one of %s, or remove the key for the default (default)", b.CompressionLevel, format.CompressionLevelNames())
		}
	}
	switch {
	case !v.has("backup.segment_kind") || b.SegmentKind == "":
		b.SegmentKind = DefaultSegmentKind
	case b.SegmentKind != "record" && b.SegmentKind != "batch":
		v.errf("backup.segment_kind", "backup.segment_kind %q is not record or batch: write record (re-encode every record, the default) or batch (store the broker's record batches as fetched)", b.SegmentKind)
	}
	if b.SegmentKind == "batch" && v.has("backup.compression_level") && !v.bad["backup.compression_level"] {
		v.warnf("backup.compression_level", "backup.compression_level applies to record segments only: with segment_kind: batch the record batches are stored as their producers compressed them, and the level sets only the in-flight tails (and any old message sets), which stay record segments")
	}
	switch {
	case !v.has("backup.segment_max_bytes"):
		b.SegmentMaxBytes = DefaultSegmentMaxBytes
	case b.SegmentMaxBytes < 1<<10 && !v.bad["backup.segment_max_bytes"]:
		v.errf("backup.segment_max_bytes", "backup.segment_max_bytes must be at least 1KiB, not %d", int64(b.SegmentMaxBytes))
	}
	switch {
	case !v.has("backup.concurrency"):
		b.Concurrency = DefaultConcurrency
	case b.Concurrency < 1 && !v.bad["backup.concurrency"]:
		v.errf("backup.concurrency", "backup.concurrency must be at least 1, not %d", b.Concurrency)
	}
	switch {
	case !v.has("backup.cut_attempts"):
		b.CutAttempts = DefaultCutAttempts
	case v.null["backup.cut_attempts"]:
		v.errf("backup.cut_attempts", "backup.cut_attempts has no value: write a number of attempts, at least 1, or remove the key for the default (%d)", DefaultCutAttempts)
	case b.CutAttempts < 1 && !v.bad["backup.cut_attempts"]:
		v.errf("backup.cut_attempts", "backup.cut_attempts must be at least 1, not %d", b.CutAttempts)
	}
	// The decoder refuses a cut_timeout that is not a positive duration.
	switch {
	case !v.has("backup.cut_timeout") || v.bad["backup.cut_timeout"]:
		b.CutTimeout = DefaultCutTimeout
	case v.null["backup.cut_timeout"]:
		v.errf("backup.cut_timeout", "backup.cut_timeout has no value: write a duration, at least %s, or remove the key for the default (%s)", MinCutTimeout, DefaultCutTimeout)
	case b.CutTimeout < MinCutTimeout:
		v.errf("backup.cut_timeout", "backup.cut_timeout must be at least %s, not %s: the bound is checked between attempts (the first attempt always runs), so a shorter one bounds nothing", MinCutTimeout, b.CutTimeout)
	}
}

// maxTopicLength is Kafka's limit on topic names in characters
// (org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH).
const maxTopicLength = 249

// autoInternalSuffix is the longest part Kafka Streams adds to the
// application.id in an internal topic it names itself: the repartition
// topic of a groupBy before an aggregation whose store has the
// auto-generated name (InternalTopologyBuilder: <application.id>-<name>,
// names from a 10-digit counter).
const autoInternalSuffix = "-KSTREAM-AGGREGATE-STATE-STORE-0000000000-repartition"

// badTopicChars describes the first character Kafka does not allow in a
// topic name (or an application.id, which prefixes topic names), or "".
func badTopicChars(s string) string {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return fmt.Sprintf("%q", r)
		}
	}
	return ""
}

// checkHostPort describes what is wrong with a bootstrap server that is not
// host:port with a port from 1 to 65535 (IPv6 addresses in brackets, as in
// "[::1]:9092"), or returns "". The description follows the quoted value,
// except for an empty value.
func checkHostPort(s string) string {
	example := func(host, port string) string {
		if host == "" {
			host = "kafka"
		}
		if port == "" {
			port = "9092"
		}
		return net.JoinHostPort(host, port)
	}
	switch {
	case s == "":
		return "is empty: write host:port, e.g. kafka:9092"
	case strings.Contains(s, "://"):
		scheme, rest, _ := strings.Cut(s, "://")
		host, port, err := net.SplitHostPort(strings.TrimSuffix(rest, "/"))
		if err != nil {
			host, port = "", ""
		}
		return fmt.Sprintf("is a listener URL: write host:port without %q, e.g. %s", scheme+"://", example(host, port))
	case strings.Contains(s, ","):
		parts := strings.Split(s, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return fmt.Sprintf("holds several servers: write one host:port per list item, e.g. [%s]", strings.Join(parts, ", "))
	case strings.ContainsAny(s, " \t\r\n"):
		return "contains a blank: write host:port, e.g. " + example("", "")
	case strings.Contains(s, "/"):
		return `contains "/": write host:port, e.g. ` + example("", "")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		i := strings.LastIndexByte(s, ':')
		switch {
		case errors.As(err, &ae) && ae.Err == "missing port in address":
			return "has no port: write host:port, e.g. " + example(strings.Trim(s, "[]"), "")
		case strings.Count(s, ":") > 1 && !strings.Contains(s, "[") && net.ParseIP(s[:i]) != nil && isDigits(s[i+1:]):
			// "::1:9092" is also an IPv6 address, but rarely meant as one.
			return "is not host:port: put an IPv6 address in brackets, e.g. " + example(s[:i], s[i+1:])
		case net.ParseIP(s) != nil:
			return "has no port: write host:port, e.g. " + example(s, "")
		}
		return "is not host:port, e.g. " + example("", "")
	}
	switch {
	case host == "":
		return "has no host: write host:port, e.g. " + example("", port)
	case port == "":
		return "has no port: write host:port, e.g. " + example(host, "")
	case strings.HasPrefix(s, "[") && net.ParseIP(host) == nil:
		return "has brackets around a host name: brackets are for IPv6 addresses, e.g. " + example(host, port)
	}
	n, err := strconv.Atoi(port)
	switch {
	case err != nil && isDigits(port):
		return fmt.Sprintf("has port %s: a port is 1 to 65535", port) // too large for an int
	case err != nil:
		return fmt.Sprintf("has port %q: a port is a number from 1 to 65535", port)
	case n < 1 || n > 65535:
		return fmt.Sprintf("has port %d: a port is 1 to 65535", n)
	}
	return ""
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// bucketRulesURL is where AWS states the bucket naming rules.
const bucketRulesURL = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html"

// checkBucketName describes which S3 general-purpose bucket naming rule
// name breaks, or returns "": 3 to 63 characters; lowercase letters,
// digits, '.' and '-'; starting and ending with a letter or digit; no two
// adjacent periods; not formatted as an IP address.
func checkBucketName(name string) string {
	if n := len(name); n < 3 || n > 63 {
		return fmt.Sprintf("it has %d characters, and a bucket name has 3 to 63", utf8.RuneCountInString(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return fmt.Sprintf("it contains %q, and a bucket name uses only lowercase letters, digits, '.' and '-'", r)
		}
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	switch {
	case !alnum(name[0]):
		return fmt.Sprintf("it starts with %q, and a bucket name starts and ends with a lowercase letter or digit", name[0])
	case !alnum(name[len(name)-1]):
		return fmt.Sprintf("it ends with %q, and a bucket name starts and ends with a lowercase letter or digit", name[len(name)-1])
	case strings.Contains(name, ".."):
		return `it contains "..", and a bucket name has no two adjacent periods`
	case net.ParseIP(name) != nil:
		return "it is formatted as an IP address, and a bucket name must not be"
	}
	return ""
}
