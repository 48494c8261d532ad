package sim_test

import (
	"context"
	"fmt"

	"github.com/pario/pario/tune/sim"
)

// A 50 GB file on 20 targets at the paper's rates; the number of
// experiments is chosen so that the 99% interval is within 1% of the mean.
func ExampleRun() {
	r, err := sim.Run(context.Background(), sim.Config{
		Lambda: 0.1, Gamma: 0.125, V: 0.0625,
		FileSize: 50, Stripes: 20, Time: 100, Seed: 1,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("E(T) = %.1f +- %.1f s over %d experiments; model %.1f s; within the interval: %v\n",
		r.Mean, r.CIHalfWidth99, r.N, r.Model, r.Contains(r.Model))
	// Output: E(T) = 175.9 +- 1.7 s over 6114 experiments; model 175.0 s; within the interval: true
}

// Four files of 25 GB, each on 5 of 40 targets picked at random.
func ExampleRunGroups() {
	cfg := sim.Config{Lambda: 0.1, Gamma: 0.125, V: 0.0625, FileSize: 100, Stripes: 5, Time: 100, Seed: 1}
	r, err := sim.RunGroups(context.Background(), cfg, 4, 40)
	if err != nil {
		panic(err)
	}
	fmt.Printf("E(T) = %.1f +- %.1f s\n", r.Mean, r.CIHalfWidth99)
	// Output: E(T) = 251.5 +- 2.1 s
}
