package mfg

import (
	"errors"
	"math"
	"testing"
)

// 7.7.1: delta_ioz = 8 is 4 MB per generation on 8 nodes, 512 KB each.
func TestDepthIOZ(t *testing.T) {
	for _, tc := range []struct {
		dataGen int64
		servers int
		want    float64
	}{
		{4 << 20, 8, 8},
		{512 << 10, 8, 1},
		{8 << 20, 8, 16},
		{64 << 10, 1, 1},
		{0, 8, 0},
	} {
		got, err := DepthIOZ(tc.dataGen, tc.servers)
		if err != nil || got != tc.want {
			t.Errorf("DepthIOZ(%d, %d) = %v, %v; want %v", tc.dataGen, tc.servers, got, err, tc.want)
		}
	}
	if _, err := DepthIOZ(1, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("no servers: %v", err)
	}
}

// 8.2.4.1 and 7.7.2.3.
func TestAutoLambda(t *testing.T) {
	for _, tc := range []struct {
		depth          float64
		swapping       bool
		limit, samples int64
		want           int64
	}{
		{1, false, 1000, 10000, 16},  // lambda 16 saved 3% at delta_ioz = 1
		{4, false, 1000, 10000, 16},  // up to 16 while delta_ioz <= 4
		{0.01, false, 1000, 20, 16},  // tiny lines
		{4.5, false, 1000, 10000, 1}, // lambda > 1 cost time above 4 (7.7.2.3)
		{8, false, 1000, 10000, 1},   // DP_lim = 8 (8.2.4.1)
		{32, false, 1000, 10000, 1},
		{1, true, 1000, 10000, 1}, // swapping in the first generation
		{1, false, 6, 10000, 6},   // 75% of lambda_max bounds it
		{1, false, 1000, 4, 4},    // never more than the samples (eq. 7.6, lambda = wnum)
	} {
		got, err := AutoLambda(tc.depth, tc.swapping, tc.limit, tc.samples)
		if err != nil || got != tc.want {
			t.Errorf("AutoLambda(%v, %v, %d, %d) = %d, %v; want %d", tc.depth, tc.swapping, tc.limit, tc.samples, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		depth          float64
		limit, samples int64
	}{{-1, 1, 1}, {math.NaN(), 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		if _, err := AutoLambda(bad.depth, false, bad.limit, bad.samples); !errors.Is(err, ErrInvalid) {
			t.Errorf("AutoLambda(%v, %d, %d): %v, want ErrInvalid", bad.depth, bad.limit, bad.samples, err)
		}
	}
}

// Equation 6.1 and the 75% rule of 6.3.2.
func TestLambdaMax(t *testing.T) {
	const mib = 1 << 20
	node := Node{Name: "node01", Memory: 1024 * mib, SwapThreshold: 24 * mib, ProcMemory: 200 * mib, LineMemory: 24538, LocalRuns: 16}
	got, err := LambdaMax(node)
	if want := int64(800 * mib / (24538 * 16)); err != nil || got != want {
		t.Fatalf("LambdaMax = %d, %v; want %d", got, err, want)
	}
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  int64
	}{
		{"one node", []Node{node}, int64(float64(got) * 0.75)},
		{"the smallest", []Node{node, {Memory: 1024, LineMemory: 10, LocalRuns: 1}, node}, 76}, // 1024/10 = 102, 75% = 76
		{"swapping", []Node{node, {Name: "b", Memory: 1 << 40, LineMemory: 1, LocalRuns: 1, Swapping: true}}, 1},
		{"not even one", []Node{{Memory: 100, ProcMemory: 100, LineMemory: 1, LocalRuns: 1}}, 1},
		{"threshold above memory", []Node{{Memory: 100, SwapThreshold: 200, LineMemory: 1, LocalRuns: 1}}, 1},
		{"no lines", []Node{{Memory: 100}}, math.MaxInt64},
		{"one generation", []Node{{Memory: 4, LineMemory: 1, LocalRuns: 1}}, 3},
		{"rounds down to at least 1", []Node{{Memory: 1, LineMemory: 1, LocalRuns: 1}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LambdaLimit(tc.nodes)
			if err != nil || got != tc.want {
				t.Errorf("LambdaLimit = %d, %v; want %d", got, err, tc.want)
			}
			if err := CheckLambda(got, tc.nodes); err != nil {
				t.Errorf("CheckLambda(limit %d) = %v", got, err)
			}
			if got < math.MaxInt64 {
				if err := CheckLambda(got+1, tc.nodes); !errors.Is(err, ErrLambda) {
					t.Errorf("CheckLambda(limit+1 = %d) = %v, want ErrLambda", got+1, err)
				}
			}
		})
	}
	if _, err := LambdaLimit(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("no nodes: %v", err)
	}
	if _, err := LambdaMax(Node{Memory: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative memory: %v", err)
	}
	if err := CheckLambda(0, []Node{node}); !errors.Is(err, ErrInvalid) {
		t.Errorf("lambda 0: %v", err)
	}
}

// Equation 7.4 and the range of 8.2.4.2.
func TestStripUnit(t *testing.T) {
	sm, err := SuMax(4<<20, 8)
	if err != nil || sm != 512<<10 {
		t.Fatalf("SuMax(4 MB, 8) = %d, %v; want 512 KiB", sm, err)
	}
	if sm, _ := SuMax(5, 8); sm != 1 {
		t.Errorf("SuMax(5, 8) = %d, want 1", sm)
	}
	for _, tc := range []struct {
		su      int64
		dataGen int64
		want    bool
	}{
		{1, 4 << 20, false}, // 1-byte strips cost 2-10%
		{99, 4 << 20, false},
		{100, 4 << 20, true},
		{1024, 4 << 20, true},
		{512 << 10, 4 << 20, true},
		{512<<10 + 1, 4 << 20, false}, // delta_iox < 100%
		{65536, 8 * 401, false},       // the default strip for the 8/3/8 file: one server
		{401, 8 * 401, true},
		{50, 8 * 50, true}, // su_max below the threshold: su_max itself
		{49, 8 * 50, false},
	} {
		got, err := SuGood(tc.su, tc.dataGen, 8)
		if err != nil || got != tc.want {
			t.Errorf("SuGood(%d, %d, 8) = %v, %v; want %v", tc.su, tc.dataGen, got, err, tc.want)
		}
	}
	if _, err := SuGood(0, 100, 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("su 0: %v", err)
	}
	if _, err := SuMax(0, 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("no data: %v", err)
	}
}

// Equations 7.5 and 7.6 with the thesis' numbers.
func TestVarstripChunkBounds(t *testing.T) {
	// 7.7.2.1: 64 runs of 8 taxa (217 B per run and generation, table
	// A.4) on 8 nodes: 1736 B per node with lambda 1, 10416 with 6, 34720
	// with 20.
	dataGen := int64(64 * 217)
	lo, err := VscsMin(dataGen, 8)
	if err != nil || lo != 1736 {
		t.Errorf("VscsMin = %d, %v; want 1736", lo, err)
	}
	for _, tc := range []struct{ lambda, want int64 }{{6, 10416}, {20, 34720}} {
		if got, _ := VscsMin(tc.lambda*dataGen, 8); got != tc.want {
			t.Errorf("lambda %d: chunk %d, want %d", tc.lambda, got, tc.want)
		}
	}
	// A.5.3.4: the 8/4/8 file of one generation, 5608 B on 8 nodes.
	m := mustMap(t, taxa16(8, 1))
	hi, err := VscsMax(m.Size(), 8)
	if err != nil || hi != 701 {
		t.Errorf("VscsMax = %d, %v; want 701", hi, err)
	}
	if m.DataGen() != 8*401 {
		t.Errorf("DataGen = %d, want %d", m.DataGen(), 8*401)
	}
	if _, err := VscsMin(0, 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("VscsMin(0): %v", err)
	}
	if _, err := VscsMax(1, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("VscsMax(servers 0): %v", err)
	}
}

func TestBatches(t *testing.T) {
	m := mustMap(t, Desc{Sections: []Section{{Record: 1}}, Runs: 1, Gens: 20, SampleFreq: 1})
	// Figure 6.3: 20 generations with lambda 6 are written 4 times, the
	// last with 2.
	nb, err := m.Batches(6)
	if err != nil || nb != 4 {
		t.Fatalf("Batches(6) = %d, %v", nb, err)
	}
	first, n, err := m.Batch(6, 3)
	if err != nil || first != 18 || n != 2 {
		t.Errorf("Batch(6, 3) = %d, %d, %v; want 18, 2", first, n, err)
	}
	if _, _, err := m.Batch(6, 4); !errors.Is(err, ErrInvalid) {
		t.Errorf("Batch past the end: %v", err)
	}
	if _, err := m.Batches(0); !errors.Is(err, ErrInvalid) {
		t.Errorf("lambda 0: %v", err)
	}
}
