package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pario/pario/bench"
)

// Bench is the objective the paper's framework measures on the real
// system: every evaluation is a `pario bench` run that writes one file of
// FileSize bytes with the point's stripe count, strip size and transfer
// size, and its value is the run's mean write time. Runs go through
// bench.Exec (another process, as `tune calibrate` runs them) and their
// JSON summaries are read with bench.ReadSummary. Slow (a second or more
// per point), so the search keeps every value in the results database
// and asks the cluster nothing twice.
type Bench struct {
	// Exe is the pario binary.
	Exe string
	// Cluster is the cluster file of the cluster to measure; "" starts an
	// embedded cluster of Servers I/O servers on loopback for every run.
	Cluster string
	Servers int
	// FileSize in bytes, written by Ranks ranks, Repetitions times (the
	// first set aside as warm-up when there are more, as tune calibrate
	// does), fsync included.
	FileSize    int64
	Ranks       int
	Repetitions int
	// Dir receives the runs' JSON summaries.
	Dir string
}

// ID describes the objective and its settings, for a results database
// key: the same point measured on another cluster or with other settings
// is another result.
func (b Bench) ID() string {
	where := fmt.Sprintf("embedded servers=%d", b.Servers)
	if b.Cluster != "" {
		where = "cluster=" + b.Cluster
	}
	return fmt.Sprintf("bench/v1 %s size=%d ranks=%d repetitions=%d fsync", where, b.FileSize, b.Ranks, b.Repetitions)
}

// System is the results database's system name for b's measurements.
func (b Bench) System() string {
	if b.Cluster != "" {
		return "bench:" + b.Cluster
	}
	return fmt.Sprintf("bench:embedded-%d-servers", b.Servers)
}

// Validate checks the settings.
func (b Bench) Validate() error {
	switch {
	case b.Exe == "":
		return errors.New("search: bench objective: no pario binary")
	case b.FileSize < 1:
		return fmt.Errorf("search: bench objective: file size %d is not positive", b.FileSize)
	case b.Ranks < 1:
		return fmt.Errorf("--bench-ranks %d: want at least 1 rank writing the file", b.Ranks)
	case b.Repetitions < 1:
		return fmt.Errorf("--bench-repetitions %d: want at least 1 run per point", b.Repetitions)
	case b.Cluster == "" && b.Servers < 1:
		return fmt.Errorf("--bench-servers %d: want at least 1 I/O server in each run's embedded cluster", b.Servers)
	case b.Dir == "":
		return errors.New("search: bench objective: no directory for the summaries")
	}
	return nil
}

// Args are the pario arguments of the run for (n, s, t) writing its
// summary to file, and the bytes it writes: each rank's block is a whole
// number of transfers, at least one.
func (b Bench) Args(n, s, t int64, file string) ([]string, int64) {
	block := max(t, b.FileSize/int64(b.Ranks)/t*t)
	var args []string
	if b.Cluster != "" {
		args = []string{"--cluster", b.Cluster, "bench", "-a", "PARIO", "-o", fmt.Sprintf("pario:/tune-bench-%d-%d-%d", n, s, t)}
	} else {
		args = []string{"bench", "--servers", strconv.Itoa(b.Servers)}
	}
	args = append(args, "-N", strconv.Itoa(b.Ranks), "-b", strconv.FormatInt(block, 10), "-t", strconv.FormatInt(t, 10),
		"--pario.strip-size", strconv.FormatInt(s, 10), "--pario.servers", strconv.FormatInt(n, 10),
		"-w", "-e", "-i", strconv.Itoa(b.Repetitions))
	return append(args, bench.SummaryArgs(file)...), block * int64(b.Ranks)
}

// Evaluate runs pario bench for the point and returns its mean write time
// scaled to FileSize bytes (when the blocks round the size).
func (b Bench) Evaluate(ctx context.Context, x Params) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	n, s, t, err := stripingParams(x)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(b.Dir, fmt.Sprintf("bench-c%d-s%d-t%d.json", n, s, t))
	args, written := b.Args(n, s, t, file)
	if _, err := bench.Exec(ctx, b.Exe, args); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("pario %s: %w", strings.Join(args, " "), err)
	}
	defer os.Remove(file)
	sum, err := bench.ReadSummary(file)
	if err != nil {
		return 0, err
	}
	mean, err := writeTime(sum)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return mean * float64(b.FileSize) / float64(written), nil
}

// writeTime is the mean totalTime of a summary's write phases, the first
// repetition set aside when there are more (it starts the cluster, creates
// the file and opens connections: not what the layout costs).
func writeTime(sum *bench.SummaryFile) (float64, error) {
	if sum.Tests == nil || len(*sum.Tests) == 0 {
		return 0, errors.New("no tests in the summary")
	}
	var times []float64
	for _, r := range (*sum.Tests)[0].Results {
		if r.Access == "write" && r.TotalTime != nil && *r.TotalTime > 0 {
			times = append(times, *r.TotalTime)
		}
	}
	if len(times) == 0 {
		return 0, errors.New("no write phase with a time in the summary")
	}
	if len(times) > 1 {
		times = times[1:]
	}
	var total float64
	for _, v := range times {
		total += v
	}
	return total / float64(len(times)), nil
}
