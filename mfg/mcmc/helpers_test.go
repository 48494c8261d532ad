package mcmc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/pario/pario/mfg"
	"github.com/pario/pario/rank"
)

// memFile is a parallel file in memory that counts the writes of every
// byte and the bytes each rank wrote.
type memFile struct {
	mu     sync.Mutex
	data   []byte
	times  []int
	byRank map[int]int64
	calls  map[int]int
}

func newMemFile() *memFile { return &memFile{byRank: map[int]int64{}, calls: map[int]int{}} }

// rankWriter is the file as one rank sees it.
type rankWriter struct {
	f    *memFile
	rank int
}

func (w rankWriter) WriteList(_ context.Context, exts []mfg.Extent, p []byte) error {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, e := range exts {
		n += e.Len
	}
	if n != int64(len(p)) {
		return fmt.Errorf("extents hold %d bytes, buffer %d", n, len(p))
	}
	for _, e := range exts {
		for int64(len(f.data)) < e.End() {
			f.data = append(f.data, 0)
			f.times = append(f.times, 0)
		}
		copy(f.data[e.Off:], p[:e.Len])
		for i := e.Off; i < e.End(); i++ {
			f.times[i]++
		}
		p = p[e.Len:]
	}
	f.byRank[w.rank] += n
	f.calls[w.rank]++
	return nil
}

// memFS holds serial files in memory.
type memFS struct {
	mu    sync.Mutex
	files map[string]*bytes.Buffer
	order []string
	limit int // refuse more than this many open files; 0: no limit
	open  int
}

func newMemFS() *memFS { return &memFS{files: map[string]*bytes.Buffer{}} }

type memWC struct {
	fs *memFS
	*bytes.Buffer
}

func (w memWC) Close() error {
	w.fs.mu.Lock()
	w.fs.open--
	w.fs.mu.Unlock()
	return nil
}

func (fs *memFS) create(name string) (io.WriteCloser, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.limit > 0 && fs.open >= fs.limit {
		return nil, fmt.Errorf("open %s: too many open files", name)
	}
	if _, ok := fs.files[name]; ok {
		return nil, fmt.Errorf("%s created twice", name)
	}
	b := new(bytes.Buffer)
	fs.files[name] = b
	fs.order = append(fs.order, name)
	fs.open++
	return memWC{fs, b}, nil
}

// run runs p on p.Procs local ranks.
func run(t testing.TB, p Params, out func(rank int) Output) []Stats {
	t.Helper()
	stats := make([]Stats, p.Procs)
	err := rank.RunLocal(context.Background(), p.Procs, func(ctx context.Context, c *rank.Comm) error {
		st, err := Run(ctx, c, p, out(c.Rank()))
		stats[c.Rank()] = st
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func runMFG(t testing.TB, p Params, lambda int64) (*memFile, []Stats) {
	f := newMemFile()
	st := run(t, p, func(k int) Output { return Output{Mode: IOMFG, Lambda: lambda, File: rankWriter{f, k}} })
	return f, st
}

func runSerial(t testing.TB, p Params) *memFS {
	fs := newMemFS()
	run(t, p, func(int) Output { return Output{Mode: IOSerial, Create: fs.create, Base: "out"} })
	return fs
}

// concat is the serial files in format order: per run .t then .p.
func concat(fs *memFS, runs int) []byte {
	var b []byte
	for r := range runs {
		for s := range 2 {
			b = append(b, fs.files[FileName("out", runs, r, s)].Bytes()...)
		}
	}
	return b
}
