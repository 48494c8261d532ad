package main

import "strconv"

// npChainWork is the emulated compute per chain per generation of the
// np, iter and cmp128 sweeps: with 64 runs x 4 chains at 256 taxa it makes
// the one-process serial run about half compute, half I/O, near the
// thesis' I/O shares, so that more processes than CPUs cost time.
const npChainWork = "300us"

// npSweep is section 7.6.2 (figures 7.6-7.8): speedup against processes
// for 64 runs on 8, 4 and 2 nodes of 2 CPUs, against one process writing
// serially. The thesis: semi-parabolic, the peak (the process saturation
// number) at one process per CPU, 9.6 / 6.6 / 3.6.
func npSweep() sweep {
	s := sweep{name: "np", title: "MFG speedup against processes, 64 runs, nodes of 2 CPUs (fig. 7.6-7.8)",
		xLabel: "MPI processes (np)", logX: true, y: "speedup"}
	const runs, chains, taxa, gens = 64, 4, 256, 40
	serial := mcmcArgs(runs, chains, 1, taxa, gens, 1, "--chain-work", npChainWork)
	for _, nodes := range []int{8, 4, 2} {
		for _, np := range []int{2, 4, 8, 16, 32} {
			if np < nodes {
				continue
			}
			s.points = append(s.points, point{
				series: strconv.Itoa(nodes) + " nodes",
				x:      float64(np),
				serial: serial,
				mfg:    mcmcArgs(runs, chains, np, taxa, gens, nodes, "--chain-work", npChainWork, "--node-cpus", "2", "--layout", "varstrip"),
			})
		}
	}
	return s
}
