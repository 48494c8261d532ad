package bench_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/dummy"
	"github.com/pario/pario/bench/backend/mmap"
	"github.com/pario/pario/bench/backend/posix"
	"github.com/pario/pario/rank"
)

// runRanks runs the benchmark on n goroutine ranks (rank.NewLocal) and
// returns rank 0's report, its output and its error.
func runRanks(t *testing.T, n int, o bench.Options, drv func() backend.Driver) (*bench.Report, string, error) {
	t.Helper()
	return runConfigured(t, n, o, drv, nil)
}

// countingComm counts the barriers a rank enters.
type countingComm struct {
	bench.Comm
	n *atomic.Int64
}

func (c countingComm) Barrier(ctx context.Context) error {
	c.n.Add(1)
	return c.Comm.Barrier(ctx)
}

// runCounting is runRanks counting every rank's barriers in n.
func runCounting(t *testing.T, ranks int, o bench.Options, drv func() backend.Driver, n *atomic.Int64) (*bench.Report, string, error) {
	t.Helper()
	return runConfigured(t, ranks, o, drv, func(cfg *bench.Config) { cfg.Comm = countingComm{cfg.Comm, n} })
}

// runClock is runRanks with rank 0's -T clock replaced.
func runClock(t *testing.T, ranks int, o bench.Options, clock func() time.Time) (*bench.Report, string, error) {
	t.Helper()
	return runConfigured(t, ranks, o, nil, func(cfg *bench.Config) { cfg.Clock = clock })
}

