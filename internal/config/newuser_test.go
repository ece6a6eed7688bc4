package config

import (
	"strings"
	"testing"
)

// TestStoragePathRefusesTilde is a new user's fault: storage.path "~/kdr"
// resolved to "<config dir>/~/kdr", a directory literally named "~", and
// config validate said OK. YAML (and Kafka's own config files) do not
// expand "~": a leading "~" is refused with the fix, whatever follows it.
func TestStoragePathRefusesTilde(t *testing.T) {
	for _, path := range []string{`"~/kdr"`, `"~"`, "~backup/kdr"} {
		t.Run(path, func(t *testing.T) {
			y := strings.Replace(base, "path: /backups", "path: "+path, 1)
			c, err := Parse([]byte(y), "test.yaml")
			if err == nil {
				t.Fatalf("storage.path %q accepted (repository %s), want a refusal", path, c.Storage.FilesystemDir())
			}
			for _, w := range []string{"storage.path", "~", "absolute path", "${HOME}/"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A "~" that does not lead is a directory name like any other.
	y := strings.Replace(base, "path: /backups", "path: /srv/~kdr", 1)
	if _, err := Parse([]byte(y), "test.yaml"); err != nil {
		t.Errorf("storage.path /srv/~kdr: %v", err)
	}
}

// TestTargetTopicsRefused is a new user's fault: target.topics was accepted
// silently (and the unknown-key error listed topics among target's keys),
// though the target takes no topic filters: a restore restores the
// backed-up topics, or those its --topics flag selects.
func TestTargetTopicsRefused(t *testing.T) {
	y := base + "target:\n  bootstrap_servers: [dr:9092]\n  topics:\n    include: [x]\n"
	_, err := Parse([]byte(y), "test.yaml")
	if err == nil {
		t.Fatal("target.topics accepted, want a refusal")
	}
	for _, w := range []string{"target.topics", "line 11", "--topics"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}

	// The unknown-key error lists target's keys without topics.
	y = base + "target:\n  bootstrap_servers: [dr:9092]\n  zzz: 1\n"
	_, err = Parse([]byte(y), "test.yaml")
	if err == nil || !strings.Contains(err.Error(), "unknown key target.zzz") {
		t.Fatalf("unknown target key: %v", err)
	}
	if strings.Contains(err.Error(), "topics") {
		t.Errorf("the known keys of target list topics: %v", err)
	}
	if !strings.Contains(err.Error(), "bootstrap_servers") {
		t.Errorf("the known keys of target are not listed: %v", err)
	}
}
