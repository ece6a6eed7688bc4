package restorer_test

import (
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// TestStateDigestErrorCount: the error counts the partitions that differ
// in words that agree with the count (it said "in 1 changelog partitions").
func TestStateDigestErrorCount(t *testing.T) {
	tests := []struct {
		different []string
		want      string
	}{
		{[]string{"a/0"}, "differs from the backup's in 1 changelog partition: a/0"},
		{[]string{"a/0", "a/2"}, "differs from the backup's in 2 changelog partitions: a/0; a/2"},
	}
	for _, tt := range tests {
		err := &restorer.StateDigestError{BackupID: "b", Different: tt.different}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q, want it to contain %q", err.Error(), tt.want)
		}
	}
}
