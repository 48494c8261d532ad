package mcmc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/pario/pario/mfg"
)

// Comm is what the workload needs of its ranks; *rank.Comm has it.
type Comm interface {
	Rank() int
	Size() int
	Barrier(ctx context.Context) error
	Gather(ctx context.Context, root int, data []byte) ([][]byte, error)
	Broadcast(ctx context.Context, root int, data []byte) ([]byte, error)
}

// ListWriter writes p to the extents of a file, in order: p holds the
// extents' bytes one after the other. A pario file does it with one
// request per server, a POSIX file with one pwrite per extent.
type ListWriter interface {
	WriteList(ctx context.Context, exts []mfg.Extent, p []byte) error
}

// IO is the output mode.
type IO uint8

const (
	// IONone computes every line but writes none: the no-I/O baseline.
	IONone IO = iota + 1
	// IOSerial is MrBayes' many-to-one: every rank sends its lines to
	// rank 0, which writes the 2 x nruns files.
	IOSerial
	// IOMFG is mapping at first generation: every rank writes its view
	// of the one parallel file.
	IOMFG
)

func (m IO) String() string {
	switch m {
	case IONone:
		return "none"
	case IOSerial:
		return "serial"
	case IOMFG:
		return "mfg"
	}
	return fmt.Sprintf("IO(%d)", uint8(m))
}

// ParseIO reads "none", "serial" or "mfg".
func ParseIO(s string) (IO, error) {
	for _, m := range []IO{IONone, IOSerial, IOMFG} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, invalid("io mode %q: want none, serial or mfg", s)
}

// Output says where the lines go.
type Output struct {
	Mode IO
	// Lambda is the generations of lines kept in memory and written at
	// once (MFG; serial writes every sampled generation, as MrBayes).
	Lambda int64
	// Create opens a serial output file at rank 0 (IOSerial).
	Create func(name string) (io.WriteCloser, error)
	// Base names the serial files: Base.run<k>.t and .p, or Base.t and
	// Base.p for one run, as MrBayes names them.
	Base string
	// File is the parallel file (IOMFG), at every rank.
	File ListWriter
	// CPUShare, if in (0, 1), is the share of a CPU this rank gets on its
	// emulated node (cpu.go): its compute phases are stretched to take
	// 1/CPUShare as long.
	CPUShare float64
	// ChainWork is the compute time one chain costs per generation,
	// spent sleeping (cpu.go's compute phase, stretched by CPUShare like
	// the rest). The simulated chains compute almost nothing; a real
	// chain's likelihood at 1024 taxa took the thesis' CPUs milliseconds,
	// and the compute/I-O ratio decides where more processes stop paying.
	ChainWork time.Duration
}

// FileName is run r's serial file of section s.
func FileName(base string, runs, r, s int) string {
	ext := ".t"
	if s == SectionP {
		ext = ".p"
	}
	if runs == 1 {
		return base + ext
	}
	return fmt.Sprintf("%s.run%d%s", base, r+1, ext)
}

// Stats is what one rank did.
type Stats struct {
	Samples  int64 // sampled generations
	Writes   int64 // writes of a batch of lambda generations with something to write
	Extents  int64 // extents in those writes
	Bytes    int64 // bytes this rank wrote (serial: rank 0 writes all)
	Moves    int64 // I/O swaps seen on the runs whose first chain is on this rank
	MaxShare int   // the most runs this rank wrote in one generation
	// Compute and IO are the rank's time in its two phases (cpu.go):
	// computing chains and lines, and writing them (the list write and the
	// barrier after it; serial: the gather and, at rank 0, the files).
	Compute, IO time.Duration
	// Stretched is the part of Compute the emulated CPU share added.
	Stretched time.Duration
}

