package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadGoodFiles(t *testing.T) {
	t.Setenv("KAFKA_PASSWORD", "s3cret")
	tests := []struct {
		file         string
		want         func(t *testing.T, c *Config)
		wantWarnings []string // substrings, one per expected warning, in order
	}{
		{
			file: "issue.yaml",
			want: func(t *testing.T, c *Config) {
				eq(t, "application_id", c.ApplicationID, "order-processor")
				eq(t, "source_changelog_topics", c.SourceChangelogTopics, []string{"customers"})
				eq(t, "bootstrap_servers", c.Source.BootstrapServers, []string{"kafka:9092"})
				eq(t, "include", c.Source.Topics.Include, []string{"orders", "customer-totals", "order-processor-*-changelog"})
				eq(t, "exclude", c.Source.Topics.Exclude, []string{"order-processor-*-repartition"})
				eq(t, "storage", c.Storage, Storage{Backend: "s3", Bucket: "kafka-backups", Prefix: "streams/order-processor", Region: "us-east-1", Path: "/var/backups/kafka"})
				eq(t, "backup", c.Backup, Backup{Compression: "zstd", SourceClusterID: "production", SegmentKind: "record", SegmentMaxBytes: 64 << 20, Concurrency: 4,
					CutAttempts: DefaultCutAttempts, CutTimeout: DefaultCutTimeout})
				eq(t, "target", c.Target, (*Cluster)(nil))
				eq(t, "line of include[2]", c.Line("source.topics.include[2]"), 7)
			},
			wantWarnings: []string{"storage.path does not apply to the s3 backend and is ignored (line 14)"},
		},
		{
			file: "seed-001.yaml",
			want: func(t *testing.T, c *Config) {
				eq(t, "application_id", c.ApplicationID, "")
				eq(t, "include", c.Source.Topics.Include, []string{"orders", "customer-totals", "order-processor-*-changelog"})
				eq(t, "storage", c.Storage, Storage{Backend: "s3", Bucket: "kafka-backups", Prefix: "streams/order-processor"})
				eq(t, "source_cluster_id", c.Backup.SourceClusterID, "production")
				eq(t, "line of exclude[0]", c.Line("source.topics.exclude[0]"), 12)
			},
			wantWarnings: []string{"application_id is not set"},
		},
		{
			file: "full.yaml",
			want: func(t *testing.T, c *Config) {
				eq(t, "client_id", c.Source.ClientID, "dr-backup")
				eq(t, "tls", c.Source.Security.TLS, TLS{Enabled: true, CAFile: "/etc/kafka/ca.pem", ServerName: "kafka.internal"})
				eq(t, "sasl", c.Source.Security.SASL, SASL{Mechanism: "SCRAM-SHA-512", Username: "backup", Password: "s3cret"})
				eq(t, "allow_missing", c.Source.Topics.AllowMissing, true)
				eq(t, "target tls implied by ca_file", c.Target.Security.TLS.Enabled, true)
				eq(t, "target sasl", c.Target.Security.SASL, SASL{Mechanism: "PLAIN", Username: "restore", PasswordFile: "/run/secrets/kafka-password"})
				eq(t, "storage", c.Storage, Storage{Backend: "s3", Bucket: "kafka-backups", Prefix: "streams/order-processor", Region: "eu-west-1", Endpoint: "http://minio:9000", PathStyle: true})
				eq(t, "backup", c.Backup, Backup{Compression: "zstd", SourceClusterID: "production", SegmentKind: "batch", SegmentMaxBytes: 16 << 20, Concurrency: 8,
					CutAttempts: 50, CutTimeout: time.Minute})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.want(t, c)
			w := c.Warnings()
			if len(w) != len(tt.wantWarnings) {
				t.Fatalf("warnings = %q, want %d matching %q", w, len(tt.wantWarnings), tt.wantWarnings)
			}
			for i := range w {
				if !strings.Contains(w[i], tt.wantWarnings[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, w[i], tt.wantWarnings[i])
				}
			}
		})
	}
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// base is a valid config; bad cases edit it line by line.
const base = `application_id: app
source:
  bootstrap_servers: [kafka:9092]
  topics:
    include: [orders, "app-*-changelog"]
storage:
  backend: filesystem
  path: /backups
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error message
	}{
		{
			name: "unknown key names the key, suggests the nearest, gives the line",
			yaml: strings.Replace(base, "  path: /backups", "  path: /backups\n  bukket: x", 1),
			want: []string{"unknown key storage.bukket", "did you mean storage.bucket?", "line 9"},
		},
		{
			name: "unknown top-level key",
			yaml: base + "restore:\n  x: 1\n",
			want: []string{"unknown key restore", "line 9"},
		},
		{
			name: "wrong type: list given a string",
			yaml: strings.Replace(base, "bootstrap_servers: [kafka:9092]", "bootstrap_servers: kafka:9092", 1),
			want: []string{"source.bootstrap_servers must be a list of strings", `not the string "kafka:9092"`, "line 3"},
		},
		{
			name: "wrong type: integer given a word",
			yaml: base + "backup:\n  concurrency: four\n",
			want: []string{"backup.concurrency must be an integer", "line 10"},
		},
		{
			name: "wrong type: mapping given a list",
			yaml: base + "backup: [zstd]\n",
			want: []string{"backup must be a mapping, not a list", "line 9"},
		},
		{
			name: "wrong type: bool",
			yaml: base + "  path_style: maybe\n",
			want: []string{"storage.path_style must be true or false", "line 9"},
		},
		{
			name: "bad glob names the list item",
			yaml: strings.Replace(base, `include: [orders, "app-*-changelog"]`, "include:\n      - orders\n      - app-*-changelog\n      - \"app-[z-a]\"", 1),
			want: []string{"source.topics.include[2]", "line 8"},
		},
		{
			name: "bad regex names the list item",
			yaml: strings.Replace(base, `include: [orders, "app-*-changelog"]`, "include: [orders]\n    exclude: [\"~(\"]", 1),
			want: []string{`source.topics.exclude[0] "~("`, "line 6"},
		},
		{
			name: "bad regex in include",
			yaml: strings.Replace(base, `include: [orders, "app-*-changelog"]`, `include: [orders, "~("]`, 1),
			want: []string{`source.topics.include[1] "~("`, "line 5"},
		},
		{
			name: "unset environment variable",
			yaml: strings.Replace(base, "path: /backups", "path: ${KSDR_TEST_UNSET}/backups", 1),
			want: []string{"storage.path", "environment variable KSDR_TEST_UNSET is not set", "line 8"},
		},
		{
			name: "missing bucket for s3",
			yaml: strings.Replace(base, "backend: filesystem", "backend: s3", 1),
			want: []string{"storage.bucket is required when storage.backend is s3", "line 7"},
		},
		{
			name: "missing path for filesystem",
			yaml: strings.Replace(base, "  path: /backups\n", "", 1),
			want: []string{"storage.path is required when storage.backend is filesystem", "line 7"},
		},
		{
			name: "missing bootstrap_servers",
			yaml: strings.Replace(base, "  bootstrap_servers: [kafka:9092]\n", "", 1),
			want: []string{"source.bootstrap_servers is required", "line 2"},
		},
		{
			name: "sasl password and password_file both set",
			yaml: strings.Replace(base, "  topics:", "  security:\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password: p\n      password_file: /p\n  topics:", 1),
			want: []string{"source.security.sasl.password and source.security.sasl.password_file are both set", "line 9"},
		},
		{
			name: "unknown sasl mechanism",
			yaml: strings.Replace(base, "  topics:", "  security:\n    sasl:\n      mechanism: GSSAPI\n      username: u\n      password: p\n  topics:", 1),
			want: []string{`source.security.sasl.mechanism "GSSAPI" is not supported`, "line 6"},
		},
		{
			name: "missing storage",
			yaml: strings.Replace(base, "storage:\n  backend: filesystem\n  path: /backups\n", "", 1),
			want: []string{"storage is required", "line 1"},
		},
		{
			name: "unknown backend suggests",
			yaml: strings.Replace(base, "backend: filesystem", "backend: filesytem", 1),
			want: []string{`storage.backend "filesytem" is not supported (did you mean filesystem?)`, "line 7"},
		},
		{
			name: "unsupported compression",
			yaml: base + "backup:\n  compression: gzip\n",
			want: []string{`backup.compression "gzip" is not supported`, "line 10"},
		},
		{
			name: "unknown segment kind",
			yaml: base + "backup:\n  segment_kind: batches\n",
			want: []string{`backup.segment_kind "batches" is not record or batch: write record`, "line 10"},
		},
		{
			name: "bad segment size unit",
			yaml: base + "backup:\n  segment_max_bytes: 64 furlongs\n",
			want: []string{"backup.segment_max_bytes must be a size", "line 10"},
		},
		{
			name: "key set twice",
			yaml: base + "application_id: other\n",
			want: []string{"application_id is set twice (first on line 1)", "line 9"},
		},
		{
			name: "target is validated",
			yaml: base + "target:\n  client_id: x\n",
			want: []string{"target.bootstrap_servers is required", "line 9"},
		},
		{
			name: "cert_file without key_file",
			yaml: strings.Replace(base, "  topics:", "  security:\n    tls:\n      cert_file: /c.pem\n  topics:", 1),
			want: []string{"source.security.tls.key_file is missing", "line 5"},
		},
		{
			name: "not a mapping",
			yaml: "- a\n- b\n",
			want: []string{"must be a mapping of keys", "line 1"},
		},
		{
			name: "yaml syntax error",
			yaml: "source:\n  bootstrap_servers: [kafka\n",
			want: []string{"not valid YAML", "line"},
		},
		{
			name: "empty file",
			yaml: "",
			want: []string{"the config is empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "test.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Errorf("error is %T, want ErrorList", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "test.yaml:") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestParseReportsEveryProblemOnce(t *testing.T) {
	y := strings.Replace(base, "backend: filesystem", "backend: s3", 1) + "backup:\n  concurrency: x\n  segment_max_bytes: 0\n"
	_, err := Parse([]byte(y), "t.yaml")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want ErrorList", err)
	}
	var keys []string
	for _, e := range list {
		keys = append(keys, e.Key)
	}
	want := []string{"storage.bucket", "backup.concurrency", "backup.segment_max_bytes"}
	eq(t, "keys", keys, want)
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("KSDR_BUCKET", "from-env")
	t.Setenv("KSDR_EMPTY", "")
	tests := []struct {
		name, value, want string
	}{
		{"whole value", "${KSDR_BUCKET}", "from-env"},
		{"inside a value", "pre-${KSDR_BUCKET}-post", "pre-from-env-post"},
		{"set but empty", "a${KSDR_EMPTY}b", "ab"},
		{"escaped", "$${KSDR_BUCKET}", "${KSDR_BUCKET}"},
		{"plain dollar untouched", "pa$$word$x", "pa$$word$x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// backup.source_cluster_id, not a location: an empty
			// variable in a location is an error
			// (TestEmptyVariableInALocationIsAnError).
			y := base + "backup:\n  source_cluster_id: \"" + tt.value + "\"\n" +
				"# a comment with ${KSDR_NOT_SET_IN_COMMENT} is not expanded\n"
			c, err := Parse([]byte(y), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "backup.source_cluster_id", c.Backup.SourceClusterID, tt.want)
		})
	}
}

func TestExpandEnvErrors(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for _, s := range []string{"${UNSET}", "${unterminated", "${bad-name}", "${}"} {
		if _, _, err := expandEnv(s, lookup); err == nil {
			t.Errorf("expandEnv(%q) succeeded, want error", s)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"67108864", 64 << 20, true},
		{"64MiB", 64 << 20, true},
		{"64 MiB", 64 << 20, true},
		{"1GB", 1000 * 1000 * 1000, true},
		{"512kib", 512 << 10, true},
		{"1_000", 1000, true},
		{"MiB", 0, false},
		{"12 parsecs", 0, false},
		{"99999999999999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	eq(t, "String", ByteSize(64<<20).String(), "64MiB")
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"literal password", strings.Replace(base, "  topics:", "  security:\n    tls: {enabled: true}\n    sasl: {mechanism: PLAIN, username: u, password: p}\n  topics:", 1), "source.security.sasl.password is written in the config file"},
		{"plain without tls", strings.Replace(base, "  topics:", "  security:\n    sasl: {mechanism: PLAIN, username: u, password_file: /p}\n  topics:", 1), "PLAIN without TLS"},
		{"filesystem ignores bucket", base + "  bucket: b\n", "storage.bucket does not apply to the filesystem backend and is ignored (line 9)"},
		{"tls explicitly off", strings.Replace(base, "  topics:", "  security:\n    tls: {enabled: false, ca_file: /ca.pem}\n  topics:", 1), "TLS is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, tt.want) {
				t.Errorf("warnings %q do not contain %q", w, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		s    Storage
		want string
	}{
		{Storage{Backend: "s3", Bucket: "b", Prefix: "/p/q/"}, "s3://b/p/q"},
		{Storage{Backend: "s3", Bucket: "b", Region: "us-east-1", Endpoint: "http://minio:9000", PathStyle: true}, "s3://b (region us-east-1, endpoint http://minio:9000, path-style)"},
		{Storage{Backend: "filesystem", Path: "/var/backups/kafka"}, "/var/backups/kafka"},
		{Storage{Backend: "filesystem", Path: "/var/backups", Prefix: "app"}, filepath.Join("/var/backups", "app")},
	}
	for _, tt := range tests {
		eq(t, "Describe", tt.s.Describe(), tt.want)
	}
}

func TestClientOptions(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name    string
		c       Cluster
		wantErr string // "" for success
		nOpts   int
	}{
		{"plaintext", Cluster{BootstrapServers: []string{"k:9092"}}, "", 2},
		{"scram from password file", Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{SASL: SASL{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: pw}}}, "", 3},
		{"tls and plain", Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{TLS: TLS{Enabled: true}, SASL: SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}}}, "", 4},
		{"missing password file is named", Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{SASL: SASL{Mechanism: "PLAIN", Username: "u", PasswordFile: missing}}}, missing, 0},
		{"CA file without PEM is named", Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{TLS: TLS{Enabled: true, CAFile: notPEM}}}, notPEM, 0},
		{"missing client cert is named", Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{TLS: TLS{Enabled: true, CertFile: missing, KeyFile: missing}}}, missing, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.c.ClientOptions()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				eq(t, "number of options", len(opts), tt.nOpts+len(Cluster{}.timeoutOptions()))
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to name %q", err, tt.wantErr)
			}
		})
	}
}

func TestBootstrapServersMustBeHostPort(t *testing.T) {
	tests := []struct {
		name   string
		server string
		want   string // "" when valid; else a substring of the error
	}{
		{"host and port", "kafka:9092", ""},
		{"IPv4 address and port", "10.0.0.1:9092", ""},
		{"bracketed IPv6 address and port", "[::1]:9092", ""},
		{"lowest port", "kafka:1", ""},
		{"highest port", "kafka:65535", ""},
		{"host without port", "localhost", `source.bootstrap_servers[0]: "localhost" has no port: write host:port, e.g. localhost:9092 (line 3)`},
		{"port zero", "kafka:0", `source.bootstrap_servers[0]: "kafka:0" has port 0: a port is 1 to 65535 (line 3)`},
		{"port above 65535", "kafka:65536", `source.bootstrap_servers[0]: "kafka:65536" has port 65536: a port is 1 to 65535 (line 3)`},
		{"port not a number", "kafka:ninety", `source.bootstrap_servers[0]: "kafka:ninety" has port "ninety": a port is a number from 1 to 65535 (line 3)`},
		{"empty port", "kafka:", `source.bootstrap_servers[0]: "kafka:" has no port: write host:port, e.g. kafka:9092 (line 3)`},
		{"no host", ":9092", `source.bootstrap_servers[0]: ":9092" has no host: write host:port, e.g. kafka:9092 (line 3)`},
		{"IPv6 without brackets", "::1:9092", `source.bootstrap_servers[0]: "::1:9092" is not host:port: put an IPv6 address in brackets, e.g. [::1]:9092 (line 3)`},
		{"IPv6 without port", "[::1]", `source.bootstrap_servers[0]: "[::1]" has no port: write host:port, e.g. [::1]:9092 (line 3)`},
		{"listener URL", "SASL_SSL://kafka:9093", `source.bootstrap_servers[0]: "SASL_SSL://kafka:9093" is a listener URL: write host:port without "SASL_SSL://", e.g. kafka:9093 (line 3)`},
		{"comma-separated servers in one item", "kafka-1:9092,kafka-2:9092", `source.bootstrap_servers[0]: "kafka-1:9092,kafka-2:9092" holds several servers: write one host:port per list item, e.g. [kafka-1:9092, kafka-2:9092] (line 3)`},
		{"blank inside", "kafka 9092", `source.bootstrap_servers[0]: "kafka 9092" contains a blank: write host:port, e.g. kafka:9092 (line 3)`},
		{"slash", "kafka/9092", `source.bootstrap_servers[0]: "kafka/9092" contains "/": write host:port, e.g. kafka:9092 (line 3)`},
		{"brackets around a host name", "[kafka]:9092", `source.bootstrap_servers[0]: "[kafka]:9092" has brackets around a host name: brackets are for IPv6 addresses, e.g. kafka:9092 (line 3)`},
		{"empty", "", `source.bootstrap_servers[0] is empty: write host:port, e.g. kafka:9092 (line 3)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(base, "bootstrap_servers: [kafka:9092]", "bootstrap_servers: ["+strconv.Quote(tt.server)+"]", 1)
			_, err := Parse([]byte(y), "t.yaml")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tt.want)
			}
		})
	}
}

