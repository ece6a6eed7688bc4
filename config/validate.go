package config

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

func parse(data []byte, name string, lookup func(string) (string, bool)) (*Config, error) {
	d := &decoder{
		file:   name,
		lookup: lookup,
		lines:  map[string]int{},
		bad:    map[string]bool{},
		envRef: map[string]bool{},
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
	v := &validator{decoder: d, c: c, rootLine: root.Line}
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
	c        *Config
	rootLine int
	warnings []string
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
	v.warnings = append(v.warnings, msg)
}

func (v *validator) validate() {
	c := v.c
	if c.ApplicationID == "" {
		v.warnf("application_id", "application_id is not set: topics are classified by name suffix only and no consumer-group offsets are read; set it to the Kafka Streams application.id")
	} else if bad := badTopicChars(c.ApplicationID); bad != "" {
		v.errf("application_id", "application_id %q contains %s; a Kafka Streams application.id uses only letters, digits, '.', '_' and '-'", c.ApplicationID, bad)
	}
	for i, t := range c.SourceChangelogTopics {
		k := fmt.Sprintf("source_changelog_topics[%d]", i)
		if t == "" {
			v.errf(k, "%s is empty", k)
		} else if bad := badTopicChars(t); bad != "" {
			v.errf(k, "%s %q is not a topic name: it contains %s", k, t, bad)
		}
	}

	if !v.has("source") {
		v.errf("source", "source is required (the cluster to back up: source.bootstrap_servers and source.topics.include)")
	} else {
		v.cluster("source", &c.Source, true)
	}
	if c.Target != nil {
		v.cluster("target", c.Target, false)
	}
	v.storage()
	v.backup()
}

func (v *validator) cluster(key string, cl *Cluster, isSource bool) {
	k := key + ".bootstrap_servers"
	if len(cl.BootstrapServers) == 0 {
		v.errf(k, "%s is required (a list of host:port, e.g. [kafka:9092])", k)
	}
	for i, s := range cl.BootstrapServers {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t/") {
			ki := fmt.Sprintf("%s[%d]", k, i)
			v.errf(ki, "%s %q is not a host:port", ki, s)
		}
	}
	v.tls(key+".security.tls", &cl.Security.TLS)
	v.sasl(key+".security.sasl", &cl.Security.SASL, cl.Security.TLS)

	k = key + ".topics.include"
	if isSource && len(cl.Topics.Include) == 0 {
		v.errf(k, "%s is required: list the topics to back up (globs like \"order-processor-*-changelog\" or ~regex)", k)
	}
	v.patterns(key+".topics", cl.Topics)
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
		v.warnf(key+".password", "%s is written in the config file; prefer password: ${ENV_VAR} or password_file", key+".password")
	}
	if strings.EqualFold(s.Mechanism, MechanismPlain) && !t.Enabled {
		v.warnf(mk, "%s is PLAIN without TLS: the password crosses the network in clear text", mk)
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
	case BackendFilesystem:
		if s.Path == "" {
			v.errfAt("storage.path", bk, "storage.path is required when storage.backend is filesystem")
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"bucket", s.Bucket != ""}, {"region", s.Region != ""}, {"endpoint", s.Endpoint != ""}, {"path_style", v.has("storage.path_style")}} {
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
}

func (v *validator) backup() {
	b := &v.c.Backup
	switch {
	case !v.has("backup.compression") || b.Compression == "":
		b.Compression = DefaultCompression
	case b.Compression != DefaultCompression:
		v.errf("backup.compression", "backup.compression %q is not supported (only zstd)", b.Compression)
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
}

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
