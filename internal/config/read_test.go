package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs load and fails the test if it has not returned after a
// generous bound: reading a FIFO no writer opens blocks forever.
func loadWithin(t *testing.T, load func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("still reading after 20s: the file was opened and read instead of refused")
		return nil
	}
}

// TestConfigFileMustBeARegularFileWithinTheLimit: the config file is read
// only when it is a regular file of at most MaxFileBytes (new-user pass:
// `config validate -c /dev/zero` grew to ~23 GB and was OOM-killed; -c a
// FIFO blocked and ignored SIGTERM). A FIFO and a directory are refused
// before they are opened, a larger file before more than the limit is
// read; the error names the file and what it is.
func TestConfigFileMustBeARegularFileWithinTheLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "app.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	// A valid config followed by a comment that takes it past the limit.
	if err := os.WriteFile(big, []byte(base+"#"+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		want       []string
	}{
		{"a FIFO", fifo, []string{fifo, "named pipe (FIFO)", "not a regular file"}},
		{"a directory", dir, []string{dir, "a directory", "not a regular file"}},
		{"over the limit", big, []string{big, "1048576-byte (1 MiB) limit"}},
	}
	for _, tt := range tests {
		for name, load := range map[string]func(string) (*Config, error){"Load": Load, "LoadAndCheckFiles": LoadAndCheckFiles} {
			t.Run(tt.name+" "+name, func(t *testing.T) {
				err := loadWithin(t, func() error { _, err := load(tt.file); return err })
				if err == nil {
					t.Fatalf("%s accepted", tt.file)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			})
		}
	}
}

// TestFilesTheConfigNamesMustBeRegularFilesWithinTheLimit: the SASL
// password file and the TLS files are read as the config file is (a FIFO
// given as password_file blocked config validate and the clients).
func TestFilesTheConfigNamesMustBeRegularFilesWithinTheLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "password")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, security string
		want           []string
	}{
		{"password_file a FIFO", "  security:\n    sasl:\n      mechanism: PLAIN\n      username: u\n      password_file: " + fifo + "\n",
			[]string{"source.security.sasl.password_file", fifo, "named pipe (FIFO)"}},
		{"ca_file over the limit", "  security:\n    tls:\n      ca_file: " + big + "\n",
			[]string{"source.security.tls.ca_file", big, "1 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(base, "  bootstrap_servers: [kafka:9092]\n", "  bootstrap_servers: [kafka:9092]\n"+tt.security, 1)
			file := filepath.Join(t.TempDir(), "app.yaml")
			if err := os.WriteFile(file, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			err := loadWithin(t, func() error { _, err := LoadAndCheckFiles(file); return err })
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			c, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := loadWithinOpts(t, c); err == nil || !strings.Contains(err.Error(), tt.want[1]) {
				t.Errorf("ClientOptions: err = %v, want it to name %s", err, tt.want[1])
			}
		})
	}
}

func loadWithinOpts(t *testing.T, c *Config) (int, error) {
	t.Helper()
	var n int
	err := loadWithin(t, func() error { opts, err := c.Source.ClientOptions(); n = len(opts); return err })
	return n, err
}
