package fusefs

import "time"

// makeRoom keeps one of the mount's caches (directory states, attributes
// and sizes answered again) within max entries before an insert: past it,
// the entries older than maxAge go, then, if that was not enough, all.
// Forgetting only ever costs a cache a round trip to the servers.
func makeRoom[K comparable, V any](m map[K]V, max int, maxAge time.Duration, at func(V) time.Time) {
	if len(m) < max {
		return
	}
	now := time.Now()
	for k, v := range m {
		if now.Sub(at(v)) > maxAge {
			delete(m, k)
		}
	}
	if len(m) >= max {
		clear(m)
	}
}