// runConfigured is runRanks with each rank's Config passed through
// configure (when not nil) before the run.
func runConfigured(t *testing.T, n int, o bench.Options, drv func() backend.Driver, configure func(*bench.Config)) (*bench.Report, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	comms, err := rank.NewLocal(ctx, n, rank.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		out    bytes.Buffer
		rep    *bench.Report
		err0   error
		wg     sync.WaitGroup
		errsMu sync.Mutex
		others []error
	)
	for r, c := range comms {
		wg.Go(func() {
			defer c.Close()
			cfg := bench.Config{Options: o, Comm: c, Stdout: io.Discard}
			if drv != nil {
				cfg.Driver = drv()
			}
			if r == 0 {
				cfg.Stdout = &out
			}
			if configure != nil {
				configure(&cfg)
			}
			got, err := bench.Run(ctx, cfg)
			if r == 0 {
				rep, err0 = got, err
				return
			}
			var ce *bench.CollectiveError
			// Every rank stops alike on bad options, a failed rank, or
			// wrong data under -q.
			if err != nil && !errors.As(err, &ce) && !errors.Is(err, bench.ErrUsage) && !errors.Is(err, bench.ErrVerify) {
				errsMu.Lock()
				others = append(others, err)
				errsMu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(others) > 0 {
		t.Errorf("other ranks: %v", errors.Join(others...))
	}
	return rep, out.String(), err0
}

func opts(t *testing.T, api string, args ...func(*bench.Options)) bench.Options {
	o := bench.DefaultOptions()
	o.API = api
	o.TestFile = filepath.Join(t.TempDir(), "testFile")
	o.BlockSize, o.TransferSize, o.Segments = 256<<10, 64<<10, 3
	o.Write, o.Read, o.CheckWrite, o.CheckRead = true, true, true, true
	for _, a := range args {
		a(&o)
	}
	return o
}

// Every local back end, every pattern: the data read back is the data
// written, and the report adds up.
func TestEveryBackendAndPatternVerifies(t *testing.T) {
	patterns := map[string]func(*bench.Options){
		"shared":        func(o *bench.Options) {},
		"file-per-proc": func(o *bench.Options) { o.FilePerProc = true },
		"reorder":       func(o *bench.Options) { o.ReorderTasks, o.ReorderShift = true, 1 },
		"fpp-reorder-Q2": func(o *bench.Options) {
			o.FilePerProc, o.ReorderTasks, o.ReorderShift, o.TaskPerNodeOffset = true, true, 1, 2
		},
		"random":     func(o *bench.Options) { o.RandomOffset, o.RandomSeed = true, 42 },
		"random-fpp": func(o *bench.Options) { o.RandomOffset, o.FilePerProc = true, true },
		"strided":    func(o *bench.Options) { o.Strided, o.TransferSize = true, 384<<10 },
		"data-start": func(o *bench.Options) { o.DataStart = 100 },
		"fsync":      func(o *bench.Options) { o.Fsync, o.FsyncPerWrite, o.Repetitions = true, true, 2 },
	}
	for _, api := range []string{"POSIX", "MMAP", "DUMMY"} {
		for name, p := range patterns {
			t.Run(api+"/"+name, func(t *testing.T) {
				o := opts(t, api, p)
				rep, out, err := runRanks(t, 3, o, nil)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if len(rep.Results) != 2*o.Repetitions {
					t.Fatalf("%d results, want %d", len(rep.Results), 2*o.Repetitions)
				}
				for _, r := range rep.Results {
					if r.AggBytes != 3*3*256<<10 || r.BW <= 0 || r.Total <= 0 {
						t.Errorf("%s: %d bytes, bw %v, total %v", r.Access, r.AggBytes, r.BW, r.Total)
					}
				}
				if len(rep.Verify) != 2*o.Repetitions {
					t.Fatalf("%d verification passes, want %d", len(rep.Verify), 2*o.Repetitions)
				}
				for _, v := range rep.Verify {
					if v.Errors != 0 {
						t.Errorf("%s: %d errors: %v", v.Pass, v.Errors, v.Mismatches)
					}
				}
				if api == "DUMMY" && !strings.Contains(out, "skipped: DUMMY moves no data") {
					t.Errorf("DUMMY should say verification is skipped:\n%s", out)
				}
				if !strings.Contains(out, "Summary of all tests:") {
					t.Errorf("no summary:\n%s", out)
				}
			})
		}
	}
}

// misplacing is a POSIX back end whose file writes the transfer meant for
// offset `from` at offset `to` instead: a lost and a misplaced block.
type misplacing struct {
	posix.Driver
	from, to int64
}

func (m *misplacing) Open(ctx context.Context, env backend.Env) (backend.Backend, error) {
	b, err := m.Driver.Open(ctx, env)
	return &misplacingBackend{Backend: b, m: m}, err
}

type misplacingBackend struct {
	backend.Backend
	m *misplacing
}

func (b *misplacingBackend) Create(ctx context.Context, name string) (backend.File, error) {
	f, err := b.Backend.Create(ctx, name)
	return &misplacingFile{File: f, m: b.m}, err
}

type misplacingFile struct {
	backend.File
	m *misplacing
}

func (f *misplacingFile) WriteAt(p []byte, off int64) (int, error) {
	if off == f.m.from {
		off = f.m.to
	}
	return f.File.WriteAt(p, off)
}

// A block written in the wrong place fails verification, which names the
// offset where the wrong data is and where it belonged.
func TestMisplacedBlockIsReported(t *testing.T) {
	const from, to = 5 * 64 << 10, 4 * 64 << 10 // rank 1's 2nd transfer lands on its 1st
	o := opts(t, "POSIX", func(o *bench.Options) { o.Segments = 1; o.Read = false; o.CheckRead = false })
	rep, out, err := runRanks(t, 3, o, func() backend.Driver { return &misplacing{from: from, to: to} })
	if !errors.Is(err, bench.ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify\n%s", err, out)
	}
	v := rep.Verify[0]
	if v.Errors != 2 {
		t.Errorf("%d errors, want 2 (the lost block and the overwritten one)", v.Errors)
	}
	all := strings.Join(v.Mismatches, "\n")
	for _, want := range []string{
		"rank 1, offset 327680: expected data of rank 1, repetition 0, found zeros",
		"rank 1, offset 262144: expected data of rank 1, repetition 0, found a block stamped for offset 327680 by rank 1 in repetition 0 (misplaced by -65536 bytes)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("mismatches lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(out, "WARNING: Incorrect data on write check (2 errors found).") {
		t.Errorf("report:\n%s", out)
	}
}

// -q stops at the first verification pass that finds wrong data; without
// it every repetition runs and the run fails at the end.
func TestQuitOnError(t *testing.T) {
	const from, to = 5 * 64 << 10, 4 * 64 << 10
	for _, q := range []bool{false, true} {
		o := opts(t, "POSIX", func(o *bench.Options) {
			o.Segments, o.Read, o.CheckRead, o.Repetitions, o.QuitOnError = 1, false, false, 2, q
		})
		_, out, err := runRanks(t, 3, o, func() backend.Driver { return &misplacing{from: from, to: to} })
		if !errors.Is(err, bench.ErrVerify) {
			t.Fatalf("-q=%v: err = %v, want ErrVerify", q, err)
		}
		passes := strings.Count(out, "WARNING: Incorrect data on write check")
		if want := map[bool]int{false: 2, true: 1}[q]; passes != want || q != strings.Contains(err.Error(), "-q: stopping") {
			t.Errorf("-q=%v: %d failed passes reported (want %d), error %q", q, passes, want, err)
		}
	}
}

// -D stops a phase at the deadline; the report says how much was moved.
// With stoneWallingWearOut every rank then catches up with the furthest.
func TestStonewall(t *testing.T) {
	slow := func() backend.Driver { return &dummy.Driver{Xfer: 2 * time.Millisecond, Rank0Only: true} }
	o := opts(t, "DUMMY", func(o *bench.Options) {
		o.BlockSize, o.TransferSize, o.Segments = 4<<20, 4<<10, 1
		o.Read, o.CheckWrite, o.CheckRead, o.Deadline = false, false, false, 1
	})
	rep, out, err := runRanks(t, 2, o, slow)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := rep.Results[0]
	if !r.Stonewalled || r.Ranks[0].Transfers >= 1024 || r.Ranks[1].Transfers != 1024 {
		t.Fatalf("stonewalled %v, rank transfers %d and %d", r.Stonewalled, r.Ranks[0].Transfers, r.Ranks[1].Transfers)
	}
	if r.AggBytes != (r.Ranks[0].Transfers+1024)*4<<10 {
		t.Errorf("aggregate %d bytes does not match the transfers", r.AggBytes)
	}

	o.WearOut = true
	o.BlockSize = 2 << 20 // 512 transfers: about 1 s of wear-out for rank 0
	rep, out, err = runRanks(t, 2, o, slow)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r = rep.Results[0]
	if r.Ranks[0].Transfers != 512 || r.Ranks[1].Transfers != 512 {
		t.Errorf("wear-out: rank transfers %d and %d, want 512 each", r.Ranks[0].Transfers, r.Ranks[1].Transfers)
	}
}

// -O stoneWallingStatusFile: a stonewalled write run with wear-out stores
// its transfers per rank; a later read-only run reads exactly that many,
// and without the file it reads everything.
func TestStoneWallingStatusFile(t *testing.T) {
	slow := func() backend.Driver { return &dummy.Driver{Xfer: 2 * time.Millisecond} }
	status := filepath.Join(t.TempDir(), "stonewall")
	o := opts(t, "DUMMY", func(o *bench.Options) {
		o.BlockSize, o.TransferSize, o.Segments = 4<<20, 4<<10, 1
		o.Read, o.CheckWrite, o.CheckRead, o.Deadline, o.WearOut = false, false, false, 1, true
		o.StoneWallStatusFile = status
	})
	rep, out, err := runRanks(t, 2, o, slow)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	w := rep.Results[0]
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(w.Ranks[0].Transfers, 10); string(b) != want || w.Ranks[0].Transfers >= 1024 {
		t.Fatalf("status file %q, want %s (the stonewalled count, below 1024)", b, want)
	}

	for file, want := range map[string]int64{status: w.Ranks[0].Transfers, status + ".missing": 1024} {
		r := o
		r.Write, r.Read, r.Deadline, r.WearOut, r.StoneWallStatusFile = false, true, 0, false, file
		rep, out, err := runRanks(t, 2, r, func() backend.Driver { return &dummy.Driver{} })
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got := rep.Results[0]
		if got.Ranks[0].Transfers != want || got.Ranks[1].Transfers != want {
			t.Errorf("read with %s: rank transfers %d and %d, want %d", filepath.Base(file), got.Ranks[0].Transfers, got.Ranks[1].Transfers, want)
		}
	}
}

func TestBadOptionsFailAlike(t *testing.T) {
	o := opts(t, "POSIX", func(o *bench.Options) { o.TransferSize = 96 << 10 })
	_, _, err := runRanks(t, 2, o, nil)
	if !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), "block size must be a multiple of transfer size") {
		t.Errorf("err = %v", err)
	}
	o = opts(t, "POSIX", func(o *bench.Options) { o.TestFile = "/nonexistent-dir/x" })
	_, _, err = runRanks(t, 2, o, nil)
	if err == nil || !strings.Contains(err.Error(), "directory /nonexistent-dir does not exist") {
		t.Errorf("missing directory: %v", err)
	}
	// Under a launcher no Check ran before the ranks: the ranks refuse a
	// transfer size their host cannot hold, instead of dying in make.
	o = opts(t, "DUMMY", func(o *bench.Options) { o.TransferSize, o.BlockSize = 1<<40, 1<<40 })
	_, _, err = runRanks(t, 2, o, func() backend.Driver { return &dummy.Driver{} })
	if !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), "2 ranks on this host would need 4.0 TiB") {
		t.Errorf("-t 1t: %v", err)
	}
	o = opts(t, "MMAP", func(o *bench.Options) { o.FsyncPerWrite, o.TransferSize = true, 100<<3 })
	o.BlockSize = 800 * 4
	_, _, err = runRanks(t, 1, o, func() backend.Driver { return &mmap.Driver{} })
	if !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), "PAGESIZE") {
		t.Errorf("mmap -Y: %v", err)
	}
}

