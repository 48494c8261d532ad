package model_test

import (
	"fmt"

	"github.com/pario/pario/tune/model"
)

// The paper's Table III parameters: mean inter-arrival 10 s, mean service
// 8 s, 0.5 Gbit/s per target, a 50 GB file.
func ExampleOptimalN() {
	p := model.Params{Lambda: 0.1, Gamma: 0.125, V: 0.0625}
	n, T, err := model.OptimalN(p, 50, 1000)
	if err != nil {
		panic(err)
	}
	fmt.Printf("exact: n = %d, E(T) = %.4f s\n", n, T)
	n, T, _ = model.PaperOptimalN(p, 50, 1000)
	fmt.Printf("paper: n = %d, E(T) = %.4f s\n", n, T)
	// Output:
	// exact: n = 20, E(T) = 174.9838 s
	// paper: n = 20, E(T) = 181.9326 s
}

func ExampleMeanWait() {
	p := model.Params{Lambda: 0.1, Gamma: 0.125}
	for _, t := range []float64{10, 1000, 20000} {
		w, _ := model.MeanWait(p, t)
		p0, _ := model.P0(p, t)
		fmt.Printf("t = %5g s: E(W) = %.4f s, p0 = %.4f\n", t, w, p0)
	}
	_, err := model.MeanWait(model.Params{Lambda: 0.15, Gamma: 0.125}, 10)
	fmt.Println(err)
	// Output:
	// t =    10 s: E(W) = 5.1630 s, p0 = 0.5550
	// t =  1000 s: E(W) = 30.9515 s, p0 = 0.2024
	// t = 20000 s: E(W) = 32.0000 s, p0 = 0.2000
	// model: rho = lambda/gamma = 1.2 >= 1: the queue is unstable
}
