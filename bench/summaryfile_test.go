package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/bench"
)

// What the JSON reporter writes, ReadSummary reads back: the reader and
// the writer cannot drift apart unnoticed.
func TestSummaryFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	o := opts(t, "POSIX", func(o *bench.Options) {
		o.SummaryFormat, o.SummaryFile = bench.FormatJSON, filepath.Join(dir, "s.json")
		o.Repetitions = 2
		o.CheckWrite, o.CheckRead = false, false
	})
	rep, _, err := runRanks(t, 2, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := bench.ReadSummary(o.SummaryFile)
	if err != nil {
		t.Fatal(err)
	}
	if f.Tests == nil || len(*f.Tests) != 1 {
		t.Fatalf("tests: %+v", f.Tests)
	}
	test := (*f.Tests)[0]
	if test.Parameters.TransferSize != o.TransferSize || test.Parameters.BlockSize != o.BlockSize ||
		test.Parameters.SegmentCount != o.Segments || test.Options.Tasks != 2 {
		t.Errorf("parameters %+v, options %+v; want transfer %d, block %d, segments %d, 2 tasks",
			test.Parameters, test.Options, o.TransferSize, o.BlockSize, o.Segments)
	}
	if len(test.Results) != len(rep.Results) {
		t.Fatalf("%d results read, %d written", len(test.Results), len(rep.Results))
	}
	near := func(got *float64, want, tol float64) bool { return got != nil && math.Abs(*got-want) <= tol }
	for i, r := range rep.Results {
		g := test.Results[i]
		if g.Access != r.Access || g.AggBytes != r.AggBytes {
			t.Errorf("result %d: %s, %d bytes; want %s, %d", i, g.Access, g.AggBytes, r.Access, r.AggBytes)
		}
		if !near(g.TotalTime, r.Total, 1e-6) || !near(g.BwMiB, r.BW/(1<<20), 1e-4) || !near(g.XferKiB, float64(r.Xfer)/1024, 1e-4) {
			t.Errorf("result %d: time %v, MiB/s %v, KiB %v; want %v, %v, %v", i, g.TotalTime, g.BwMiB, g.XferKiB, r.Total, r.BW/(1<<20), float64(r.Xfer)/1024)
		}
	}
	for _, s := range rep.Summaries {
		mean, sd, ok := f.Bandwidth(s.Operation)
		if !ok || math.Abs(mean-s.BWMean/(1<<20)) > 1e-4 || math.Abs(sd-s.BWStd/(1<<20)) > 1e-4 {
			t.Errorf("%s: %v, %v, %v; want %v, %v", s.Operation, mean, sd, ok, s.BWMean/(1<<20), s.BWStd/(1<<20))
		}
	}
	if _, _, ok := f.Bandwidth("remove"); ok {
		t.Error("Bandwidth(remove) found a summary line")
	}
}

func TestParseSummaryErrors(t *testing.T) {
	cases := []struct {
		doc   string
		check func(error) bool
	}{
		{"{\"tests\": [\n oops", func(err error) bool { var se *json.SyntaxError; return errors.As(err, &se) }},
		{`{"tests": [{"Results": [{"totalTime": "slow"}]}]}`, func(err error) bool {
			var te *json.UnmarshalTypeError
			return errors.As(err, &te) && te.Field == "tests.Results.totalTime"
		}},
		{`[1, 2]`, func(err error) bool { var te *json.UnmarshalTypeError; return errors.As(err, &te) }},
	}
	for _, tc := range cases {
		_, err := bench.ParseSummary([]byte(tc.doc))
		if err == nil || !tc.check(err) {
			t.Errorf("ParseSummary(%q): %v", tc.doc, err)
		}
	}
	// Not a summary at all is not a decoding error: Tests is nil.
	f, err := bench.ParseSummary([]byte(`{"something": "else"}`))
	if err != nil || f.Tests != nil {
		t.Errorf("a document without tests: %+v, %v", f, err)
	}
	if _, err := bench.ReadSummary(filepath.Join(t.TempDir(), "nope.json")); err == nil {
		t.Error("ReadSummary of a missing file: no error")
	}
}

func TestExec(t *testing.T) {
	ctx := context.Background()
	out, err := bench.Exec(ctx, "/bin/sh", []string{"-c", "echo fine"})
	if err != nil || string(out) != "fine\n" {
		t.Errorf("a successful run: %q, %v", out, err)
	}
	// A failure quotes the last line, where pario says why.
	out, err = bench.Exec(ctx, "/bin/sh", []string{"-c", "echo working; echo 'pario: -t 3: not a size' >&2; exit 2"})
	var ee *bench.ExecError
	var xe *exec.ExitError
	if !errors.As(err, &ee) || ee.Last != "pario: -t 3: not a size" || !errors.As(err, &xe) || xe.ExitCode() != 2 {
		t.Errorf("a failed run: %v", err)
	}
	if string(out) != "working\npario: -t 3: not a size\n" {
		t.Errorf("a failed run's output: %q", out)
	}
	// The end of ctx is reported as such, not as the exit status.
	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := bench.Exec(ctx, "/bin/sh", []string{"-c", "sleep 10"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a run past its deadline: %v", err)
	}
}