// Text and JSON at once: the chosen format goes to summaryFile, the text
// tables to stdout.
func TestSummaryFileJSONAndText(t *testing.T) {
	dir := t.TempDir()
	o := opts(t, "POSIX", func(o *bench.Options) {
		o.SummaryFormat, o.SummaryFile, o.RankCSV = bench.FormatJSON, filepath.Join(dir, "s.json"), filepath.Join(dir, "r.csv")
	})
	_, out, err := runRanks(t, 2, o, nil)
	if err != nil || !strings.Contains(out, "access    bw(MiB/s)") {
		t.Fatalf("%v\n%s", err, out)
	}
	checkJSONFile(t, o.SummaryFile)
	checkRankCSV(t, o.RankCSV, 2)
}

// IOR's -g, -E, -G and -T.
func TestIntraTestBarriersUseExistingSignatureMaxTime(t *testing.T) {
	posixDrv := func() backend.Driver { return &posix.Driver{} }

	t.Run("g", func(t *testing.T) {
		// Two more barriers per rank and phase; the run still verifies.
		count := func(g bool) int64 {
			o := opts(t, "POSIX", func(o *bench.Options) { o.IntraTestBarriers = g; o.CheckWrite, o.CheckRead = false, false })
			var n atomic.Int64
			_, _, err := runCounting(t, 2, o, posixDrv, &n)
			if err != nil {
				t.Fatal(err)
			}
			return n.Load()
		}
		without, with := count(false), count(true)
		if with-without != 2*2*2 { // 2 ranks x 2 phases x 2 barriers
			t.Fatalf("-g added %d barriers, want 8 (%d without, %d with)", with-without, without, with)
		}
	})

	t.Run("E", func(t *testing.T) {
		// A tail beyond what the test writes survives -E and goes without it.
		for _, e := range []bool{false, true} {
			o := opts(t, "POSIX", func(o *bench.Options) { o.UseExistingFile = e; o.KeepFile = true; o.Segments = 1 })
			tail := []byte("tail beyond the test's bytes")
			old := append(make([]byte, o.BlockSize*2), tail...)
			if err := os.WriteFile(o.TestFile, old, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := runRanks(t, 2, o, posixDrv); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(o.TestFile)
			if err != nil {
				t.Fatal(err)
			}
			if kept := bytes.HasSuffix(got, tail); kept != e {
				t.Errorf("-E=%v: old tail kept = %v (file %d bytes)", e, kept, len(got))
			}
		}
	})

	t.Run("G", func(t *testing.T) {
		// A read check with another signature than the writer's fails.
		o := opts(t, "POSIX", func(o *bench.Options) {
			o.Signature, o.Read, o.CheckRead, o.KeepFile, o.Repetitions = 7, false, false, true, 1
		})
		if _, _, err := runRanks(t, 2, o, posixDrv); err != nil {
			t.Fatal(err)
		}
		for sig, ok := range map[int64]bool{7: true, 8: false} {
			r := o
			r.Signature, r.Write, r.CheckWrite, r.Read, r.CheckRead = sig, false, false, true, true
			_, _, err := runRanks(t, 2, r, posixDrv)
			if (err == nil) != ok || (!ok && !errors.Is(err, bench.ErrVerify)) {
				t.Errorf("-G %d reading data written with -G 7: %v", sig, err)
			}
		}
	})

	t.Run("T", func(t *testing.T) {
		// A clock that gains a minute per reading: -T 2 lets two of five
		// repetitions start.
		var mu sync.Mutex
		now := time.Unix(0, 0)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Minute)
			return now
		}
		o := opts(t, "DUMMY", func(o *bench.Options) { o.MaxMinutes, o.Repetitions = 2, 5 })
		rep, _, err := runClock(t, 2, o, clock)
		if err != nil {
			t.Fatal(err)
		}
		iters := map[int]bool{}
		for _, r := range rep.Results {
			iters[r.Iter] = true
		}
		if len(iters) != 2 {
			t.Fatalf("-T 2 with a minute per repetition ran %d repetitions, want 2", len(iters))
		}
	})
}

