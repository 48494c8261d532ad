//go:build !race

package sim

// raceEnabled: the race detector slows the simulator 5-10x, so the heavy
// statistical tests run the same checks on fewer points (never skipped).
const raceEnabled = false