func TestTargetBootstrapServersNameTheirIndex(t *testing.T) {
	y := base + "target:\n  bootstrap_servers:\n    - dr-kafka:9092\n    - dr-kafka-2\n"
	_, err := Parse([]byte(y), "t.yaml")
	want := `target.bootstrap_servers[1]: "dr-kafka-2" has no port: write host:port, e.g. dr-kafka-2:9092 (line 12)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to contain %s", err, want)
	}
}

func TestS3BucketNameRules(t *testing.T) {
	tests := []struct {
		name   string
		bucket string
		want   string // "" when valid; else a substring of the error
	}{
		{"lowercase, digits and dashes", "kafka-backups-01", ""},
		{"dots", "backups.example.com", ""},
		{"three characters", "abc", ""},
		{"63 characters", strings.Repeat("a", 63), ""},
		{"too short", "ab", `storage.bucket "ab" is not a valid S3 bucket name: it has 2 characters, and a bucket name has 3 to 63; see https://`},
		{"too long", strings.Repeat("a", 64), "it has 64 characters, and a bucket name has 3 to 63"},
		{"uppercase", "Kafka-Backups", `storage.bucket "Kafka-Backups" is not a valid S3 bucket name: it contains 'K', and a bucket name uses only lowercase letters, digits, '.' and '-'; see https://`},
		{"underscore", "kafka_backups", "it contains '_', and a bucket name uses only lowercase letters, digits, '.' and '-'"},
		{"starts with a dash", "-kafka", "it starts with '-', and a bucket name starts and ends with a lowercase letter or digit"},
		{"ends with a dot", "kafka.", "it ends with '.', and a bucket name starts and ends with a lowercase letter or digit"},
		{"two adjacent dots", "kafka..backups", `it contains "..", and a bucket name has no two adjacent periods`},
		{"IP address", "192.168.1.10", "it is formatted as an IP address, and a bucket name must not be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(base, "  backend: filesystem\n  path: /backups\n", "  backend: s3\n  bucket: \""+tt.bucket+"\"\n", 1)
			_, err := Parse([]byte(y), "t.yaml")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tt.want)
			}
			if !strings.Contains(err.Error(), "bucketnamingrules.html (line 8)") {
				t.Errorf("err = %v\nwant it to point at the S3 bucket naming rules and give the line", err)
			}
		})
	}
}

