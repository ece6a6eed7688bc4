package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeStoragePathFollowsTheConfigFile: a relative storage.path is
// resolved against the config file's directory, not the working directory
// (issue 9: a CronJob and a restore started elsewhere saw different
// repositories). An absolute path is kept as written.
func TestRelativeStoragePathFollowsTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "etc", "kdr")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // the config is named relative to here, then read from elsewhere
	tests := []struct {
		path, prefix string
		want         string // FilesystemDir
	}{
		{"backups", "", filepath.Join(confDir, "backups")},
		{"./backups", "order-processor", filepath.Join(confDir, "backups", "order-processor")},
		{"../repo", "", filepath.Join(dir, "etc", "repo")},
		{filepath.Join(dir, "abs"), "", filepath.Join(dir, "abs")},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			y := strings.Replace(base, "path: /backups", "path: "+tt.path, 1)
			if tt.prefix != "" {
				y += "  prefix: " + tt.prefix + "\n"
			}
			file := filepath.Join("etc", "kdr", "app.yaml")
			if err := os.WriteFile(file, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, cwd := range []string{dir, t.TempDir()} {
				t.Chdir(cwd)
				name := file
				if cwd != dir {
					name = filepath.Join(dir, file)
				}
				c, err := Load(name)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.Storage.FilesystemDir(); got != tt.want {
					t.Errorf("from %s, -c %s: repository %s, want %s", cwd, name, got, tt.want)
				}
			}
		})
	}
}

// TestStoragePrefixRefusesDotDot: a ".." segment in storage.prefix would
// leave the repository's directory (filesystem) or name another
// application's keys (S3); it is refused on both backends.
func TestStoragePrefixRefusesDotDot(t *testing.T) {
	s3 := strings.Replace(base, "backend: filesystem\n  path: /backups", "backend: s3\n  bucket: kafka-backups", 1)
	for _, tt := range []struct{ backend, yaml, prefix string }{
		{"filesystem", base, ".."},
		{"filesystem", base, "../other-app"},
		{"filesystem", base, "apps/../../etc"},
		{"s3", s3, "streams/../other-app"},
		{"s3", s3, "/streams/..//"},
	} {
		t.Run(tt.backend+" "+tt.prefix, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml+"  prefix: \""+tt.prefix+"\"\n"), "t.yaml")
			if err == nil {
				t.Fatalf("prefix %q accepted", tt.prefix)
			}
			for _, w := range []string{"storage.prefix", `".."`, "line 9"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	for _, ok := range []string{"a..b/c", "streams/order-processor", "..hidden"} {
		if _, err := Parse([]byte(base+"  prefix: \""+ok+"\"\n"), "t.yaml"); err != nil {
			t.Errorf("prefix %q refused: %v", ok, err)
		}
	}
}

// TestEmptyEnvWarns: ${VAR} set to the empty string expands (a variable
// may be empty on purpose) but warns, naming the variable, the key and
// the line; when the empty value makes the key invalid, the error says so.
// In a location (storage.path, storage.prefix, storage.bucket, a file) it
// is always an error: see TestEmptyVariableInALocationIsAnError.
func TestEmptyEnvWarns(t *testing.T) {
	t.Setenv("KSDR_EMPTY", "")
	t.Setenv("KSDR_SET", "x")
	c, err := Parse([]byte(base+"  prefix: ${KSDR_SET}\nbackup:\n  source_cluster_id: \"dc-${KSDR_EMPTY}\"\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, "backup.source_cluster_id: environment variable KSDR_EMPTY is set but empty (line 11)") {
		t.Errorf("warnings %q do not name the empty variable", w)
	}
	if strings.Contains(w, "KSDR_SET") {
		t.Errorf("warnings %q name a variable that is not empty", w)
	}
	s3 := strings.Replace(base, "backend: filesystem\n  path: /backups", "backend: s3\n  bucket: ${KSDR_EMPTY}", 1)
	_, err = Parse([]byte(s3), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), "storage.bucket") || !strings.Contains(err.Error(), "KSDR_EMPTY is set but empty") {
		t.Errorf("bucket from an empty variable: err = %v, want it to name storage.bucket and KSDR_EMPTY", err)
	}
}

// TestRelativeSecurityFilesFollowTheConfigFile: the TLS files and the SASL
// password file, like storage.path, are relative to the config file's
// directory (a Kubernetes pod mounts the Secret beside its ConfigMap; a
// restore run from another directory must read the same files). Before,
// they followed the working directory: `config validate -c etc/app.yaml`
// passed from one directory and failed ("no such file") from another.
func TestRelativeSecurityFilesFollowTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "etc", "kdr")
	if err := os.MkdirAll(filepath.Join(confDir, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "secrets", "password"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "abs-password")
	if err := os.WriteFile(abs, []byte("other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	security := func(pw string) string {
		return strings.Replace(base, "  topics:", "  security:\n    tls: {ca_file: secrets/ca.pem, cert_file: ./secrets/client.pem, key_file: secrets/client.key}\n    sasl: {mechanism: SCRAM-SHA-512, username: u, password_file: "+pw+"}\n  topics:", 1) +
			"target:\n  bootstrap_servers: [dr:9092]\n  security:\n    sasl: {mechanism: PLAIN, username: u, password_file: " + pw + "}\n    tls: {enabled: true}\n"
	}
	tests := []struct {
		name, pw, wantPW string
	}{
		{"relative", "secrets/password", filepath.Join(confDir, "secrets", "password")},
		{"absolute kept", abs, abs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(confDir, "app.yaml")
			if err := os.WriteFile(file, []byte(security(tt.pw)), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir()) // anywhere but the config's directory
			c, err := Parse([]byte(security(tt.pw)), file)
			if err != nil {
				t.Fatal(err)
			}
			tls := c.Source.Security.TLS
			if want := filepath.Join(confDir, "secrets", "ca.pem"); tls.CAFile != want {
				t.Errorf("source ca_file %s, want %s", tls.CAFile, want)
			}
			if want := filepath.Join(confDir, "secrets", "client.pem"); tls.CertFile != want {
				t.Errorf("source cert_file %s, want %s", tls.CertFile, want)
			}
			if want := filepath.Join(confDir, "secrets", "client.key"); tls.KeyFile != want {
				t.Errorf("source key_file %s, want %s", tls.KeyFile, want)
			}
			for _, cl := range []*Cluster{&c.Source, c.Target} {
				if got := cl.Security.SASL.PasswordFile; got != tt.wantPW {
					t.Errorf("password_file %s, want %s", got, tt.wantPW)
				}
			}
		})
	}
}
