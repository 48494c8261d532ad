//go:build !race

package testenv

// RaceEnabled reports whether the race detector is on. It slows code
// 5-10x, so the heaviest tests run the same checks on fewer points under
// it (never skipping them).
const RaceEnabled = false
