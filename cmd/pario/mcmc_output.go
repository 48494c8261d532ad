package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/pario/pario/client"
	"github.com/pario/pario/internal/atomicfile"
	"github.com/pario/pario/internal/filekind"
	"github.com/pario/pario/mfg"
	"github.com/pario/pario/mfg/mcmc"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire/throttle"
)

// The outputs of pario mcmc and pario mcmc split: the parallel file
// (--io mfg), and MrBayes' .t/.p files (--io serial, split), written under
// temporary names and renamed into place once complete.

// checkOutput checks, before any rank starts, what the output needs: the
// directory it goes into, a parallel file's name free of a directory or
// a special file (a named pipe would block its open for ever, and cannot
// be written at offsets), a store output's cluster with the I/O servers
// --nodes needs (one per node), and the cluster file that emulates node
// 0's disk for serial files on --nodes. Each rank would say it otherwise.
func checkOutput(ctx context.Context, o mcmc.Options, mode mcmc.IO) error {
	switch {
	case mode == mcmc.IONone:
		return nil
	case mode == mcmc.IOSerial:
		if err := localDir(o.Out); err != nil {
			return err
		}
		if o.Nodes > 0 {
			_, err := loadClusterFile(ctx)
			return err
		}
		return nil
	case !o.InPario:
		if err := localDir(o.Out); err != nil {
			return err
		}
		return parallelTarget(o.Out)
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	final := storePath(o.Out)
	if a, err := c.Lookup(ctx, final); err == nil && a.Kind != meta.KindFile {
		what := "a special file"
		if a.Kind == meta.KindDir {
			what = "a directory"
		}
		return usageError{fmt.Errorf("-o %s: is %s, not a regular file: --io mfg writes one parallel file", o.Out, what)}
	}
	if a, err := c.Lookup(ctx, path.Dir(final)); err != nil || a.Kind != meta.KindDir {
		return fmt.Errorf("-o %s: the store has no directory %s", o.Out, path.Dir(final))
	}
	if n := len(c.Servers()); o.Nodes > n {
		return usageError{fmt.Errorf("--nodes %d: the cluster has %d I/O servers, one per node", o.Nodes, n)}
	}
	return nil
}

// localDir checks that the directory of a local output exists.
func localDir(out string) error {
	dir := filepath.Dir(out)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("-o %s: no directory %s", out, dir)
	}
	return nil
}

// parallelTarget refuses a local parallel file's name that holds
// something other than a regular file.
func parallelTarget(out string) error {
	if st, err := os.Stat(out); err == nil && !st.Mode().IsRegular() {
		return usageError{fmt.Errorf("-o %s: is %s, not a regular file: --io mfg writes the parallel file at offsets", out, filekind.Of(st.Mode()))}
	}
	return nil
}

// runOutput is where one rank's lines go and how they are put in place.
type runOutput struct {
	serial   stagedFiles     // --io serial, rank 0: the .t/.p files
	parallel *stagedParallel // --io mfg, rank 0: the parallel file
	closeOut func() error    // --io mfg, the other ranks: their handle
}

// prepareOutput sets out's destination for this rank and says in sum what
// it is. Rank 0 creates the parallel file under a temporary name; the
// others open it by that name once it has.
func prepareOutput(ctx context.Context, comm *rank.Comm, c *client.Client, p mcmc.Params, mf *mcmcFlags, servers int, sum *mcmc.Summary, out *mcmc.Output) (*runOutput, error) {
	ro := &runOutput{}
	switch out.Mode {
	case mcmc.IOSerial:
		sum.Target = mf.opt.Out
		out.Base, out.Create = mf.opt.Out, ro.serial.create
		if mf.opt.Nodes > 0 {
			// The serial files are on node 0's disk: the emulated one.
			cf, err := loadClusterFile(ctx)
			if err != nil {
				return nil, err
			}
			disk := throttle.New(cf.Emulation.DiskRate, 0)
			out.Create = func(name string) (io.WriteCloser, error) {
				w, err := ro.serial.create(name)
				if err != nil {
					return nil, err
				}
				return throttledFile{ctx, w, disk}, nil
			}
		}
	case mcmc.IOMFG:
		sum.Target = mf.opt.Out
		var tmp string
		var prepErr error
		if comm.Rank() == 0 {
			out.File, ro.parallel, sum.Layout, prepErr = createParallel(ctx, c, p, mf, servers)
			if prepErr == nil {
				tmp = ro.parallel.tmp
				if c != nil {
					sum.Servers, sum.Reached = servers, mcmc.ServersReached(p, sum.Layout, servers)
				}
			}
		}
		// From here rank 0 has its temporary file: a failure, or an
		// interrupt while the ranks agree, removes it (CI saw one left when
		// the interrupt came during Agree).
		if err := mcmc.Agree(ctx, comm, prepErr); err != nil {
			return nil, ro.finish(ctx, err)
		}
		name, err := comm.Broadcast(ctx, 0, []byte(tmp))
		if err != nil {
			return nil, ro.finish(ctx, err)
		}
		if comm.Rank() != 0 {
			if out.File, ro.closeOut, err = openParallel(ctx, c, string(name)); err != nil {
				return nil, err
			}
		}
	}
	return ro, nil
}