func TestBucketIsNotCheckedForFilesystem(t *testing.T) {
	c, err := Parse([]byte(base+"  bucket: Not_A_Bucket\n"), "t.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "storage.bucket does not apply") {
		t.Errorf("warnings %q", w)
	}
}

// TestLoadAndCheckFilesReportsEveryProblem: the files a client would read
// are checked as part of validation, and one bad file does not hide the
// next one or the problems found while parsing.
func TestLoadAndCheckFilesReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPEM := write("ca.pem", "not a certificate")
	emptyPassword := write("empty-password", "\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name string
		yaml string
		want []string // each a substring of one problem, in line order
	}{
		{
			name: "bad CA file and missing password file are both reported",
			yaml: strings.Replace(base, "  topics:", "  security:\n    tls:\n      ca_file: "+notPEM+"\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password_file: "+missing+"\n  topics:", 1),
			want: []string{
				"source.security.tls.ca_file: " + notPEM + " holds no PEM certificate (line 6)",
				"source.security.sasl.password_file: cannot read " + missing + ": no such file or directory (line 10)",
			},
		},
		{
			name: "file problems come with the parse problems",
			yaml: strings.Replace(strings.Replace(base, "  topics:", "  security:\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password_file: "+emptyPassword+"\n  topics:", 1), "[kafka:9092]", "[kafka]", 1),
			want: []string{
				`source.bootstrap_servers[0]: "kafka" has no port`,
				"source.security.sasl.password_file: " + emptyPassword + " is empty (line 8)",
			},
		},
		{
			name: "missing client certificate and key of source and target",
			yaml: strings.Replace(base, "  topics:", "  security:\n    tls:\n      cert_file: "+missing+"\n      key_file: "+missing+".key\n  topics:", 1) +
				"target:\n  bootstrap_servers: [dr:9092]\n  security:\n    tls: {ca_file: " + missing + ".ca}\n",
			want: []string{
				"source.security.tls.cert_file: cannot read " + missing + ": no such file or directory (line 6)",
				"source.security.tls.key_file: cannot read " + missing + ".key: no such file or directory (line 7)",
				"target.security.tls.ca_file: cannot read " + missing + ".ca: no such file or directory (line 16)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := write("app.yaml", tt.yaml)
			if _, err := Load(file); err != nil && strings.Contains(err.Error(), ".security.") {
				t.Errorf("Load read the files the config names: %v", err)
			}
			_, err := LoadAndCheckFiles(file)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("err = %v, want ErrorList", err)
			}
			if len(list) != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, w := range tt.want {
				if i < len(list) && !strings.Contains(list[i].Error(), w) {
					t.Errorf("problem %d = %q\nwant it to contain %q", i, list[i].Error(), w)
				}
			}
		})
	}
}

