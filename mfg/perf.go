package mfg

import (
	"math"
	"slices"
)

// The thesis' performance metrics (definition 2.1, eqs. 3.3, 7.1-7.3,
// section 7.6.2). Times are in any one unit; every function refuses
// negative, zero (where it divides) and non-finite inputs with
// ErrInvalid rather than return Inf or NaN.

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Speedup is eq. 7.1: the serial I/O version's execution time over the
// parallel I/O version's.
func Speedup(serial, parallel float64) (float64, error) {
	if !finite(serial, parallel) || serial < 0 || parallel <= 0 {
		return 0, invalid("speedup: serial time %v and parallel time %v: want >= 0 and > 0", serial, parallel)
	}
	return serial / parallel, nil
}

// Efficiency is eq. 7.2, efficiency_CPU: the speedup over the number of
// CPUs used.
func Efficiency(speedup float64, cpus int) (float64, error) {
	if !finite(speedup) || speedup < 0 || cpus < 1 {
		return 0, invalid("efficiency: speedup %v on %d CPUs: want >= 0 and >= 1", speedup, cpus)
	}
	return speedup / float64(cpus), nil
}

// DeltaPerf is eq. 7.3, the time difference percentage of time t against
// the reference ref: positive when t is faster.
func DeltaPerf(ref, t float64) (float64, error) {
	if !finite(ref, t) || ref <= 0 || t < 0 {
		return 0, invalid("delta_perf: reference time %v and time %v: want > 0 and >= 0", ref, t)
	}
	return (ref - t) / ref * 100, nil
}

// IOShare is definition 2.1's X: the percent of the execution time spent
// in I/O (an application is X percent file I/O intensive).
func IOShare(io, exec float64) (float64, error) {
	if !finite(io, exec) || io < 0 || exec <= 0 || io > exec {
		return 0, invalid("I/O share: I/O time %v of execution time %v: want 0 <= I/O <= execution, execution > 0", io, exec)
	}
	return io / exec * 100, nil
}

// DegreeIOX is eq. 3.3, delta_iox, the physical degree of I/O
// parallelism: the percent of the I/O servers one I/O operation reaches.
func DegreeIOX(accessed, servers int) (float64, error) {
	if servers < 1 || accessed < 0 || accessed > servers {
		return 0, invalid("delta_iox: %d of %d servers accessed: want 0 <= accessed <= servers, servers >= 1", accessed, servers)
	}
	return float64(accessed) / float64(servers) * 100, nil
}

// StripeIOX is delta_iox of one generation's dataGen bytes written from a
// strip boundary with simple_stripe strips of su bytes on servers servers:
// the data reaches ceil(dataGen/su) of them, at most all. A strip larger
// than the data per server (su > su_max) lowers it below 100% (7.7.1).
func StripeIOX(dataGen, su int64, servers int) (float64, error) {
	if dataGen < 0 || su < 1 || servers < 1 {
		return 0, invalid("delta_iox: %d B in strips of %d B on %d servers: want >= 0, >= 1, >= 1", dataGen, su, servers)
	}
	strips := dataGen / su
	if dataGen%su != 0 {
		strips++
	}
	return DegreeIOX(int(min(strips, int64(servers))), servers)
}

// ScalePoint is one measurement of a speedup curve over the number of
// processes (figures 7.6-7.8).
type ScalePoint struct {
	Procs   int
	Speedup float64
}

// SaturationNumber is section 7.6.2's process saturation number: the
// process count of the highest speedup (the smallest such count on a tie),
// and that speedup. The thesis found it at one process per CPU.
func SaturationNumber(curve []ScalePoint) (ScalePoint, error) {
	if err := checkCurve(curve); err != nil {
		return ScalePoint{}, err
	}
	best := curve[0]
	for _, p := range curve[1:] {
		if p.Speedup > best.Speedup || p.Speedup == best.Speedup && p.Procs < best.Procs {
			best = p
		}
	}
	return best, nil
}

// SmallestOverhead is section 7.6.2.2's smallest-process-overhead speedup
// for a target speedup: the semi-parabolic curve reaches most speedups
// twice, on each side of the saturation number, and the user should take
// the smaller process count, whose run is the shorter. It returns the
// measured point with the fewest processes whose speedup is at least
// target; ok is false if none is.
func SmallestOverhead(curve []ScalePoint, target float64) (p ScalePoint, ok bool, err error) {
	if err := checkCurve(curve); err != nil {
		return ScalePoint{}, false, err
	}
	sorted := slices.Clone(curve)
	slices.SortFunc(sorted, func(a, b ScalePoint) int { return a.Procs - b.Procs })
	for _, q := range sorted {
		if q.Speedup >= target {
			return q, true, nil
		}
	}
	return ScalePoint{}, false, nil
}

func checkCurve(curve []ScalePoint) error {
	if len(curve) == 0 {
		return invalid("speedup curve: no points")
	}
	for _, p := range curve {
		if p.Procs < 1 || !finite(p.Speedup) || p.Speedup < 0 {
			return invalid("speedup curve: point %d processes, speedup %v: want >= 1 and a finite speedup >= 0", p.Procs, p.Speedup)
		}
	}
	return nil
}
