package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// storage.encryption: config validate (checkFiles) reads every key and
// names the bad one, at its key and line, with the fix; a valid keyring
// has the primary first. The key's text appears in no error.
func TestEncryptionConfig(t *testing.T) {
	dir := t.TempDir()
	k1 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", 32)))
	k2 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("2", 32)))
	short := base64.StdEncoding.EncodeToString([]byte("sixteen bytes ok"))
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("k1.key", k1+"\n")
	write("short.key", short+"\n")
	write("bad.key", "not*base64\n")
	env := map[string]string{"KDR_K2": k2, "KDR_SHORT": short}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	base := "source:\n  bootstrap_servers: [kafka:9092]\nstorage:\n  backend: filesystem\n  path: /tmp/repo\n"
	tests := []struct {
		name     string
		enc      string   // the storage.encryption section, indented under storage
		wantErr  []string // all in the error; none: valid
		wantLine string   // "(line N)" expected in the error
		wantIDs  []string // the keyring's ids, primary first
	}{
		{"key_file relative to the config", "  encryption:\n    key_file: k1.key\n", nil, "", []string{idOf(k1)}},
		{"key_env with a previous key_file", "  encryption:\n    key_env: KDR_K2\n    previous_keys:\n      - key_file: k1.key\n", nil, "", []string{idOf(k2), idOf(k1)}},
		{"neither key_file nor key_env", "  encryption:\n    previous_keys: []\n", []string{"storage.encryption.key_file or storage.encryption.key_env is required", "openssl rand -base64 32"}, "(line 6)", nil},
		{"both", "  encryption:\n    key_file: k1.key\n    key_env: KDR_K2\n", []string{"storage.encryption.key_file and storage.encryption.key_env are both set"}, "(line 8)", nil},
		{"unreadable file", "  encryption:\n    key_file: missing.key\n", []string{"storage.encryption.key_file", "missing.key"}, "(line 7)", nil},
		{"not base64", "  encryption:\n    key_file: bad.key\n", []string{"storage.encryption.key_file", "not valid base64", "openssl rand -base64 32"}, "(line 7)", nil},
		{"16 bytes", "  encryption:\n    key_file: short.key\n", []string{"storage.encryption.key_file", "decodes to 16 bytes, not 32"}, "(line 7)", nil},
		{"unset variable", "  encryption:\n    key_env: KDR_UNSET\n", []string{"storage.encryption.key_env", "KDR_UNSET is not set"}, "(line 7)", nil},
		{"short previous key from the environment", "  encryption:\n    key_file: k1.key\n    previous_keys:\n      - key_env: KDR_SHORT\n", []string{"storage.encryption.previous_keys[0].key_env KDR_SHORT", "decodes to 16 bytes"}, "(line 9)", nil},
		{"bad variable name", "  encryption:\n    key_env: 1KEY\n", []string{"storage.encryption.key_env \"1KEY\" is not an environment variable name"}, "(line 7)", nil},
		{"the same key twice", "  encryption:\n    key_file: k1.key\n    previous_keys:\n      - key_file: k1.key\n", []string{"storage.encryption.previous_keys[0].key_file holds the same key as storage.encryption.key_file (key id " + idOf(k1)}, "(line 9)", nil},
		{"empty section", "  encryption:\n", []string{"storage.encryption is empty"}, "(line 6)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse([]byte(base+tt.enc), filepath.Join(dir, "app.yaml"), lookup, true)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("parsed without an error")
				}
				msg := strings.ReplaceAll(err.Error(), dir+"/", "")
				for _, w := range append(tt.wantErr, tt.wantLine) {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
				for _, k := range []string{k1, k2, short} {
					if strings.Contains(msg, k) {
						t.Errorf("the error quotes a key: %q", msg)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := keyring(c.Storage.Encryption, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.IDs(), ","); got != strings.Join(tt.wantIDs, ",") {
				t.Errorf("keyring ids %s, want %s", got, strings.Join(tt.wantIDs, ","))
			}
		})
	}
}

func idOf(b64 string) string {
	k, err := storage.ParseKey([]byte(b64))
	if err != nil {
		panic(err)
	}
	return storage.KeyID(k)
}
