package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/pario/pario/client"
	"github.com/pario/pario/internal/atomicfile"
	"github.com/pario/pario/mfg"
	"github.com/pario/pario/mfg/mcmc"
	"github.com/pario/pario/wire/throttle"
)

// The outputs of pario mcmc and pario mcmc split: the parallel file
// (--io mfg), and MrBayes' .t/.p files (--io serial, split), written under
// temporary names and renamed into place once complete.

// createParallel creates (rank 0) or opens the parallel file.
func createParallel(ctx context.Context, c *client.Client, p mcmc.Params, mf *mcmcFlags, servers int, create bool) (mcmc.ListWriter, func() error, string, error) {
	if !isStorePath(mf.opt.Out) {
		flags := os.O_WRONLY
		if create {
			flags |= os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(mf.opt.Out, flags, 0o644)
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: %w", err)
		}
		return posixList{f}, f.Close, "", nil
	}
	path := storePath(mf.opt.Out)
	if !create {
		f, err := c.Open(ctx, path)
		if err != nil {
			return nil, nil, "", fmt.Errorf("mcmc: %w", err)
		}
		return parioList{f}, nil, "", nil
	}
	l, err := mf.opt.FileLayout(p, servers)
	if err != nil {
		return nil, nil, "", usageError{err}
	}
	f, err := c.Create(ctx, path, client.CreateOptions{Mode: client.DefaultFileMode, Layout: l})
	if err != nil {
		return nil, nil, "", fmt.Errorf("mcmc: %w", err)
	}
	return parioList{f}, nil, f.Attr().Layout.String(), nil
}

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
