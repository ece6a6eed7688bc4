package backup

import (
	"testing"
	"time"
)

// TestUnprovenReason: the reason an unproven cut records counts its
// attempts in words a user reads ("1 attempt", not "1 attempts": a cut
// whose backup.cut_timeout ran out after its first attempt said that).
func TestUnprovenReason(t *testing.T) {
	for _, tt := range []struct {
		attempt int
		want    string
	}{
		{1, "not proven in 1 attempt (backup.cut_attempts 100, backup.cut_timeout 100ms); the last: why"},
		{7, "not proven in 7 attempts (backup.cut_attempts 100, backup.cut_timeout 100ms); the last: why"},
	} {
		if got := unprovenReason(tt.attempt, 100, 100*time.Millisecond, "why"); got != tt.want {
			t.Errorf("unprovenReason(%d) = %q, want %q", tt.attempt, got, tt.want)
		}
	}
}
