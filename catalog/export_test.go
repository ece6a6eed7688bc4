package catalog

import "testing"

// SetAfterForget makes Prune call f between its two phases (forget, then
// sweep) and stop there when f returns an error, as a crash would.
func SetAfterForget(t testing.TB, f func() error) {
	afterForget = f
	t.Cleanup(func() { afterForget = nil })
}

// ApplyPolicy is applyPolicy: the rules that keep each of times (newest
// first), none for a backup the policy forgets.
var ApplyPolicy = applyPolicy
