package main

import "strconv"

// lambdaSweep is section 7.7.2 (figures 7.11-7.13): line buffering,
// lambda generations written at once, pi_1 8/3/8 with varstrip, for tiny
// lines (16 taxa, 401 B per run and generation) and for generations of
// delta_ioz 1 and 8 (64 KiB strips per server: 2730 and 21850 taxa). The
// thesis: lambda 6 and 20 save 42% and 50% on tiny lines; from delta_ioz 8
// lambda > 1 costs time. The figure is Delta_perf against lambda 1.
func lambdaSweep() sweep {
	s := sweep{name: "lambda", title: "Line buffering: Delta_perf against lambda 1, pi_1 8/3/8 varstrip (7.7.2)",
		xLabel: "lambda (generations written at once)", logX: true, y: "delta_perf"}
	cases := []struct {
		name    string
		taxa    int
		gens    int64
		lambdas []int
	}{
		{"tiny lines (16 taxa, 160 gens)", 16, 160, []int{1, 2, 6, 10, 20}},
		{"delta_ioz 1 (2730 taxa, 16 gens)", 2730, 16, []int{1, 2, 4, 8}},
		{"delta_ioz 8 (21850 taxa, 8 gens)", 21850, 8, []int{1, 2, 4, 8}},
	}
	for _, c := range cases {
		for _, l := range c.lambdas {
			s.points = append(s.points, point{
				series: c.name,
				x:      float64(l),
				serial: mcmcArgs(8, 3, 8, c.taxa, c.gens, 8),
				mfg:    mcmcArgs(8, 3, 8, c.taxa, c.gens, 8, "--layout", "varstrip", "--lambda", strconv.Itoa(l)),
			})
		}
	}
	return s
}
