package main

import "strconv"

// cmp128Sweep is section 7.9 (figure 7.19): 128 runs, 4 iterations, 8
// processes (pi_1, 16 runs each), varstrip with lambda 1, 2, 4 and
// simple_stripe with su 1024, 65536 (the default) and 1. The thesis:
// lambda 1 > lambda 2 > lambda 4 > su 1024 > su 65536 > su 1 (7.05 down
// to 6.6). x is the setting's place in that order.
func cmp128Sweep() sweep {
	s := sweep{name: "cmp128", title: "128 runs, 4 iterations, 8 processes: settings in the thesis' order (7.9)",
		xLabel: "1-3: varstrip lambda 1, 2, 4; 4-6: simple_stripe su 1024, 65536, 1", y: "speedup"}
	const runs, chains, np, taxa, gens = 128, 4, 8, 512, 4
	serial := mcmcArgs(runs, chains, np, taxa, gens, 8, "--chain-work", npChainWork)
	for i, l := range []int{1, 2, 4} {
		s.points = append(s.points, point{series: "varstrip lambda", x: float64(i + 1), serial: serial,
			mfg: mcmcArgs(runs, chains, np, taxa, gens, 8, "--chain-work", npChainWork, "--layout", "varstrip", "--lambda", strconv.Itoa(l))})
	}
	for i, su := range []int{1024, 65536, 1} {
		s.points = append(s.points, point{series: "simple_stripe su", x: float64(i + 4), serial: serial,
			mfg: mcmcArgs(runs, chains, np, taxa, gens, 8, "--chain-work", npChainWork, "--layout", "simple_stripe:strip_size="+strconv.Itoa(su))})
	}
	return s
}
