package mfg

import (
	"fmt"
	"testing"
)

// A process's view of a Complete-1 generation costs the same whatever the
// number of runs: it looks at its own runs only.
func BenchmarkViewComplete1(b *testing.B) {
	for _, runs := range []int{8, 64, 512, 4096} {
		b.Run(fmt.Sprint("runs=", runs), func(b *testing.B) {
			c := Config{Runs: runs, Chains: 4, Procs: runs}
			m, err := New(taxa16(runs, 1000))
			if err != nil {
				b.Fatal(err)
			}
			holders := []Assignment{c.Initial()}
			lo, hi := c.RunsOf(3)
			for b.Loop() {
				if _, err := m.ViewRuns(3, lo, hi, 10, holders); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