// close ends this rank's writing after a run that ended with err: the
// serial files are renamed into place (or removed), the parallel file's
// handle closed.
func (ro *runOutput) close(err error) error {
	if ro.closeOut != nil {
		err = errors.Join(err, ro.closeOut())
	}
	return ro.serial.finish(err)
}

// finish puts the parallel file in place at rank 0 if err is nil (every
// rank has written its part), and removes it otherwise.
func (ro *runOutput) finish(ctx context.Context, err error) error {
	if ro.parallel == nil {
		return err
	}
	return ro.parallel.finish(ctx, err)
}

// stagedParallel is the parallel file of an --io mfg run, created by
// rank 0 under a temporary name beside its own (.NAME.<random>.tmp) and
// renamed into place once every rank has written its part: an
// interrupted or failed run leaves nothing under the name (an MFG file
// has its full size as soon as the last run's first line is written, so
// a partial one looks complete), an older file there stays whole until
// then, and --layout applies to a new file (creating over an existing
// file would keep the old one's layout).
type stagedParallel struct {
	c     *client.Client   // nil: a local file
	local *atomicfile.File // a local file
	final string           // the store path or local path asked for
	tmp   string           // the temporary one
}

// createParallel creates the temporary parallel file at rank 0.
func createParallel(ctx context.Context, c *client.Client, p mcmc.Params, mf *mcmcFlags, servers int) (mcmc.ListWriter, *stagedParallel, string, error) {
	if !isStorePath(mf.opt.Out) {
		if err := parallelTarget(mf.opt.Out); err != nil {
			return nil, nil, "", err
		}
		f, err := atomicfile.Create(mf.opt.Out)
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: %w", err)
		}
		return posixList{f.File}, &stagedParallel{local: f, final: mf.opt.Out, tmp: f.Name()}, "", nil
	}
	l, err := mf.opt.FileLayout(p, servers)
	if err != nil {
		return nil, nil, "", usageError{err}
	}
	final := storePath(mf.opt.Out)
	opts := client.CreateOptions{Mode: client.DefaultFileMode, Layout: l, Exclusive: true}
	for range 10 {
		var suffix [6]byte
		_, _ = rand.Read(suffix[:])
		tmp := path.Join(path.Dir(final), "."+path.Base(final)+"."+hex.EncodeToString(suffix[:])+".tmp")
		f, err := c.Create(ctx, tmp, opts)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: create %s (as %s until complete): %w", mf.opt.Out, tmp, err)
		}
		return parioList{f}, &stagedParallel{c: c, final: final, tmp: tmp}, f.Attr().Layout.String(), nil
	}
	return nil, nil, "", fmt.Errorf("mcmc: create %s: no free temporary name beside it", mf.opt.Out)
}

// openParallel opens the temporary parallel file rank 0 created.
func openParallel(ctx context.Context, c *client.Client, tmp string) (mcmc.ListWriter, func() error, error) {
	if c == nil {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("mcmc: open rank 0's file: %w", err)
		}
		return posixList{f}, f.Close, nil
	}
	f, err := c.Open(ctx, tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("mcmc: open rank 0's file: %w", err)
	}
	return parioList{f}, nil, nil
}

// finish renames the file into place if err is nil, and removes it
// otherwise (also when ctx is done: an interrupted run cleans up).
func (s *stagedParallel) finish(ctx context.Context, err error) error {
	if s.local != nil {
		if err != nil {
			s.local.Abort()
			return err
		}
		if err := s.local.Commit(); err != nil {
			return fmt.Errorf("mcmc: output %s: %w", s.final, err)
		}
		return nil
	}
	if err == nil {
		if err = s.c.Rename(ctx, s.tmp, s.final); err == nil {
			return nil
		}
		err = fmt.Errorf("mcmc: output pario:%s: %w", s.final, err)
	}
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), globalOpTimeout)
	defer cancel()
	if rerr := s.c.Remove(cleanup, s.tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, leftError{fmt.Errorf("mcmc: remove the unfinished pario:%s: %w", s.tmp, rerr)})
	}
	return err
}

