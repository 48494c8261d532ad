package mcmc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/mfg"
)

// Options are what a run is asked for beyond its Params: where its lines
// go and the emulated cluster it runs on, as `pario mcmc` takes them.
type Options struct {
	IO      string // none, serial or mfg
	Out     string // serial: base of the .t/.p files; mfg: the parallel file
	InPario bool   // Out names a file in the store (pario:/path)
	Lambda  string // a whole number >= 1, or auto
	Layout  string // the parallel file's layout: varstrip, a layout, or ""
	// Nodes and NodeCPUs emulate a cluster: the ranks on Nodes nodes in
	// blocks, each with NodeCPUs CPUs (0 nodes: none).
	Nodes, NodeCPUs int
	Baseline        float64       // seconds of the serial version (0: none)
	ChainWork       time.Duration // emulated compute per chain per generation
}

// Limits of Options that no run comes near, so that products of them
// cannot overflow (nodes x CPUs per node is the report's CPU count).
const (
	MaxNodeCPUs = 1 << 16
	MaxBaseline = 1e9  // seconds: 31 years
	MinBaseline = 1e-6 // below it, speedup and Delta_perf are not numbers
)

// Checked is what Check makes of Options.
type Checked struct {
	Mode   IO
	Lambda int64 // when not Auto
	Auto   bool
}

// Check validates o for p, naming the flag each error is about, so that
// nothing is launched or written with bad options.
func (o Options) Check(p Params) (Checked, error) {
	var c Checked
	var err error
	if c.Mode, err = ParseIO(o.IO); err != nil {
		return c, fmt.Errorf("--io: %w", err)
	}
	if o.Lambda == "auto" {
		c.Auto = true
	} else if c.Lambda, err = strconv.ParseInt(o.Lambda, 10, 64); err != nil || c.Lambda < 1 {
		return c, fmt.Errorf("--lambda %q: want a whole number >= 1 or auto", o.Lambda)
	}
	switch {
	case c.Mode != IONone && o.Out == "":
		return c, fmt.Errorf("-o is empty: want the %s output's name", c.Mode)
	case c.Mode == IOSerial && o.InPario:
		return c, fmt.Errorf("-o %s: --io serial writes local files (MrBayes' .t/.p); a pario:/ file is for --io mfg", o.Out)
	case o.Layout != "" && (c.Mode != IOMFG || !o.InPario):
		return c, fmt.Errorf("--layout is for --io mfg into a pario file (-o pario:/path)")
	case o.Nodes < 0 || o.Nodes > p.Procs:
		return c, fmt.Errorf("--nodes %d: want 0 (none) to --np (%d)", o.Nodes, p.Procs)
	case o.NodeCPUs < 1 || o.NodeCPUs > MaxNodeCPUs:
		return c, fmt.Errorf("--node-cpus %d: want 1 to %d", o.NodeCPUs, MaxNodeCPUs)
	case o.Baseline != 0 && !(o.Baseline >= MinBaseline && o.Baseline <= MaxBaseline):
		return c, fmt.Errorf("--baseline %v: want 0 (none) or seconds from %g to %g", o.Baseline, MinBaseline, MaxBaseline)
	case o.ChainWork < 0:
		return c, fmt.Errorf("--chain-work %v: want a duration >= 0", o.ChainWork)
	case c.Mode == IOSerial && strings.HasSuffix(o.Out, "/"):
		return c, fmt.Errorf("-o %s: names a directory; --io serial wants the base of the files' names, such as %srun", o.Out, o.Out)
	}
	if o.Layout != "" && o.Layout != "varstrip" {
		if _, err := dist.ParseLayout(o.Layout); err != nil {
			return c, fmt.Errorf("--layout: %w", err)
		}
	}
	if o.Layout == "varstrip" {
		// Whether the runs' map can be cut into one strip per rank does
		// not depend on the servers: say so before any rank starts.
		m, err := mfg.New(p.Desc())
		if err != nil {
			return c, err
		}
		if _, _, err := mfg.Strips(m, p.Config(), mfg.RoundRobin(p.Procs, 1)); err != nil {
			return c, fmt.Errorf("--layout varstrip: %w", err)
		}
	}
	return c, nil
}

// FileLayout is the layout of the parallel file in the store for p over
// servers I/O servers: for varstrip the strips computed (each rank's
// bytes on the server of its emulated node with Nodes, else ranks dealt
// to the servers round robin), otherwise the layout Layout names, or the
// zero layout (the directory's) for none.
func (o Options) FileLayout(p Params, servers int) (dist.Layout, error) {
	switch o.Layout {
	case "":
		return dist.Layout{}, nil
	case "varstrip":
	default:
		l, err := dist.ParseLayout(o.Layout)
		if err != nil {
			return dist.Layout{}, fmt.Errorf("--layout: %w", err)
		}
		return l, nil
	}
	m, err := mfg.New(p.Desc())
	if err != nil {
		return dist.Layout{}, fmt.Errorf("mcmc: %w", err)
	}
	serverOf := mfg.RoundRobin(p.Procs, servers)
	if o.Nodes > 0 {
		for k := range serverOf {
			serverOf[k] = NodeOfRank(k, p.Procs, o.Nodes)
		}
	}
	strips, placement, err := mfg.Strips(m, p.Config(), serverOf)
	if err != nil {
		return dist.Layout{}, fmt.Errorf("--layout varstrip: %w", err)
	}
	l := dist.Layout{Dist: dist.Varstrip, Params: "strips=" + strips, Datafiles: len(placement)}
	if o.Nodes > 0 {
		l.Servers = dist.FormatServers(placement)
	}
	return l, nil
}

// Left says, after "interrupted" or a failure, what the run left of its
// output: nothing, since the serial files and the parallel file are
// written under temporary names and renamed into place at the end.
func (o Options) Left(mode IO) string {
	if mode == IONone {
		return ""
	}
	return "; no output written"
}