// Run runs p's workload on rank c.Rank() of c.Size() = p.Procs and writes
// its lines to out. Every rank must call it with the same p and out.Mode.
func Run(ctx context.Context, c Comm, p Params, out Output) (Stats, error) {
	if err := p.Validate(); err != nil {
		return Stats{}, err
	}
	if c.Size() != p.Procs {
		return Stats{}, invalid("%d processes configured, %d ranks running", p.Procs, c.Size())
	}
	m, err := mfg.New(p.Desc())
	if err != nil {
		return Stats{}, fmt.Errorf("mcmc: %w", err)
	}
	lambda := out.Lambda
	switch out.Mode {
	case IONone, IOMFG:
		if lambda < 1 {
			return Stats{}, invalid("lambda must be at least 1, got %d", lambda)
		}
		if out.Mode == IOMFG && out.File == nil {
			return Stats{}, invalid("mfg output without a file")
		}
	case IOSerial:
		lambda = 1
		if out.Create == nil {
			return Stats{}, invalid("serial output without a way to create files")
		}
	default:
		return Stats{}, invalid("output mode %v", out.Mode)
	}
	w := &worker{p: p, m: m, c: c, out: out, rank: c.Rank()}
	w.lo, w.hi = p.Config().RunsOf(w.rank)
	for r := w.lo; r < w.hi; r++ {
		w.runs = append(w.runs, p.NewRun(r))
	}
	w.mark = time.Now()
	err = w.run(ctx, lambda)
	if w.files != nil {
		err = errors.Join(err, w.closeFiles(err == nil))
		if perr := w.phase(ctx, phaseIO); err == nil {
			err = perr
		}
	}
	return w.st, err
}

type worker struct {
	p        Params
	m        *mfg.Map
	c        Comm
	out      Output
	rank     int
	lo, hi   int
	runs     []*RunState
	st       Stats
	files    []io.WriteCloser // serial, rank 0: run r's section s is files[2r+s]
	buf, msg []byte
	mark     time.Time // the end of the last phase
}

