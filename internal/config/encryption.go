package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// encryptionKeys returns the keys of storage.encryption, primary first,
// each with its config key (e.g. "storage.encryption.previous_keys[0]").
func (e *Encryption) keys() []struct {
	path string
	key  EncryptionKey
} {
	var out []struct {
		path string
		key  EncryptionKey
	}
	if e == nil {
		return out
	}
	add := func(path string, k EncryptionKey) {
		out = append(out, struct {
			path string
			key  EncryptionKey
		}{path, k})
	}
	add("storage.encryption", EncryptionKey{KeyFile: e.KeyFile, KeyEnv: e.KeyEnv})
	for i, k := range e.PreviousKeys {
		add(fmt.Sprintf("storage.encryption.previous_keys[%d]", i), k)
	}
	return out
}

// readKey reads one key of storage.encryption from its file or
// environment variable (lookup). The error names the setting (path's
// key_file or key_env) and the fix, never the key's text.
func readKey(path string, k EncryptionKey, lookup func(string) (string, bool)) ([]byte, string, error) {
	if k.KeyFile != "" {
		at := path + ".key_file"
		data, err := readFile(k.KeyFile)
		if err != nil {
			return nil, at, fmt.Errorf("%s: %w", at, err)
		}
		key, err := storage.ParseKey(data)
		if err != nil {
			return nil, at, fmt.Errorf("%s %s: %w", at, k.KeyFile, err)
		}
		return key, at, nil
	}
	at := path + ".key_env"
	text, ok := lookup(k.KeyEnv)
	if !ok {
		return nil, at, fmt.Errorf("%s: the environment variable %s is not set (set it to the key in base64, or use %s.key_file)", at, k.KeyEnv, path)
	}
	key, err := storage.ParseKey([]byte(text))
	if err != nil {
		return nil, at, fmt.Errorf("%s %s: %w", at, k.KeyEnv, err)
	}
	return key, at, nil
}

// Keyring reads storage.encryption's keys (files and environment
// variables) into a keyring, the primary first. No storage.encryption
// gives an empty keyring: objects are written in plaintext, and reading an
// encrypted one is refused naming its key id. Errors name the setting:
// an unreadable file, an unset variable, a key that is not 32 bytes of
// base64, the same key twice.
func (s Storage) Keyring() (*storage.Keyring, error) {
	return keyring(s.Encryption, os.LookupEnv)
}

func keyring(e *Encryption, lookup func(string) (string, bool)) (*storage.Keyring, error) {
	r := &storage.Keyring{}
	var errs []error
	for _, k := range e.keys() {
		key, at, err := readKey(k.path, k.key, lookup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.Add(key); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (each key once: drop the duplicate)", at, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// encryption checks storage.encryption: each key set by exactly one of
// key_file and key_env, a valid variable name; with checkFiles every key
// read and decoded, each problem at its own key and line.
func (v *validator) encryption() {
	e := v.c.Storage.Encryption
	if e == nil {
		if v.has("storage.encryption") && !v.bad["storage.encryption"] {
			v.errf("storage.encryption", "storage.encryption is empty: set storage.encryption.key_file (or key_env) to the repository key, or delete storage.encryption")
		}
		return
	}
	e.KeyFile = v.fromConfigDir(e.KeyFile)
	for i := range e.PreviousKeys {
		e.PreviousKeys[i].KeyFile = v.fromConfigDir(e.PreviousKeys[i].KeyFile)
	}
	ok := true
	for _, k := range e.keys() {
		switch {
		case k.key.KeyFile != "" && k.key.KeyEnv != "":
			v.errf(k.path+".key_env", "%s.key_file and %s.key_env are both set; use one", k.path, k.path)
			ok = false
		case k.key.KeyFile == "" && k.key.KeyEnv == "":
			v.errf(k.path, "%s.key_file or %s.key_env is required: the repository key, 32 random bytes in base64 (openssl rand -base64 32)", k.path, k.path)
			ok = false
		case k.key.KeyEnv != "" && !ValidEnvName(k.key.KeyEnv):
			v.errf(k.path+".key_env", "%s.key_env %q is not an environment variable name (letters, digits and _, not starting with a digit)", k.path, k.key.KeyEnv)
			ok = false
		}
	}
	if !ok || !v.checkFiles {
		return
	}
	seen := map[string]string{}
	for _, k := range e.keys() {
		key, at, err := readKey(k.path, k.key, v.lookup)
		if err != nil {
			v.errf(at, "%v", err)
			continue
		}
		id := storage.KeyID(key)
		if first, dup := seen[id]; dup {
			v.errf(at, "%s holds the same key as %s (key id %s): each key once, drop the duplicate", at, first, id)
			continue
		}
		seen[id] = at
	}
}
