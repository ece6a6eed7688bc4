package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestEmptyVariableInALocationIsAnError: a ${VAR} set but empty inside
// storage.path, storage.prefix, storage.bucket, a TLS file or the SASL
// password file is an error naming the key, the variable and the line, as
// an empty application_id is (new-user pass: storage.path "${EV}/r" with EV
// empty resolved to "/r", a directory under the root that backup and prune
// would write and delete in; config validate only warned). A variable that
// is set supplies its value as before.
func TestEmptyVariableInALocationIsAnError(t *testing.T) {
	t.Setenv("KDR_TEST_EV", "")
	t.Setenv("KDR_TEST_SET", "apps")
	s3 := strings.Replace(base, "backend: filesystem\n  path: /backups", "backend: s3\n  bucket: kafka-backups", 1)
	tests := []struct {
		name, yaml, key string
		line            int
	}{
		{"storage.path", strings.Replace(base, "path: /backups", `path: "${KDR_TEST_EV}/r"`, 1), "storage.path", 8},
		{"storage.prefix filesystem", base + "  prefix: \"apps/${KDR_TEST_EV}\"\n", "storage.prefix", 9},
		{"storage.prefix s3", s3 + "  prefix: ${KDR_TEST_EV}\n", "storage.prefix", 9},
		{"storage.bucket", strings.Replace(s3, "bucket: kafka-backups", "bucket: kafka-${KDR_TEST_EV}backups", 1), "storage.bucket", 8},
		{"password_file", strings.Replace(base, "  bootstrap_servers: [kafka:9092]\n",
			"  bootstrap_servers: [kafka:9092]\n  security:\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password_file: ${KDR_TEST_EV}/pw\n", 1),
			"source.security.sasl.password_file", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("accepted: storage %s, warnings %q", c.Storage.Describe(), c.Warnings())
			}
			for _, w := range []string{tt.key, "KDR_TEST_EV is set but empty", fmt.Sprintf("line %d", tt.line)} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	c, err := Parse([]byte(base+"  prefix: \"${KDR_TEST_SET}/x\"\n"), "t.yaml")
	if err != nil {
		t.Fatalf("a set variable in storage.prefix: %v", err)
	}
	if c.Storage.Prefix != "apps/x" {
		t.Errorf("storage.prefix %q, want apps/x", c.Storage.Prefix)
	}
}

// TestLocationMustBeAString: storage.path: 5 (a YAML integer) was taken
// as the relative path "5"; yaml.v3 hands every scalar's text to a string
// field. A path, prefix, bucket or file given as an integer, a number or
// a boolean is refused with its key and line (quote it to mean the
// string); a quoted "5" is a string.
func TestLocationMustBeAString(t *testing.T) {
	s3 := strings.Replace(base, "backend: filesystem\n  path: /backups", "backend: s3\n  bucket: kafka-backups", 1)
	tests := []struct {
		name, yaml, key, kind string
		line                  int
	}{
		{"path an integer", strings.Replace(base, "path: /backups", "path: 5", 1), "storage.path", "an integer", 8},
		{"path a number", strings.Replace(base, "path: /backups", "path: 1.5", 1), "storage.path", "a number", 8},
		{"path a boolean", strings.Replace(base, "path: /backups", "path: true", 1), "storage.path", "a boolean", 8},
		{"prefix an integer", s3 + "  prefix: 2024\n", "storage.prefix", "an integer", 9},
		{"ca_file an integer", strings.Replace(base, "  bootstrap_servers: [kafka:9092]\n",
			"  bootstrap_servers: [kafka:9092]\n  security:\n    tls:\n      ca_file: 7\n", 1), "source.security.tls.ca_file", "an integer", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("accepted: storage %s", c.Storage.Describe())
			}
			for _, w := range []string{tt.key + " must be a string", tt.kind, fmt.Sprintf("line %d", tt.line)} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	dir := t.TempDir()
	c, err := Parse([]byte(strings.Replace(base, "path: /backups", `path: "`+dir+`/5"`, 1)), "t.yaml")
	if err != nil {
		t.Fatalf("a quoted path: %v", err)
	}
	if c.Storage.Path != dir+"/5" {
		t.Errorf("storage.path %q, want %s/5", c.Storage.Path, dir)
	}
}
