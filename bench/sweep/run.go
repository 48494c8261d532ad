package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pario/pario/bench"
)

// RunConfig is a sweep to run: one `pario bench` process per point.
type RunConfig struct {
	// Exe is the pario binary; Global its arguments before "bench" (the
	// cluster file, say).
	Exe    string
	Global []string
	Params []Param
	// BenchArgs go to every run, before the point's own.
	BenchArgs []string
	// Dir receives the runs' JSON summaries.
	Dir string
	// Show, when not nil, receives each run's output, after a line naming
	// the point.
	Show io.Writer
	// Done, when not nil, is called after each point (a progress bar).
	Done func()
	// Check, when not nil, is given every point's pario bench arguments
	// (those after "bench") before any point runs, so that a value wrong
	// for one point (t=64k,6q) fails the sweep at once, not after hours
	// of the points before it.
	Check func(args []string) error
	// Warn, when not nil, is told after the first point how long the
	// sweep will take at that pace, when that is more than WarnAfter
	// (0: DefaultWarnAfter).
	Warn      io.Writer
	WarnAfter time.Duration
}

// DefaultWarnAfter is the sweep time beyond which Run warns.
const DefaultWarnAfter = time.Hour

// PointError is a point whose arguments Check refused.
type PointError struct {
	Args []string // the point's own arguments
	Err  error
}

func (e *PointError) Error() string {
	return fmt.Sprintf("bench sweep: the point %s: %v", strings.Join(e.Args, " "), e.Err)
}

func (e *PointError) Unwrap() error { return e.Err }

// Run runs every combination of c.Params and reads each run's mean
// bandwidths from its JSON summary. A failed point is not an error: its
// Err says why (the run's last line) and the sweep goes on; only the end
// of ctx stops it, and then the points it did not finish are marked
// NotRun, beside those it did.
func Run(ctx context.Context, c RunConfig) ([]Point, error) {
	if err := Validate(c.Params); err != nil {
		return nil, err
	}
	combos := Combos(c.Params)
	if c.Check != nil {
		for _, vals := range combos {
			if err := c.Check(append(slices.Clone(c.BenchArgs), Args(c.Params, vals)...)); err != nil {
				return nil, &PointError{Args: Args(c.Params, vals), Err: err}
			}
		}
	}
	pts := make([]Point, len(combos))
	start := time.Now()
	for i, vals := range combos {
		if ctx.Err() != nil {
			return interrupted(pts, combos, i), ctx.Err()
		}
		js := filepath.Join(c.Dir, fmt.Sprintf("point-%d.json", i))
		args := append(append(append(slices.Clone(c.Global), "bench"), c.BenchArgs...), Args(c.Params, vals)...)
		args = append(args, bench.SummaryArgs(js)...)
		out, runErr := bench.Exec(ctx, c.Exe, args)
		if c.Show != nil {
			fmt.Fprintf(c.Show, "== %s\n%s", strings.Join(Args(c.Params, vals), " "), out)
		}
		var readErr error
		pts[i], readErr = readPoint(js, vals)
		if runErr == nil && readErr != nil {
			// A run that succeeded but left no figures to read (a summary
			// cut short, from another version) must not look like a point
			// that measured nothing.
			pts[i].Err = readErr.Error()
		}
		if runErr != nil {
			if ctx.Err() != nil {
				return interrupted(pts, combos, i), ctx.Err()
			}
			var ee *bench.ExecError
			if errors.As(runErr, &ee) {
				pts[i].Err = ee.Last
			} else {
				pts[i].Err = runErr.Error()
			}
		}
		if c.Done != nil {
			c.Done()
		}
		if i == 0 && c.Warn != nil && len(combos) > 1 {
			first := time.Since(start)
			limit := c.WarnAfter
			if limit <= 0 {
				limit = DefaultWarnAfter
			}
			if all := first * time.Duration(len(combos)); all > limit {
				fmt.Fprintf(c.Warn, "bench sweep: the first point took %s, so the %d points will take about %s (Ctrl-C stops the sweep)\n",
					first.Round(time.Second), len(combos), all.Round(time.Minute))
			}
		}
	}
	return pts, nil
}

// NotRun is the error of the points an interrupted sweep did not measure.
const NotRun = "not run: the sweep was interrupted"

// interrupted marks the points of an interrupted sweep from i on, the one
// running when it stopped included, as not run, so that what was measured
// can be written without the rest looking like failed or empty points.
func interrupted(pts []Point, combos [][]string, i int) []Point {
	for j := i; j < len(pts); j++ {
		pts[j] = Point{Values: combos[j], WriteMiB: math.NaN(), ReadMiB: math.NaN(), WriteSD: math.NaN(), ReadSD: math.NaN(), Err: NotRun}
	}
	return pts
}

// Measured counts the points that ran to the end (failed ones included),
// the points an interrupted sweep has to show.
func Measured(pts []Point) int {
	n := 0
	for _, pt := range pts {
		if pt.Err != NotRun {
			n++
		}
	}
	return n
}

// measured reports whether any point has a figure for op.
func measured(pts []Point, op string) bool {
	for _, pt := range pts {
		if !math.IsNaN(value(pt, op)) {
			return true
		}
	}
	return false
}

// readPoint reads the mean bandwidths from one run's JSON summary; what it
// cannot read stays NaN, and the error says why when it read neither.
func readPoint(path string, vals []string) (Point, error) {
	pt := Point{Values: vals, WriteMiB: math.NaN(), ReadMiB: math.NaN(), WriteSD: math.NaN(), ReadSD: math.NaN()}
	f, err := bench.ReadSummary(path)
	if err != nil {
		return pt, fmt.Errorf("its JSON summary: %w", err)
	}
	w, r := false, false
	if m, sd, ok := f.Bandwidth("write"); ok {
		pt.WriteMiB, pt.WriteSD, w = m, sd, true
	}
	if m, sd, ok := f.Bandwidth("read"); ok {
		pt.ReadMiB, pt.ReadSD, r = m, sd, true
	}
	if !w && !r {
		return pt, fmt.Errorf("its JSON summary %s has no write or read bandwidth", path)
	}
	return pt, nil
}

// WriteFiles writes dir/sweep.csv and, for each operation measured,
// dir/write.{png,svg} and dir/read.{png,svg}, naming them on w. Failed
// points make it return an error after writing everything.
func WriteFiles(dir string, params []Param, pts []Point, title string, w io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	csvPath := filepath.Join(dir, "sweep.csv")
	if err := writeFile(csvPath, func(w io.Writer) error { return WriteCSV(w, params, pts) }); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	fmt.Fprintf(w, "%d points: %s\n", len(pts), csvPath)
	failed := 0
	for _, p := range pts {
		if p.Err != "" {
			failed++
		}
	}
	for _, op := range []string{"write", "read"} {
		if !measured(pts, op) {
			continue // not asked for (-w alone), or every point failed
		}
		p, err := Plot(params, pts, op, title)
		if err != nil {
			return err
		}
		base := filepath.Join(dir, op)
		if err := Save(p, base); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %s.png %s.svg\n", op, base, base)
	}
	if failed > 0 {
		return &FailedPoints{Failed: failed, All: len(pts), CSV: csvPath}
	}
	return nil
}

// FailedPoints is WriteFiles' error when it wrote every file but some
// points had failed (or were not run).
type FailedPoints struct {
	Failed, All int
	CSV         string // the file whose error column says why
}

func (e *FailedPoints) Error() string {
	return fmt.Sprintf("bench sweep: %d of %d points failed (see the error column of %s)", e.Failed, e.All, e.CSV)
}
