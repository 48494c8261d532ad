// Command dockexp reproduces, scaled down, the experiments of seed 004's
// docking example (PI/OT, section 3 and figure 10): figure 7's execution
// times by number of ComputeMolecule processes and granularity, the
// composed newspaper's ComputeMolecule/ComputeCEDE splits, the log
// template for the output against the sequential program, and the
// simpler segmentation function. It writes CSV and SVG plots, and prints
// markdown tables with the seed's numbers beside ours.
//
// Scaling: the input is the seed's (50 molecules of about 350 KB, 17 MB)
// and its I/O is real; a seed second of computation is -unit of wall time
// (1 ms by default), waited rather than spent (see cost), so that 15
// processes on a 2-core machine each have a processor of their own, as on
// the seed's 16 workstations.
//
//	go run ./tools/dockexp -out docs           # about two minutes
//	go run ./tools/dockexp -quick -out /tmp/x  # seconds: a smoke test
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.Molecules, "molecules", 50, "B molecules in the input (the seed: 50)")
	flag.Int64Var(&cfg.MeanBytes, "mean", 350_000, "mean bytes of a B molecule (the seed: about 350 KB)")
	flag.DurationVar(&cfg.Unit, "unit", 1e6, "wall time standing for one second of the seed's computation")
	flag.DurationVar(&cfg.Unit10, "unit10", 5e6, "-unit for figure 10: its ComputeCEDE ranks ask the parent for each chain, a round trip that is not scaled down with the computation")
	flag.IntVar(&cfg.Trials, "trials", 3, "runs of each configuration; the median is reported")
	flag.StringVar(&cfg.Out, "out", "docs", "directory for dock-*.csv and dock-*.svg")
	flag.StringVar(&cfg.Dir, "dir", "", "directory for the input and output files (default: a temporary one)")
	quick := flag.Bool("quick", false, "a small input and short granularities: a smoke test in seconds")
	flag.Parse()
	if *quick {
		cfg = cfg.quick()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		slog.Error("dockexp", "err", err)
		os.Exit(1)
	}
}
