package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlaintextSecretInAFileOthersCanRead: a config file that group or
// others can read (mode 0644, 0640) and that holds a SASL password
// literal, not a ${VAR} reference, draws a warning naming the file, the
// key and chmod 600; a 0600 file, a ${VAR} reference and a password_file
// do not. Load and LoadAndCheckFiles (config validate) warn alike.
func TestPlaintextSecretInAFileOthersCanRead(t *testing.T) {
	t.Setenv("KDR_TEST_PERM_PASSWORD", "from-the-env")
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(sourcePassword, targetPassword string) string {
		return `application_id: order-processor
source:
  bootstrap_servers: [kafka:9093]
  security:
    sasl:
      mechanism: SCRAM-SHA-512
      username: backup
      ` + sourcePassword + `
  topics:
    include: [orders]
target:
  bootstrap_servers: [dr-kafka:9093]
  security:
    sasl:
      mechanism: SCRAM-SHA-512
      username: restore
      ` + targetPassword + `
storage:
  backend: filesystem
  path: /tmp/backups
`
	}
	literal := "password: kdr-Literal-Pa55"
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		source   string
		target   string
		wantKeys []string // keys named in a permission warning; none: no warning
	}{
		{"0644 with a literal password warns", 0o644, literal, "password: ${KDR_TEST_PERM_PASSWORD}", []string{"source.security.sasl.password"}},
		{"0640 with literal passwords warns about both", 0o640, literal, literal, []string{"source.security.sasl.password", "target.security.sasl.password"}},
		{"0600 with a literal password does not warn", 0o600, literal, literal, nil},
		{"0644 with a ${VAR} reference does not warn", 0o644, "password: ${KDR_TEST_PERM_PASSWORD}", "password: ${KDR_TEST_PERM_PASSWORD}", nil},
		{"0644 with a password_file does not warn", 0o644, "password_file: " + pwFile, "password_file: " + pwFile, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.yaml")
			if err := os.WriteFile(path, []byte(config(tc.source, tc.target)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			for name, load := range map[string]func(string) (*Config, error){"Load": Load, "LoadAndCheckFiles": LoadAndCheckFiles} {
				c, err := load(path)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var perm []string
				for _, w := range c.Warnings() {
					if strings.Contains(w, "chmod") {
						perm = append(perm, w)
					}
				}
				if len(tc.wantKeys) == 0 {
					if len(perm) > 0 {
						t.Errorf("%s: unexpected permission warning: %q", name, perm)
					}
					continue
				}
				if len(perm) != 1 {
					t.Fatalf("%s: %d permission warnings, want 1; all warnings: %q", name, len(perm), c.Warnings())
				}
				w := perm[0]
				for _, want := range append([]string{path, "chmod 600 " + path, "mode " + modeString(tc.mode), "${ENV_VAR}"}, tc.wantKeys...) {
					if !strings.Contains(w, want) {
						t.Errorf("%s: the warning lacks %q: %s", name, want, w)
					}
				}
				if strings.Contains(w, "kdr-Literal-Pa55") {
					t.Errorf("%s: the warning holds the password: %s", name, w)
				}
			}
		})
	}
}

func modeString(m os.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }
