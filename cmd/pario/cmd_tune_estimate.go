package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pario/pario/tune/estimate"
)

func newTuneEstimateCommand() *cobra.Command {
	var (
		format string
		window float64
	)
	cmd := &cobra.Command{
		Use:   "estimate FILE...",
		Short: "Estimate lambda and gamma from a log of I/O jobs",
		Long: `Estimate the tuner's lambda (arrivals per second at a target) and gamma
(services per second) from a log of I/O jobs, by the paper's rule (its
figure 2): a job arrives when its last block does, jobs arriving at the same
moment count as one job, lambda = 1 / mean time between arrivals and gamma =
1 / mean service time of a job (the sum of its blocks'). The paper's Table I
(13.478 s between arrivals, 4.453 s of service) came from a month of such
logs. The report gives 95% intervals (for exponential times, as the model
assumes) and warns when the times are not exponential or rho >= 1.

Logs (--format auto tells them apart by the header; '-' reads stdin):
  csv    a header naming the columns job, arrival, service (or end) in any
         order, then one block a line; times in seconds or as
         2010-06-01T12:00:00[Z]; '#' starts a comment:
             job,arrival,service
             A,0,4.2
  sacct  Slurm's 'sacct -P -o JobID,Start,End' (more columns are ignored):
         a job's numbered steps are its blocks (else its batch step, else
         its allocation), each arriving at Start, served End - Start

  pario tune estimate jobs.csv
  sacct -P -a -S 2010-06-01 -E 2010-07-01 -o JobID,Start,End | pario tune estimate -
  pario tune estimate --simultaneous 1 jobs.csv   # arrivals within 1 s are one

docs/tune.md describes both formats.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("estimate: no log given: want FILE... ('-' for stdin)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var blocks []estimate.Block
			var skipped []estimate.Skip
			var formats []string
			for _, name := range args {
				log, err := readJobLog(name, format)
				if err != nil {
					return err
				}
				blocks = append(blocks, log.Blocks...)
				skipped = append(skipped, log.Skipped...)
				formats = append(formats, name+" ("+log.Format+")")
			}
			r, err := estimate.Estimate(blocks, window)
			if err != nil {
				return fmt.Errorf("estimate: %s: %w", strings.Join(args, ", "), err)
			}
			return r.WriteText(os.Stdout, strings.Join(formats, ", "), skipped)
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "auto", "log format: csv, sacct or auto")
	f.Float64Var(&window, "simultaneous", 0, "arrivals within this many seconds of each other count as one job")
	return cmd
}

// readJobLog reads one log, "-" being stdin.
func readJobLog(name, format string) (estimate.Log, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return estimate.Log{}, fmt.Errorf("estimate: %w", err)
		}
		defer f.Close()
		r = f
	}
	log, err := estimate.Read(r, format)
	if err != nil {
		return log, fmt.Errorf("estimate: %s: %w", name, err)
	}
	return log, nil
}