// IOR's warnings go to Config.Stderr on rank 0, never to the process's own
// stderr, so a caller that runs the engine in process (tune calibrate, a
// test) sees them.
func TestWarningsGoToConfiguredStderr(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     bench.Options
		clock func() time.Time
		want  string
	}{
		{
			name: "-T reached",
			o:    opts(t, "DUMMY", func(o *bench.Options) { o.MaxMinutes, o.Repetitions = 2, 5 }),
			// A minute per reading: two of five repetitions start.
			clock: func() func() time.Time {
				var mu sync.Mutex
				now := time.Unix(0, 0)
				return func() time.Time {
					mu.Lock()
					defer mu.Unlock()
					now = now.Add(time.Minute)
					return now
				}
			}(),
			want: "WARNING: maximum time (-T 2 minutes) reached: stopping after 2 of 5 repetitions\n",
		},
		{
			name: "stonewalling status missing",
			o: opts(t, "DUMMY", func(o *bench.Options) {
				o.Write, o.CheckWrite, o.CheckRead = false, false, false
				o.StoneWallStatusFile = filepath.Join(t.TempDir(), "missing")
			}),
			want: "WARNING: Could not read back the stonewalling status from ",
		},
		{
			name: "aggregate size differs",
			o: func() bench.Options {
				o := opts(t, "POSIX", func(o *bench.Options) {
					o.Read, o.CheckWrite, o.CheckRead, o.UseExistingFile, o.Segments = false, false, false, true, 1
				})
				// -E writes into the existing file, which is larger than the
				// run's aggregate.
				if err := os.WriteFile(o.TestFile, make([]byte, 2*2*o.BlockSize), 0o644); err != nil {
					t.Fatal(err)
				}
				return o
			}(),
			want: "WARNING: Stat() of aggregate file size      = 1048576\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr [2]bytes.Buffer
			_, out, err := runConfigured(t, 2, tc.o, nil, func(cfg *bench.Config) {
				cfg.Stderr = &stderr[cfg.Comm.Rank()]
				if tc.clock != nil {
					cfg.Clock = tc.clock
				}
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := stderr[0].String(); !strings.Contains(got, tc.want) {
				t.Errorf("rank 0's Stderr = %q, want it to contain %q", got, tc.want)
			}
			if strings.Contains(out, "WARNING") {
				t.Errorf("a warning in the report:\n%s", out)
			}
			if stderr[1].Len() > 0 {
				t.Errorf("rank 1 warned: %q", stderr[1].String())
			}
		})
	}
}

