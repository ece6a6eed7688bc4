package backup

// SetCutHook makes the backup call f at each step of taking the cut
// ("group" after the group's committed offsets were read), so that a test
// can commit a transaction between two steps; it returns the function that
// removes the hook. Tests that set it do not run in parallel.
func SetCutHook(f func(step string)) (remove func()) {
	cutHook = f
	return func() { cutHook = nil }
}