func TestClientOptionsReportsEveryFileProblem(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	c := Cluster{BootstrapServers: []string{"k:9092"}, Security: Security{
		TLS:  TLS{Enabled: true, CAFile: missing + ".ca"},
		SASL: SASL{Mechanism: "PLAIN", Username: "u", PasswordFile: missing + ".pw"},
	}}
	_, err := c.ClientOptions()
	for _, w := range []string{"TLS CA file: cannot read " + missing + ".ca", "SASL password file: cannot read " + missing + ".pw"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v\nwant it to contain %q", err, w)
		}
	}
}

// TestNameLengthsAgainstKafkaLimits: application_id prefixes every Streams
// internal topic (<application.id>-<name>-changelog, -repartition), whose
// names Kafka limits to 249 characters (org.apache.kafka.common.internals.Topic);
// source_changelog_topics are topic names.
func TestNameLengthsAgainstKafkaLimits(t *testing.T) {
	id := func(n int) string { return strings.Repeat("a", n) }
	withID := func(s string) string { return strings.Replace(base, "application_id: app", "application_id: "+s, 1) }
	errTests := []struct {
		name, yaml string
		want       []string
	}{
		{"no internal topic name fits", withID(id(238)), []string{"application_id is 238 characters long", "<application.id>-<name>-changelog", "249"}},
		{"source changelog topic too long", base + "source_changelog_topics: [" + id(250) + "]\n", []string{"source_changelog_topics[0] is 250 characters long", "249"}},
		{"source changelog topic dot dot", base + "source_changelog_topics: [\"..\"]\n", []string{`source_changelog_topics[0] ".." is not a legal topic name`}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	warnTests := []struct {
		name, yaml string
		want       string // "" means no warning about the length
	}{
		{"237 characters: only names of 1 character fit", withID(id(237)), "auto-generated internal topic names do not fit"},
		{"196 characters: auto-generated names fit exactly", withID(id(196)), ""},
		{"197 characters: the longest auto-generated names do not fit", withID(id(197)), "KSTREAM-AGGREGATE-STATE-STORE-0000000000-repartition"},
		{"ordinary", base, ""},
	}
	for _, tt := range warnTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			w := strings.Join(c.Warnings(), "\n")
			if tt.want == "" {
				if strings.Contains(w, "internal topic names") {
					t.Errorf("unexpected warning: %s", w)
				}
			} else if !strings.Contains(w, tt.want) {
				t.Errorf("warnings %q do not contain %q", w, tt.want)
			}
		})
	}
}