// failingComm fails every barrier after the first `after`.
type failingComm struct {
	bench.Comm
	n     *atomic.Int64
	after int64
}

func (c failingComm) Barrier(ctx context.Context) error {
	if c.n.Add(1) > c.after {
		return errors.New("barrier failed (test)")
	}
	return c.Comm.Barrier(ctx)
}

// TestFailedRunLeavesNoPartialReports: a run that failed after its
// reports were opened (a full disk, a Ctrl-C) left a truncated
// -O summaryFile and per-rank CSV under the names asked for, which `pario
// tune search --objective bench` and `tune calibrate` then read. They are
// now written beside their names and renamed into place only when the
// run succeeds.
func TestFailedRunLeavesNoPartialReports(t *testing.T) {
	dir := t.TempDir()
	o := opts(t, "POSIX", func(o *bench.Options) {
		o.SummaryFormat, o.SummaryFile, o.RankCSV = bench.FormatJSON, filepath.Join(dir, "s.json"), filepath.Join(dir, "r.csv")
		o.Repetitions = 3
	})
	var total atomic.Int64
	if _, _, err := runCounting(t, 1, o, nil, &total); err != nil {
		t.Fatal(err)
	}
	checkJSONFile(t, o.SummaryFile)
	for _, f := range []string{o.SummaryFile, o.RankCSV} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int64
	_, _, err := runConfigured(t, 1, o, nil, func(cfg *bench.Config) {
		cfg.Comm = failingComm{cfg.Comm, &n, total.Load() / 2}
	})
	if err == nil {
		t.Fatal("the run with failing barriers succeeded")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("after a failed run: %s left in the output directory", e.Name())
	}
}
