package main

// iterSweep is section 7.8 (figure 7.18): speedup against the number of
// iterations, pi_1 on 8 processes with varstrip and lambda 1, for 8 and 64
// runs and generations of several delta_ioz. The thesis: with 8 runs the
// speedup rises towards a maximum, with 64 runs and delta_ioz 0.5 it falls
// towards a minimum, with 64 runs and delta_ioz 8 and 16 it stays flat.
func iterSweep() sweep {
	s := sweep{name: "iter", title: "MFG speedup against iterations, pi_1 8/3/8 varstrip (7.8)",
		xLabel: "iterations (generations)", logX: true, y: "speedup"}
	cases := []struct {
		name       string
		runs, taxa int
	}{
		{"8 runs, 2730 taxa (delta_ioz 1)", 8, 2730},
		{"8 runs, 10920 taxa (delta_ioz 4)", 8, 10920},
		{"64 runs, 170 taxa (delta_ioz 0.5)", 64, 170},
		{"64 runs, 1024 taxa (delta_ioz 3)", 64, 1024},
	}
	for _, c := range cases {
		for _, gens := range []int64{1, 2, 4, 8, 16} {
			s.points = append(s.points, point{
				series: c.name,
				x:      float64(gens),
				serial: mcmcArgs(c.runs, 3, 8, c.taxa, gens, 8, "--chain-work", npChainWork),
				mfg:    mcmcArgs(c.runs, 3, 8, c.taxa, gens, 8, "--chain-work", npChainWork, "--layout", "varstrip"),
			})
		}
	}
	return s
}