// TestStorageTimeouts: storage.request_timeout and storage.retry_timeout
// are Go durations, zero (the storage defaults) when absent, and refused
// when not a positive duration.
func TestStorageTimeouts(t *testing.T) {
	s3 := strings.Replace(base, "  backend: filesystem\n  path: /backups\n", "  backend: s3\n  bucket: kafka-backups\n", 1)
	tests := []struct {
		name        string
		yaml        string
		wantRequest time.Duration
		wantRetry   time.Duration
		wantErr     string
	}{
		{"absent means the defaults", s3, 0, 0, ""},
		{"set", s3 + "  request_timeout: 10s\n  retry_timeout: 5m\n", 10 * time.Second, 5 * time.Minute, ""},
		{"not a duration", s3 + "  retry_timeout: 5\n", 0, 0, `storage.retry_timeout must be a duration (e.g. "30s", "2m") greater than zero, not "5"`},
		{"negative", s3 + "  request_timeout: -1s\n", 0, 0, "storage.request_timeout must be a duration"},
		{"zero", s3 + "  request_timeout: 0s\n", 0, 0, "greater than zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Storage.RequestTimeout != tt.wantRequest || c.Storage.RetryTimeout != tt.wantRetry {
				t.Errorf("request_timeout %s, retry_timeout %s; want %s, %s", c.Storage.RequestTimeout, c.Storage.RetryTimeout, tt.wantRequest, tt.wantRetry)
			}
		})
	}
	c, err := Parse([]byte(base+"  retry_timeout: 1m\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "storage.retry_timeout does not apply to the filesystem backend") {
		t.Errorf("warnings %q do not say that the filesystem backend ignores retry_timeout", w)
	}
}

