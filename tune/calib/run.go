package calib

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/units"
)

// Grid is a calibration run: every (strip, transfer) with transfer <=
// strip, on each server count, one file of Size bytes written by Ranks
// ranks, Repetitions times, fsync included (-e).
type Grid struct {
	Strips, Transfers []int64
	Servers           []int
	Size              int64
	Ranks             int
	Repetitions       int
}

// Run is one benchmark invocation of a grid.
type Run struct {
	Strip, Transfer int64
	Servers         int
	// Args are the `pario bench` arguments (after "bench").
	Args []string
	// File is the JSON summary it writes.
	File string
}

// Runs lists the grid's invocations; their JSON summaries go to dir, named
// after the layout (bench-strip1m-t256k-servers1.json) so that ReadFile
// also finds the layout in the name.
func (g Grid) Runs(dir string) []Run {
	var runs []Run
	ranks := max(g.Ranks, 1)
	for _, n := range g.Servers {
		for _, s := range g.Strips {
			for _, t := range g.Transfers {
				if t > s {
					continue
				}
				name := fmt.Sprintf("bench-strip%s-t%s-servers%d.json", units.FormatSize(s), units.FormatSize(t), n)
				f := filepath.Join(dir, name)
				args := []string{"--servers", strconv.Itoa(n), "-N", strconv.Itoa(ranks),
					"-b", strconv.FormatInt(g.Size/int64(ranks), 10), "-t", strconv.FormatInt(t, 10),
					"--pario.strip-size", strconv.FormatInt(s, 10), "--pario.servers", strconv.Itoa(n),
					"-w", "-e", "-i", strconv.Itoa(max(g.Repetitions, 1))}
				args = append(args, bench.SummaryArgs(f)...)
				runs = append(runs, Run{Strip: s, Transfer: t, Servers: n, Args: args, File: f})
			}
		}
	}
	return runs
}

// Execute runs `exe [global...] bench ARGS` (the default run of pario bench:
// an embedded cluster of --servers I/O servers on loopback) with bench.Exec
// and reads its JSON summary. progress, if not nil, is called before each run.
func Execute(ctx context.Context, exe string, global []string, runs []Run, progress func(i int, r Run)) ([]Point, error) {
	var pts []Point
	for i, r := range runs {
		if progress != nil {
			progress(i, r)
		}
		args := append(append(append([]string(nil), global...), "bench"), r.Args...)
		if _, err := bench.Exec(ctx, exe, args); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ee *bench.ExecError
			if !errors.As(err, &ee) {
				return nil, err
			}
			return nil, fmt.Errorf("calibrate: pario bench %s: %v: %s", strings.Join(r.Args, " "), ee.Err, ee.Last)
		}
		p, err := ReadFile(r.File, Layout{Strip: r.Strip, Targets: r.Servers})
		if err != nil {
			return nil, err
		}
		pts = append(pts, p...)
	}
	return pts, nil
}