// leftError is a failure to remove an unfinished output: said even when
// the run was interrupted, since the output was left behind.
type leftError struct{ error }

type parioList struct{ f *client.File }

func (w parioList) WriteList(ctx context.Context, exts []mfg.Extent, p []byte) error {
	spans := make([]client.Span, len(exts))
	for i, e := range exts {
		spans[i] = client.Span{Off: e.Off, Len: e.Len}
	}
	return w.f.WriteList(ctx, spans, p)
}

// posixList writes a view with one pwrite per extent.
type posixList struct{ f *os.File }

func (w posixList) WriteList(_ context.Context, exts []mfg.Extent, p []byte) error {
	for _, e := range exts {
		if _, err := w.f.WriteAt(p[:e.Len], e.Off); err != nil {
			return err
		}
		p = p[e.Len:]
	}
	return nil
}

// bufferedFile is a serial output file written through stdio-like
// buffering, as MrBayes' fprintf.
type bufferedFile struct {
	*bufio.Writer
	f io.Closer
}

func (b bufferedFile) Close() error {
	return errors.Join(b.Flush(), b.f.Close())
}

// throttledFile writes through an emulated disk.
type throttledFile struct {
	ctx  context.Context
	w    io.WriteCloser
	disk *throttle.Bucket
}

func (t throttledFile) Write(p []byte) (int, error) {
	if err := t.disk.Wait(t.ctx, int64(len(p))); err != nil {
		return 0, err
	}
	return t.w.Write(p)
}

func (t throttledFile) Close() error { return t.w.Close() }

// stagedFiles creates each output under a temporary name beside its own
// (internal/atomicfile) and renames them all into place once everything
// is written (commit), or removes them (abort): a run or split that
// fails, fills the disk or is interrupted leaves no partial .t/.p files
// under the names a reader of MrBayes' output would take for a finished
// run, and an older complete output under those names stays as it was.
type stagedFiles struct {
	mu   sync.Mutex
	made []*atomicfile.File
}

// create opens a temporary file for name, buffered as MrBayes' fprintf.
func (s *stagedFiles) create(name string) (io.WriteCloser, error) {
	f, err := atomicfile.Create(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.made = append(s.made, f)
	s.mu.Unlock()
	return bufferedFile{bufio.NewWriter(f), f}, nil
}

// commit renames every file into place (their writers closed them).
func (s *stagedFiles) commit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.made {
		if err := f.Commit(); err != nil {
			for _, rest := range s.made[i+1:] {
				rest.Abort()
			}
			return fmt.Errorf("mcmc: output %s: %w", f.Final(), err)
		}
	}
	s.made = nil
	return nil
}

// abort removes the temporary files.
func (s *stagedFiles) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.made {
		f.Abort()
	}
	s.made = nil
}

// finish commits the files if err is nil, and removes them otherwise.
func (s *stagedFiles) finish(err error) error {
	if err != nil {
		s.abort()
		return err
	}
	return s.commit()
}

// splitMcmc is pario mcmc split: the parameters and out are checked
// before src is opened, and an interrupted split writes nothing.
func splitMcmc(ctx context.Context, p mcmc.Params, src, out string) error {
	if err := mcmc.CheckSplit(p, out); err != nil {
		return usageError{err}
	}
	var r io.ReaderAt
	var size int64
	if isStorePath(src) {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		f, err := c.Open(ctx, storePath(src))
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		if size, err = f.Size(ctx); err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		r = ctxReaderAt{ctx, f}
	} else {
		// Stat before open: opening a named pipe would wait for a writer.
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("mcmc split %s: is %s, not a regular file: split reads a parallel file at offsets", src, filekind.Of(st.Mode()))
		}
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		defer f.Close()
		if st, err = f.Stat(); err != nil {
			return fmt.Errorf("mcmc split: %w", err)
		}
		r, size = f, st.Size()
	}
	var staged stagedFiles
	err := staged.finish(mcmc.Split(ctx, p, r, size, out, staged.create))
	switch {
	case err != nil && ctx.Err() != nil:
		return exitStatus{code: 130, msg: "mcmc split: interrupted; no output written"}
	case errors.Is(err, mcmc.ErrInvalid):
		return fmt.Errorf("mcmc split %s: %w", src, err)
	}
	return err
}

// ctxReaderAt reads a store file with ctx, so that a split stops when it
// is interrupted.
type ctxReaderAt struct {
	ctx context.Context
	f   *client.File
}

func (r ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return r.f.ReadAtContext(r.ctx, p, off)
}
