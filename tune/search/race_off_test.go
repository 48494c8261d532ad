//go:build !race

package search

// raceEnabled makes the heaviest tests do less work under the race
// detector, which slows them 5-10x: the same checks run on fewer seeds.
const raceEnabled = false