// TestStorageUploadBufferBytes: storage.upload_buffer_bytes (s3) is a
// byte size, zero (the storage default, 48 MiB) when absent, refused
// below one S3 part (8 MiB) naming the key, and ignored with a warning by
// the filesystem backend.
func TestStorageUploadBufferBytes(t *testing.T) {
	s3 := strings.Replace(base, "  backend: filesystem\n  path: /backups\n", "  backend: s3\n  bucket: kafka-backups\n", 1)
	tests := []struct {
		name    string
		yaml    string
		want    ByteSize
		wantErr string
	}{
		{"absent means the default", s3, 0, ""},
		{"a size with a unit", s3 + "  upload_buffer_bytes: 96MiB\n", 96 << 20, ""},
		{"exactly one part", s3 + "  upload_buffer_bytes: 8388608\n", 8 << 20, ""},
		{"below one part", s3 + "  upload_buffer_bytes: 4MiB\n", 0, "storage.upload_buffer_bytes must hold at least one S3 part of 8MiB, not 4194304 bytes"},
		{"zero", s3 + "  upload_buffer_bytes: 0\n", 0, "storage.upload_buffer_bytes must hold at least one S3 part"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Storage.UploadBufferBytes != tt.want {
				t.Errorf("upload_buffer_bytes %d, want %d", c.Storage.UploadBufferBytes, tt.want)
			}
		})
	}
	c, err := Parse([]byte(base+"  upload_buffer_bytes: 64MiB\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "storage.upload_buffer_bytes does not apply to the filesystem backend") {
		t.Errorf("warnings %q do not say that the filesystem backend ignores upload_buffer_bytes", w)
	}
}

