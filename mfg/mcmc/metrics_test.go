package mcmc

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/mfg"
)

func TestSummaryMetrics(t *testing.T) {
	p := Params{Runs: 8, Chains: 4, Procs: 8, Taxa: 16, Gens: 10, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
	s := Summary{Params: p, Mode: IOMFG, Lambda: 1, Seconds: 2, Compute: 1.5, IO: 0.5,
		Servers: 8, Reached: 8, CPUs: 16, Baseline: 7.72}
	m, err := s.Metrics(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{IOShare: 25, DeltaIOX: 100, DeltaIOZ: 8, HasBaseline: true, Speedup: 3.86, Efficiency: 3.86 / 16, DeltaPerf: (7.72 - 2) / 7.72 * 100}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"I/O share", m.IOShare, want.IOShare}, {"delta_iox", m.DeltaIOX, want.DeltaIOX}, {"delta_ioz", m.DeltaIOZ, want.DeltaIOZ},
		{"speedup", m.Speedup, want.Speedup}, {"efficiency", m.Efficiency, want.Efficiency}, {"delta_perf", m.DeltaPerf, want.DeltaPerf},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var out bytes.Buffer
	if err := s.Report(&out); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"phases         compute 1.500 s, I/O 0.500 s (slowest rank in each): I/O share 25.0% (def. 2.1)",
		"speedup        3.860 over the baseline's 7.720 s (eq. 7.1), Delta_perf 74.1% (eq. 7.3), efficiency 0.241 on 16 CPUs (eq. 7.2)",
		"delta_iox 100.0% (8 of 8 servers per generation)",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}

	// Without phases, servers or a baseline: the report as before.
	s = Summary{Params: p, Mode: IONone, Lambda: 1, Seconds: 1}
	out.Reset()
	if err := s.Report(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "speedup") || strings.Contains(out.String(), "phases") {
		t.Errorf("report without measurements shows metrics:\n%s", out.String())
	}
	// Phases that do not add up are refused, not printed as > 100%.
	if _, err := (Summary{Compute: 1, IO: math.Inf(1)}).Metrics(1); !errors.Is(err, mfg.ErrInvalid) {
		t.Errorf("infinite I/O time: %v", err)
	}
}

// ServersReached counts the datafiles one generation's records touch with
// simple_stripe (checked byte by byte here), every datafile with another
// distribution, and all servers for a layout it cannot build.
func TestServersReached(t *testing.T) {
	for _, tc := range []struct {
		runs, taxa, servers int
		layout              string
	}{
		{1, 16, 4, "simple_stripe"},
		{8, 16, 4, "simple_stripe"},
		{8, 16, 8, "simple_stripe:strip_size=4096"},
		{2, 64, 8, "simple_stripe:strip_size=512"},
		{16, 16, 3, "simple_stripe:strip_size=65536"},
	} {
		p := Params{Runs: tc.runs, Chains: 2, Procs: 2, Taxa: tc.taxa, Gens: 100, SampleFreq: 10, SwapFreq: 1, Seed: 5, Format: MB31}
		l, err := dist.ParseLayout(tc.layout)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Build(tc.servers)
		if err != nil {
			t.Fatal(err)
		}
		m := mustMap(t, p)
		touched := map[int]bool{}
		for r := range p.Runs {
			for sec := range len(m.Desc().Sections) {
				e, err := m.Record(r, sec, m.Samples()/2)
				if err != nil {
					t.Fatal(err)
				}
				for off := e.Off; off < e.End(); off++ {
					df, _ := d.ToPhysical(off)
					touched[df] = true
				}
			}
		}
		if got := ServersReached(p, tc.layout, tc.servers); got != len(touched) {
			t.Errorf("%d runs of %d taxa, %s on %d servers: %d reached, want %d", tc.runs, tc.taxa, tc.layout, tc.servers, got, len(touched))
		}
	}
	p := Params{Runs: 4, Chains: 2, Procs: 4, Taxa: 16, Gens: 10, SampleFreq: 1, SwapFreq: 1, Seed: 1, Format: MB31}
	if got := ServersReached(p, "varstrip:strips=0:701;1:701;2:701", 5); got != 3 {
		t.Errorf("varstrip with three strips: %d reached, want its 3 datafiles", got)
	}
	for _, bad := range []string{"nonsense:", "simple_stripe:servers=9"} {
		if got := ServersReached(p, bad, 4); got != 4 {
			t.Errorf("layout %q: %d reached, want all 4 servers", bad, got)
		}
	}
}
