package config

import (
	"strings"
	"testing"
)

// TestEmptyApplicationIDIsAnError: an application_id key that is present
// but empty (`application_id: ${APP}` with APP set to "", `""`, or no
// value) is an error naming the key, its line and the variable; only an
// absent key backs up without an application.id, with a warning
// (new-user test: an empty ${APP} gave a backup without group offsets,
// exit 0, chained onto another application's backups).
func TestEmptyApplicationIDIsAnError(t *testing.T) {
	t.Setenv("KDR_TEST_EMPTY_APP", "")
	const rest = "source:\n  bootstrap_servers: [kafka:9092]\n  topics:\n    include: [orders]\nstorage:\n  backend: filesystem\n  path: /backups\n"
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error; none: no error
		warn string   // a substring of the warnings when there is no error
	}{
		{"from a variable set but empty", "application_id: ${KDR_TEST_EMPTY_APP}\n" + rest,
			[]string{"application_id is empty", "line 1", "environment variable KDR_TEST_EMPTY_APP is set but empty", "remove the application_id key"}, ""},
		{"an empty string", "application_id: \"\"\n" + rest, []string{"application_id is empty", "line 1"}, ""},
		{"no value", "application_id:\n" + rest, []string{"application_id is empty", "line 1"}, ""},
		{"absent: a warning only", rest, nil, "application_id is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v; want only a warning", err)
				}
				if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, tt.warn) {
					t.Fatalf("warnings %q do not contain %q", w, tt.warn)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded (application_id %q); want an error saying %q", c.ApplicationID, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
