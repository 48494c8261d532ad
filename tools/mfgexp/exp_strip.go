package main

import "strconv"

// stripSweep is section 7.7.1 (figures 7.9, 7.10): simple_stripe strip
// sizes for a pi_1 pattern, 8 runs on 8 ranks at 2730 taxa: 65.5 KB per
// rank and generation, delta_ioz 1, su_max 65.5 KB, over 4 and 16
// generations, on 2 MB/s disks so that the disks' bursts (a tenth of a
// second) do not hide them. The thesis: su = 1 costs 2-10%, 100 B to
// su_max flat, strips larger than a node's buffer (delta_iox < 100%)
// slower, the more so with iterations.
func stripSweep() sweep {
	s := sweep{name: "strip", title: "MFG speedup against the strip size, pi_1 8/3/8, delta_ioz 1 (7.7.1)",
		xLabel: "strip size su, bytes (su_max = 65.5 KB)", logX: true, y: "speedup", diskRate: "2MB/s"}
	const runs, chains, np, taxa = 8, 3, 8, 2730
	for _, gens := range []int64{4, 16} {
		for _, su := range []int{1, 100, 1024, 16384, 65536, 131072, 524288} {
			s.points = append(s.points, point{
				series: strconv.FormatInt(gens, 10) + " iterations",
				x:      float64(su),
				serial: mcmcArgs(runs, chains, np, taxa, gens, 8),
				mfg:    mcmcArgs(runs, chains, np, taxa, gens, 8, "--layout", "simple_stripe:strip_size="+strconv.Itoa(su)),
			})
		}
	}
	return s
}
