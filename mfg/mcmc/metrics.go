package mcmc

import (
	"fmt"
	"io"
	"strings"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/mfg"
)

// Metrics are the thesis' measures of one run (mfg's perf.go): the
// speedup and what follows from it only with a baseline (HasBaseline).
type Metrics struct {
	IOShare     float64 // definition 2.1: percent of the time in I/O (the slowest rank's phases)
	DeltaIOX    float64 // eq. 3.3: percent of the servers one generation reaches
	DeltaIOZ    float64 // 64 KiB strips per server per generation
	HasBaseline bool
	Speedup     float64 // eq. 7.1: baseline over this run's time
	Efficiency  float64 // eq. 7.2: speedup over CPUs (0 if CPUs unknown)
	DeltaPerf   float64 // eq. 7.3: percent of the baseline's time saved
}

// Metrics computes the run's metrics for dataGen bytes per generation.
// Parts whose inputs are missing (no servers, no CPUs, no baseline) stay 0.
func (s Summary) Metrics(dataGen int64) (Metrics, error) {
	var m Metrics
	var err error
	if exec := s.Compute + s.IO; exec > 0 {
		if m.IOShare, err = mfg.IOShare(s.IO, exec); err != nil {
			return m, fmt.Errorf("mcmc: %w", err)
		}
	}
	if s.Servers > 0 {
		if m.DeltaIOX, err = mfg.DegreeIOX(min(s.Reached, s.Servers), s.Servers); err != nil {
			return m, fmt.Errorf("mcmc: %w", err)
		}
		if m.DeltaIOZ, err = mfg.DepthIOZ(dataGen, s.Servers); err != nil {
			return m, fmt.Errorf("mcmc: %w", err)
		}
	}
	if s.Baseline > 0 && s.Seconds > 0 {
		m.HasBaseline = true
		if m.Speedup, err = mfg.Speedup(s.Baseline, s.Seconds); err != nil {
			return m, fmt.Errorf("mcmc: %w", err)
		}
		if m.DeltaPerf, err = mfg.DeltaPerf(s.Baseline, s.Seconds); err != nil {
			return m, fmt.Errorf("mcmc: %w", err)
		}
		if s.CPUs > 0 {
			if m.Efficiency, err = mfg.Efficiency(m.Speedup, s.CPUs); err != nil {
				return m, fmt.Errorf("mcmc: %w", err)
			}
		}
	}
	return m, nil
}

// reportMetrics writes the phases and metrics lines of the report, when
// the run measured its phases.
func (s Summary) reportMetrics(w io.Writer, dataGen int64) error {
	if s.Compute+s.IO <= 0 {
		return nil
	}
	m, err := s.Metrics(dataGen)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phases         compute %.3f s, I/O %.3f s (slowest rank in each): I/O share %.1f%% (def. 2.1)\n",
		s.Compute, s.IO, m.IOShare)
	if s.Servers > 0 {
		fmt.Fprintf(&b, "parallelism    delta_iox %.1f%% (%d of %d servers per generation), delta_ioz %.3g (64 KiB strips per server per generation)\n",
			m.DeltaIOX, min(s.Reached, s.Servers), s.Servers, m.DeltaIOZ)
	}
	if m.HasBaseline {
		fmt.Fprintf(&b, "speedup        %.3f over the baseline's %.3f s (eq. 7.1), Delta_perf %.1f%% (eq. 7.3)", m.Speedup, s.Baseline, m.DeltaPerf)
		if s.CPUs > 0 {
			fmt.Fprintf(&b, ", efficiency %.3f on %d CPUs (eq. 7.2)", m.Efficiency, s.CPUs)
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("mcmc: report: %w", err)
	}
	return nil
}

// ServersReached is how many of servers one generation's records reach
// with the file's layout (delta_iox, eq. 3.3): for simple_stripe the
// datafiles its strips fill, otherwise every datafile (varstrip puts each
// rank's bytes on its own). A layout that does not parse or build for
// servers counts as all of them.
func ServersReached(p Params, layout string, servers int) int {
	l, err := dist.ParseLayout(layout)
	if err != nil {
		return servers
	}
	d, err := l.Build(servers)
	if err != nil {
		return servers
	}
	if l.Dist != dist.SimpleStripe {
		return d.Datafiles()
	}
	m, err := mfg.New(p.Desc())
	if err != nil {
		return d.Datafiles()
	}
	// A generation's records are spread over the file (run-major): count
	// the datafiles the records of the middle sample touch.
	touched := map[int]bool{}
	for r := range p.Runs {
		for sec := range len(m.Desc().Sections) {
			e, err := m.Record(r, sec, m.Samples()/2)
			if err != nil {
				return d.Datafiles()
			}
			for off := e.Off; off < e.End() && len(touched) < servers; off += d.ContiguousLength(off) {
				df, _ := d.ToPhysical(off)
				touched[df] = true
			}
		}
	}
	return len(touched)
}
