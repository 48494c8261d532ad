package mfg

import (
	"errors"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPerfMetrics(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		f    func() (float64, error)
		want float64 // -1: ErrInvalid
	}{
		// The thesis' pi_1 varstrip best: 3.86; 64 runs on 8 nodes at
		// the saturation number, 16 CPUs: speedup 9.6, efficiency 0.6.
		{"speedup", func() (float64, error) { return Speedup(386, 100) }, 3.86},
		{"speedup zero serial", func() (float64, error) { return Speedup(0, 1) }, 0},
		{"speedup zero parallel", func() (float64, error) { return Speedup(1, 0) }, -1},
		{"speedup NaN", func() (float64, error) { return Speedup(nan, 1) }, -1},
		{"efficiency", func() (float64, error) { return Efficiency(9.6, 16) }, 0.6},
		{"efficiency 256 runs", func() (float64, error) { return Efficiency(11.2, 16) }, 0.7},
		{"efficiency no CPU", func() (float64, error) { return Efficiency(1, 0) }, -1},
		{"efficiency Inf", func() (float64, error) { return Efficiency(inf, 2) }, -1},
		// Lambda 20 saved 50% (7.7.2).
		{"delta_perf faster", func() (float64, error) { return DeltaPerf(10, 5) }, 50},
		{"delta_perf slower", func() (float64, error) { return DeltaPerf(10, 10.25) }, -2.5},
		{"delta_perf zero ref", func() (float64, error) { return DeltaPerf(0, 1) }, -1},
		{"I/O share", func() (float64, error) { return IOShare(3, 12) }, 25},
		{"I/O share all", func() (float64, error) { return IOShare(12, 12) }, 100},
		{"I/O share above exec", func() (float64, error) { return IOShare(13, 12) }, -1},
		{"I/O share no time", func() (float64, error) { return IOShare(0, 0) }, -1},
		{"delta_iox", func() (float64, error) { return DegreeIOX(2, 8) }, 25},
		{"delta_iox too many", func() (float64, error) { return DegreeIOX(9, 8) }, -1},
		// 7.7.1: 4 MB per generation on 8 servers, su_max 512 KB.
		{"stripe iox at su_max", func() (float64, error) { return StripeIOX(4<<20, 512<<10, 8) }, 100},
		{"stripe iox small su", func() (float64, error) { return StripeIOX(4<<20, 1, 8) }, 100},
		{"stripe iox above su_max", func() (float64, error) { return StripeIOX(4<<20, 1<<20, 8) }, 50},
		// Two runs (50 KB) in one 64 KiB strip: one node (7.6.1).
		{"stripe iox two runs", func() (float64, error) { return StripeIOX(50_000, 65536, 8) }, 12.5},
		{"stripe iox zero su", func() (float64, error) { return StripeIOX(1, 0, 8) }, -1},
	}
	for _, tt := range tests {
		got, err := tt.f()
		if tt.want == -1 {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: (%v, %v), want ErrInvalid", tt.name, got, err)
			}
			continue
		}
		if err != nil || !near(got, tt.want) {
			t.Errorf("%s: (%v, %v), want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestSaturation: figure 7.6's shape, 8 nodes of 2 CPUs, peak at 16.
func TestSaturation(t *testing.T) {
	curve := []ScalePoint{{32, 7.1}, {8, 6.0}, {16, 9.6}, {4, 3.1}, {64, 5.4}, {2, 1.7}}
	sat, err := SaturationNumber(curve)
	if err != nil || sat != (ScalePoint{16, 9.6}) {
		t.Errorf("saturation number (%v, %v), want 16 processes at 9.6", sat, err)
	}
	tie, _ := SaturationNumber([]ScalePoint{{8, 2}, {4, 2}})
	if tie.Procs != 4 {
		t.Errorf("tie at 4 and 8 processes gives %d, want 4", tie.Procs)
	}
	tests := []struct {
		target float64
		want   int
		ok     bool
	}{
		{5.4, 8, true}, // 64 processes reach it too, at more cost
		{7.0, 16, true},
		{9.6, 16, true},
		{1.0, 2, true},
		{9.7, 0, false},
	}
	for _, tt := range tests {
		p, ok, err := SmallestOverhead(curve, tt.target)
		if err != nil || ok != tt.ok || p.Procs != tt.want {
			t.Errorf("SmallestOverhead(%v) = (%v, %v, %v), want %d processes, %v", tt.target, p, ok, err, tt.want, tt.ok)
		}
	}
	for _, bad := range [][]ScalePoint{nil, {{0, 1}}, {{1, math.NaN()}}, {{1, -1}}} {
		if _, err := SaturationNumber(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SaturationNumber(%v): %v, want ErrInvalid", bad, err)
		}
		if _, _, err := SmallestOverhead(bad, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("SmallestOverhead(%v): %v, want ErrInvalid", bad, err)
		}
	}
}
