package mcmc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// Split stops when its context ends: an interrupted `pario mcmc split`
// went on to write every file (it looked at no context).
func TestSplitStops(t *testing.T) {
	p := Params{Runs: 4, Chains: 1, Procs: 1, Taxa: 8, Gens: 20, SampleFreq: 1, SwapFreq: 1, Format: MB31}
	f, _ := runMFG(t, p, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs := newMemFS()
	create := func(name string) (io.WriteCloser, error) {
		cancel() // interrupted once the first file is made
		return fs.create(name)
	}
	err := Split(ctx, p, bytes.NewReader(f.data), int64(len(f.data)), "out", create)
	if !errors.Is(err, context.Canceled) || len(fs.files) == 2*p.Runs {
		t.Errorf("Split = %v with %d of %d files made, want context.Canceled and fewer", err, len(fs.files), 2*p.Runs)
	}
}

// failReader fails every read: Split must not read a file whose
// parameters are bad.
type failReader struct{ t *testing.T }

func (r failReader) ReadAt([]byte, int64) (int, error) {
	r.t.Error("read before the parameters were checked")
	return 0, io.EOF
}

// Bad parameters and output names are refused before the file is read,
// each naming what is wrong: the CLI says them as bad usage, not as a
// fault of the file (before, --samplefreq 0 was "mcmc split FILE: ...",
// and -o "" or -o DIR/ wrote hidden files .run1.t).
func TestSplitChecksFirst(t *testing.T) {
	good := Params{Runs: 2, Taxa: 8, Gens: 10, SampleFreq: 1, SwapFreq: 1, Format: MB31}
	for _, tc := range []struct {
		edit func(*Params)
		base string
		want string
	}{
		{func(p *Params) { p.Runs = 0 }, "out", "runs must be at least 1"},
		{func(p *Params) { p.SampleFreq = 0 }, "out", "sample frequency"},
		{func(p *Params) { p.Taxa = 3 }, "out", "taxa"},
		{func(*Params) {}, "", `-o ""`},
		{func(*Params) {}, "dir/", `-o "dir/"`},
	} {
		p := good
		tc.edit(&p)
		if err := CheckSplit(p, tc.base); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckSplit(%+v, %q) = %v, want %q", p, tc.base, err, tc.want)
		}
		if err := Split(context.Background(), p, failReader{t}, 1000, tc.base, newMemFS().create); err == nil {
			t.Errorf("Split(%+v, %q) accepted", p, tc.base)
		}
	}
	if err := CheckSplit(good, "dir/out"); err != nil {
		t.Errorf("CheckSplit of good parameters: %v", err)
	}
}

// shortReader holds fewer bytes than the size Split is told.
type shortReader struct{ b []byte }

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(r.b).ReadAt(p, off)
}

// A file that ends before the size it claimed (a store file truncated
// while it is read) is an error naming the piece, not a panic.
func TestSplitShortRead(t *testing.T) {
	p := Params{Runs: 2, Chains: 1, Procs: 1, Taxa: 8, Gens: 10, SampleFreq: 1, SwapFreq: 1, Format: MB31}
	f, _ := runMFG(t, p, 1)
	fs := newMemFS()
	err := Split(context.Background(), p, shortReader{f.data[:len(f.data)/2]}, int64(len(f.data)), "out", fs.create)
	if err == nil || !strings.Contains(err.Error(), "ended") || len(fs.files) != 0 {
		t.Errorf("Split of a file shorter than its size = %v (%d files), want an error saying it ended", err, len(fs.files))
	}
}

// A matrix's size is bounded over all taxa, and the mrbayes block's
// settings are at least 1 (before, --mrbayes --runs 0 wrote "nruns=0",
// and 65536 taxa x 16 Mi characters, a terabyte, was accepted).
func TestCheckMatrix(t *testing.T) {
	mb := Params{Runs: 2, Chains: 2, Gens: 10, SampleFreq: 1, SwapFreq: 1}
	for _, tc := range []struct {
		taxa, nchar int
		edit        func(*Params)
		want        string
	}{
		{16, 100, nil, ""},
		{MaxTaxa, 1 << 16, nil, ""},
		{MaxTaxa, 1 << 24, nil, "more than"},
		{3, 100, nil, "taxa"},
		{16, 0, nil, "characters"},
		{16, 100, func(p *Params) { p.Runs = 0 }, "--runs 0"},
		{16, 100, func(p *Params) { p.Chains = -1 }, "--chains -1"},
		{16, 100, func(p *Params) { p.Gens = 0 }, "--gens 0"},
		{16, 100, func(p *Params) { p.SampleFreq = 0 }, "--samplefreq 0"},
		{16, 100, func(p *Params) { p.SwapFreq = 0 }, "--swapfreq 0"},
	} {
		var p *Params
		if tc.edit != nil {
			q := mb
			tc.edit(&q)
			p = &q
		}
		err := CheckMatrix(tc.taxa, tc.nchar, p)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckMatrix(%d, %d, %v) = %v, want %q", tc.taxa, tc.nchar, p, err, tc.want)
		}
		if tc.want != "" {
			if err := Matrix(context.Background(), io.Discard, tc.taxa, tc.nchar, 1, p); !errors.Is(err, ErrInvalid) {
				t.Errorf("Matrix(%d, %d, %v) = %v, want it refused", tc.taxa, tc.nchar, p, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Matrix(ctx, io.Discard, 16, 100, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Matrix with a done context = %v", err)
	}
}