// TestCutBounds: backup.cut_attempts and backup.cut_timeout bound the
// proof of the backup's cut (docs/DESIGN.md invariant 1); absent they take
// their defaults, and a value that bounds nothing is refused naming the key.
func TestCutBounds(t *testing.T) {
	tests := []struct {
		name         string
		yaml         string
		wantAttempts int
		wantTimeout  time.Duration
		wantErr      string
	}{
		{"absent means the defaults", base, DefaultCutAttempts, DefaultCutTimeout, ""},
		{"set", base + "backup:\n  cut_attempts: 3\n  cut_timeout: 5s\n", 3, 5 * time.Second, ""},
		{"zero attempts", base + "backup:\n  cut_attempts: 0\n", 0, 0, "backup.cut_attempts must be at least 1, not 0"},
		{"zero timeout", base + "backup:\n  cut_timeout: 0s\n", 0, 0, "backup.cut_timeout must be a duration"},
		{"timeout not a duration", base + "backup:\n  cut_timeout: 30\n", 0, 0, "backup.cut_timeout must be a duration"},
		// New-user faults: an empty value is not "0", an integer too large
		// for 64 bits is not "not an integer", and a timeout shorter than
		// one attempt's settle bounds nothing.
		{"empty attempts", base + "backup:\n  cut_attempts:\n", 0, 0, "backup.cut_attempts has no value"},
		{"empty timeout", base + "backup:\n  cut_timeout:\n", 0, 0, "backup.cut_timeout has no value"},
		{"attempts too large", base + "backup:\n  cut_attempts: 99999999999999999999\n", 0, 0, "backup.cut_attempts 99999999999999999999 is too large (at most 9223372036854775807)"},
		{"timeout below the minimum", base + "backup:\n  cut_timeout: 1ns\n", 0, 0, "backup.cut_timeout must be at least 100ms, not 1ns"},
		{"timeout at the minimum", base + "backup:\n  cut_timeout: 100ms\n", DefaultCutAttempts, 100 * time.Millisecond, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Backup.CutAttempts != tt.wantAttempts || c.Backup.CutTimeout != tt.wantTimeout {
				t.Errorf("cut_attempts %d, cut_timeout %s; want %d, %s", c.Backup.CutAttempts, c.Backup.CutTimeout, tt.wantAttempts, tt.wantTimeout)
			}
		})
	}
}

