//go:build !linux

package rank

// procLimits knows no limits off Linux: a failed start is reported by
// Launch.
func procLimits() []procLimit { return nil }