func (w *worker) run(ctx context.Context, lambda int64) error {
	if w.out.Mode == IOSerial {
		// Rank 0 opens the files; the others learn whether it could, so
		// that every rank fails with its reason instead of waiting.
		var status []byte
		var openErr error
		if w.rank == 0 {
			if openErr = w.openFiles(); openErr != nil {
				status = []byte(openErr.Error())
			}
		}
		got, err := w.c.Broadcast(ctx, 0, status)
		switch {
		case openErr != nil:
			return openErr
		case err != nil:
			return fmt.Errorf("mcmc: rank %d: waiting for rank 0 to open the files: %w", w.rank, err)
		case len(got) > 0:
			return fmt.Errorf("mcmc: rank %d: rank 0 could not open the serial files: %s", w.rank, got)
		}
		if err := w.phase(ctx, phaseIO); err != nil {
			return err
		}
	}
	nb, err := w.m.Batches(lambda)
	if err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	runs := w.p.Runs
	holders := make([]mfg.Assignment, lambda)
	colds := make([][]int, lambda)
	for i := range holders {
		holders[i] = make(mfg.Assignment, runs)
		for r := range holders[i] {
			holders[i][r] = -1 // runs this rank holds no chain of
		}
		colds[i] = make([]int, runs)
	}
	prev := make([]int, len(w.runs))
	for k, u := range w.runs {
		prev[k] = u.Holder()
	}
	cfg := w.p.Config()
	mine := 0 // chains this rank computes
	for ch := w.lo * w.p.Chains; ch < w.hi*w.p.Chains; ch++ {
		if cfg.RankOf(ch) == w.rank {
			mine++
		}
	}
	var done int64 // generations computed
	for b := range nb {
		first, n, err := w.m.Batch(lambda, b)
		if err != nil {
			return fmt.Errorf("mcmc: %w", err)
		}
		for i := range n {
			gen := w.m.Gen(first + i)
			share := 0
			for k, u := range w.runs {
				for u.Gen() < gen {
					u.Step()
				}
				h := u.Holder()
				if h != prev[k] {
					// Counted once, by the rank of the run's first chain.
					if w.p.Config().RankOf(u.r*w.p.Chains) == w.rank {
						w.st.Moves++
					}
					prev[k] = h
				}
				holders[i][u.r], colds[i][u.r] = h, u.Cold()
				if h == w.rank {
					share++
				}
			}
			w.st.MaxShare = max(w.st.MaxShare, share)
			if err := w.work(ctx, time.Duration(gen-done)*time.Duration(mine)*w.out.ChainWork); err != nil {
				return err
			}
			done = gen
		}
		w.st.Samples += n
		switch w.out.Mode {
		case IOSerial:
			err = w.serial(ctx, first, holders[0], colds[0])
		default:
			err = w.mfg(ctx, first, holders[:n], colds[:n])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mfg fills the buffer of this rank's view of samples [first,
// first+len(holders)) and writes it with one vectored request.
func (w *worker) mfg(ctx context.Context, first int64, holders []mfg.Assignment, colds [][]int) error {
	pieces, err := w.m.ViewRuns(w.rank, w.lo, w.hi, first, holders)
	if err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	w.buf = w.buf[:0]
	for _, pc := range pieces {
		switch pc.Kind {
		case mfg.Header:
			w.buf = append(w.buf, w.p.Header(pc.Section)...)
		case mfg.Trailer:
			w.buf = append(w.buf, w.p.Trailer(pc.Section)...)
		case mfg.Records:
			for s := pc.First; s < pc.First+pc.Count; s++ {
				w.buf = w.p.appendLine(w.buf, pc.Section, pc.Run, colds[s-first][pc.Run], w.m.Gen(s))
			}
		}
	}
	if err := w.phase(ctx, phaseCompute); err != nil {
		return err
	}
	if len(pieces) > 0 && w.out.Mode == IOMFG {
		exts := mfg.Extents(pieces)
		if err := w.out.File.WriteList(ctx, exts, w.buf); err != nil {
			return fmt.Errorf("mcmc: rank %d: write samples %d..%d: %w", w.rank, first, first+int64(len(holders))-1, err)
		}
		w.st.Writes++
		w.st.Extents += int64(len(exts))
		w.st.Bytes += int64(len(w.buf))
	}
	if w.out.Mode == IOMFG {
		if err := w.c.Barrier(ctx); err != nil {
			return fmt.Errorf("mcmc: rank %d: barrier after samples %d..: %w", w.rank, first, err)
		}
	}
	return w.phase(ctx, phaseIO)
}

// serial sends this rank's lines of sample i to rank 0, which appends
// every run's lines to its files in run order.
func (w *worker) serial(ctx context.Context, i int64, holders mfg.Assignment, colds []int) error {
	gen := w.m.Gen(i)
	w.msg = w.msg[:0]
	for r := w.lo; r < w.hi; r++ {
		if holders[r] != w.rank {
			continue
		}
		w.msg = binary.AppendUvarint(w.msg, uint64(r))
		for s := range 2 {
			start := len(w.msg)
			w.msg = append(w.msg, make([]byte, 10)...) // room for the length
			body := len(w.msg)
			w.msg = w.p.appendLine(w.msg, s, r, colds[r], gen)
			n := binary.PutUvarint(w.msg[start:], uint64(len(w.msg)-body))
			w.msg = append(w.msg[:start+n], w.msg[body:]...)
		}
	}
	if err := w.phase(ctx, phaseCompute); err != nil {
		return err
	}
	all, err := w.c.Gather(ctx, 0, w.msg)
	if err != nil {
		return fmt.Errorf("mcmc: rank %d: gather of generation %d: %w", w.rank, gen, err)
	}
	if w.rank != 0 {
		return w.phase(ctx, phaseIO)
	}
	lines := make([][2][]byte, w.p.Runs)
	for k, m := range all {
		for len(m) > 0 {
			r, n := binary.Uvarint(m)
			if n <= 0 || r >= uint64(w.p.Runs) || lines[r][0] != nil {
				return invalid("generation %d: bad lines from rank %d", gen, k)
			}
			m = m[n:]
			for s := range 2 {
				l, n := binary.Uvarint(m)
				if n <= 0 || l > uint64(len(m)-n) {
					return invalid("generation %d: bad lines from rank %d", gen, k)
				}
				lines[r][s] = m[n : n+int(l)]
				m = m[n+int(l):]
			}
		}
	}
	for r := range lines {
		for s := range 2 {
			if lines[r][s] == nil {
				return invalid("generation %d: no rank sent run %d's lines", gen, r)
			}
			if err := w.write(2*r+s, lines[r][s]); err != nil {
				return err
			}
		}
	}
	return w.phase(ctx, phaseIO)
}

func (w *worker) write(f int, b []byte) error {
	if _, err := w.files[f].Write(b); err != nil {
		return fmt.Errorf("mcmc: write %s: %w", FileName(w.out.Base, w.p.Runs, f/2, f%2), err)
	}
	w.st.Bytes += int64(len(b))
	return nil
}

// openFiles creates the 2 x nruns files and writes their headers: all
// open for the whole run, as MrBayes keeps them (and so it meets the
// open-file limit at 512 runs).
func (w *worker) openFiles() error {
	w.files = make([]io.WriteCloser, 0, 2*w.p.Runs)
	for r := range w.p.Runs {
		for s := range 2 {
			name := FileName(w.out.Base, w.p.Runs, r, s)
			f, err := w.out.Create(name)
			if err != nil {
				return fmt.Errorf("mcmc: serial output: file %d of %d (%s): %w", len(w.files)+1, 2*w.p.Runs, name, err)
			}
			w.files = append(w.files, f)
			if err := w.write(len(w.files)-1, []byte(w.p.Header(s))); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *worker) closeFiles(trailers bool) error {
	var errs []error
	for f, file := range w.files {
		if t := w.p.Trailer(f % 2); trailers && t != "" {
			errs = append(errs, w.write(f, []byte(t)))
		}
		if err := file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("mcmc: close %s: %w", FileName(w.out.Base, w.p.Runs, f/2, f%2), err))
		}
	}
	return errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...)
}

// Summary is a run's result over all ranks, for the report.
type Summary struct {
	Params  Params
	Mode    IO
	Lambda  int64
	Target  string  // the parallel file, the serial files' base, or ""
	Layout  string  // the parallel file's distribution, if a pario file
	Seconds float64 // the slowest rank's time
	Bytes   int64   // bytes written by all ranks
	Writes  int64   // list writes (MFG) of all ranks
	Extents int64   // extents in those writes
	Moves   int64   // I/O swaps seen

	// The phases of the slowest rank in each (Stats.Compute, Stats.IO),
	// in seconds, and what the thesis' metrics need (metrics.go).
	Compute, IO float64
	Servers     int     // I/O servers of the cluster (1 for a POSIX file)
	Reached     int     // servers one generation's writes reach (delta_iox)
	CPUs        int     // CPUs of the emulated cluster, for efficiency (eq. 7.2)
	Baseline    float64 // the serial version's time, seconds (0: none given)
}

// Report is the summary as text.
func (s Summary) Report(w io.Writer) error {
	p := s.Params
	m, err := mfg.New(p.Desc())
	if err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	pat, err := p.Config().Classify(p.Config().Initial())
	if err != nil {
		return fmt.Errorf("mcmc: %w", err)
	}
	rate := 0.0
	if s.Seconds > 0 {
		rate = float64(s.Bytes) / s.Seconds / 1e6
	}
	_, err = fmt.Fprintf(w, "p(MC)^3 %d runs x %d chains on %d processes, %d taxa, MrBayes %s lines (%d B per run and sample)\n"+
		"generations    %d, %d sampled; first pattern %s, %d I/O swaps possible (Tsio_1), %d seen\n"+
		"output         %s%s%s, lambda %d\n"+
		"file           %d B (data per generation %d B)\n"+
		"written        %d B in %d list writes of %d extents\n"+
		"time           %.3f s (slowest rank), %.2f MB/s\n",
		p.Runs, p.Chains, p.Procs, p.Taxa, p.Format, p.TWidth()+p.PWidth(),
		p.Gens, m.Samples(), pat, p.Config().IOSwaps(), s.Moves,
		s.Mode, prefixed(" ", s.Target), prefixed(" ", s.Layout), s.Lambda,
		m.Size(), m.DataGen(),
		s.Bytes, s.Writes, s.Extents,
		s.Seconds, rate)
	if err != nil {
		return fmt.Errorf("mcmc: report: %w", err)
	}
	return s.reportMetrics(w, m.DataGen())
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
