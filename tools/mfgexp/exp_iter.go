package main

// iterSweep is section 7.8 (figures 7.14-7.18): speedup against the
// number of iterations, pi_1 8/3/8 with varstrip, for generations of
// rising delta_ioz. The thesis: the speedup rises, falls or stays flat
// with iterations depending on delta_ioz.
func iterSweep() sweep {
	s := sweep{name: "iter", title: "MFG speedup against iterations, pi_1 8/3/8 varstrip (7.8)",
		xLabel: "iterations (generations)", logX: true, y: "speedup"}
	cases := []struct {
		name string
		taxa int
	}{
		{"16 taxa (delta_ioz 0.006)", 16},
		{"1024 taxa (delta_ioz 0.37)", 1024},
		{"5460 taxa (delta_ioz 2)", 5460},
	}
	for _, c := range cases {
		for _, gens := range []int64{1, 2, 4, 8, 16} {
			s.points = append(s.points, point{
				series: c.name,
				x:      float64(gens),
				serial: mcmcArgs(8, 3, 8, c.taxa, gens, 8, "--chain-work", npChainWork),
				mfg:    mcmcArgs(8, 3, 8, c.taxa, gens, 8, "--chain-work", npChainWork, "--layout", "varstrip"),
			})
		}
	}
	return s
}
