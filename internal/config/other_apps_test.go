package config

import (
	"strings"
	"testing"
)

// TestOtherApplicationIDsAndInternalPrefixes: other_application_ids names
// the Streams applications whose internal topics share this
// application.id's prefix (KAFKA-14922), so they are excluded even when
// the other application has no consumer group on the cluster (issue 9);
// internal_topic_prefixes replaces the application.id as the internal
// topic prefix (named topologies). Each value is a valid application.id.
func TestOtherApplicationIDsAndInternalPrefixes(t *testing.T) {
	c, err := Parse([]byte(base+"other_application_ids: [app-v1, app-v2]\ninternal_topic_prefixes: [app, app-count-topology]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "other_application_ids", c.OtherApplicationIDs, []string{"app-v1", "app-v2"})
	eq(t, "internal_topic_prefixes", c.InternalTopicPrefixes, []string{"app", "app-count-topology"})
	eq(t, "warnings", c.Warnings(), []string(nil))

	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"other id is this application.id", base + "other_application_ids: [app]\n",
			[]string{"other_application_ids[0] \"app\" is this config's application_id", "line 9"}},
		{"other id with a bad character", base + "other_application_ids: [\"app v1\"]\n",
			[]string{"other_application_ids[0] \"app v1\" contains ' '", "line 9"}},
		{"empty prefix", base + "internal_topic_prefixes: [\"\"]\n", []string{"internal_topic_prefixes[0] is empty", "line 9"}},
		{"prefix with a trailing dash", base + "internal_topic_prefixes: [app-]\n",
			[]string{`internal_topic_prefixes[0] "app-" ends with "-"`, "without the trailing"}},
		{"other id also an own prefix", base + "other_application_ids: [app-x]\ninternal_topic_prefixes: [app, app-x]\n",
			[]string{`other_application_ids[0] "app-x" is also in internal_topic_prefixes`}},
		{"other ids without application_id", strings.Replace(base, "application_id: app\n", "", 1) + "other_application_ids: [app-v1]\n",
			[]string{"other_application_ids needs application_id"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.yaml)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
