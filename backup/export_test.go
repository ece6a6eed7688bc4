package backup

import "time"

// SetCutHook makes the backup call f at each step of taking the cut
// ("group" after the group's committed offsets were read), so that a test
// can commit a transaction between two steps; it returns the function that
// removes the hook. Tests that set it do not run in parallel.
func SetCutHook(f func(step string)) (remove func()) {
	cutHook = f
	return func() { cutHook = nil }
}

// SetProgressInterval sets the least time between two progress manifest
// writes during the copy (progressInterval) and returns the function that
// restores it. Tests that set it do not run in parallel.
func SetProgressInterval(d time.Duration) (restore func()) {
	old := progressInterval
	progressInterval = d
	return func() { progressInterval = old }
}
