//go:build !race

package model

// raceEnabled trims the heaviest loops when the race detector slows tests
// 5-10x; the same checks run, on fewer points.
const raceEnabled = false