// TestCompressionLevel: backup.compression_level takes the zstd level names
// (format.CompressionLevels), absent it is "" (the backup's default
// level), and anything else is
// refused naming the key, the value and the allowed values.
func TestCompressionLevel(t *testing.T) {
	tests := []struct {
		name, yaml, want, wantErr string
	}{
		{"absent means the default level", base, "", ""},
		{"fastest", base + "backup:\n  compression_level: fastest\n", "fastest", ""},
		{"default", base + "backup:\n  compression_level: default\n", "default", ""},
		{"better", base + "backup:\n  compression_level: better\n", "better", ""},
		{"best", base + "backup:\n  compression_level: best\n", "best", ""},
		{"unknown name", base + "backup:\n  compression_level: turbo\n", "",
			`backup.compression_level "turbo" is not a zstd level: write one of fastest, default, better or best`},
		{"a zstd number", base + "backup:\n  compression_level: 3\n", "",
			`backup.compression_level "3" is not a zstd level: write one of fastest, default, better or best`},
		{"empty", base + "backup:\n  compression_level:\n", "",
			"backup.compression_level has no value: write one of fastest, default, better or best"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Backup.CompressionLevel != tt.want {
				t.Errorf("compression_level %q, want %q", c.Backup.CompressionLevel, tt.want)
			}
		})
	}
}

// A zstd level with batch segments sets only what batch segments do not
// hold (in-flight tails, old message sets): a warning says so, since a
// user expects the level to shrink the backup (found by a new user).
func TestCompressionLevelWithBatchSegmentsWarns(t *testing.T) {
	c, err := Parse([]byte(base+"backup:\n  segment_kind: batch\n  compression_level: best\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, "backup.compression_level applies to record segments only") || !strings.Contains(w, "segment_kind: batch") {
		t.Errorf("warnings %q, want one saying the level does not apply to batch segments", w)
	}
	c, err = Parse([]byte(base+"backup:\n  compression_level: best\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); strings.Contains(w, "compression_level") {
		t.Errorf("warnings %q for record segments, want none about the level", w)
	}
}
