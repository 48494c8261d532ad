package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/units"
)

func newCpCommand() *cobra.Command {
	var (
		layout  string
		hints   []string
		chunk   = int64(8 << 20)
		workers int
		noSync  bool
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a file into, out of, or within the store",
		Long: `Copy one file. Paths in the store start with "pario:"; others are local.
Chunks move in parallel (--workers), the copy is synced to disk on the
I/O servers (or locally) before cp returns, and a progress bar shows on a
terminal. A new store file takes --layout, --hint, or its directory's default;
an existing one is overwritten and keeps its layout (cp warns if you gave one).
A store destination that another client removes, replaces or gives a new
layout while cp writes it fails the copy (stale file handle).

  pario mkdir /runs
  pario cp big.dat pario:/runs/big.dat
  pario cp --layout simple_stripe:strip_size=1m big.dat pario:/runs/big-1m.dat
  pario cp --hint 'varstrip_dist:string:strips=0:200000;1:4000000' big.dat pario:/runs/big-var.dat
  pario cp pario:/runs/big.dat ./copy.dat`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			chunkSize := chunk
			if chunkSize > 64<<20 {
				return usageError{fmt.Errorf("--chunk %s: want a size up to 64m", units.FormatSize(chunk))}
			}
			opts := client.CreateOptions{Mode: client.DefaultFileMode}
			var err error
			if opts.Layout, err = parseOptionalLayout(layout); err != nil {
				return usageError{err}
			}
			if len(hints) > 0 {
				opts.Hints = map[string]string{}
				for _, h := range hints {
					m, err := dist.ParseHintString(h)
					if err != nil {
						return usageError{err}
					}
					for k, v := range m {
						opts.Hints[k] = v
					}
				}
				// Checked here, as --layout is: a bad hint is the call's
				// mistake (status 2), not the metadata server's failure.
				if _, err := dist.ParseHints(opts.Hints); err != nil {
					return usageError{fmt.Errorf("--hint: %w", err)}
				}
			}
			if workers < 1 {
				return usageError{fmt.Errorf("--workers %d: want at least 1 transfer in flight", workers)}
			}
			src, dst := args[0], args[1]
			if !isStorePath(src) && !isStorePath(dst) {
				return usageError{errors.New(`neither path is in the store: prefix store paths with "pario:"`)}
			}
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				start := time.Now()
				n, err := copyFile(ctx, c, src, dst, opts, copyOptions{chunk: chunkSize, workers: workers, sync: !noSync, progress: !quiet})
				if err != nil {
					return err
				}
				secs := time.Since(start).Seconds()
				if !quiet {
					fmt.Fprintf(os.Stderr, "copied %s in %.2fs (%.1f MiB/s)\n", units.FormatBytes(n), secs, float64(n)/(1<<20)/secs)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&layout, "layout", "", "layout of a new store file, e.g. simple_stripe:strip_size=1m")
	f.StringArrayVar(&hints, "hint", nil, "create hint key=value (repeatable), e.g. strip_size=1m")
	f.Var(units.SizeFlag(&chunk), "chunk", "bytes per transfer (at most 64m)")
	f.IntVar(&workers, "workers", 4, "transfers in flight")
	f.BoolVar(&noSync, "no-sync", false, "do not sync the copy to disk before returning")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress bar or summary")
	return cmd
}

type copyOptions struct {
	chunk    int64
	workers  int
	sync     bool
	progress bool
}

// endpoint is one side of a copy. Its calls take the command's context, so
// that Ctrl-C (SIGINT) or SIGTERM cancels the requests in flight to the
// servers rather than waiting for them to time out.
type endpoint interface {
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
	WriteAtContext(ctx context.Context, p []byte, off int64) (int, error)
	SyncContext(ctx context.Context) error
	Close() error
}

var _ endpoint = (*client.File)(nil)

// localFile is a local file as an endpoint. A local read or write cannot be
// cancelled once started; a cancelled context stops the next one.
type localFile struct{ *os.File }

func (f localFile) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

func (f localFile) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return f.WriteAt(p, off)
}

func (f localFile) SyncContext(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// fsync(2) of a device such as /dev/null is EINVAL: there is nothing
	// to make durable (`pario cp pario:/big /dev/null` measures reads).
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil
	}
	return f.Sync()
}

func copyFile(ctx context.Context, c *client.Client, src, dst string, opts client.CreateOptions, co copyOptions) (int64, error) {
	var (
		in   endpoint
		size int64
	)
	if isStorePath(src) {
		f, err := c.Open(ctx, storePath(src))
		if err != nil {
			return 0, err
		}
		if size, err = f.Size(ctx); err != nil {
			return 0, err
		}
		in = f
	} else {
		// O_NONBLOCK: opening a FIFO with no writer would wait for one,
		// beyond the reach of Ctrl-C, only to be refused below. It changes
		// nothing for the regular files cp copies.
		f, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, err
		}
		if !st.Mode().IsRegular() {
			f.Close()
			return 0, fmt.Errorf("%s is not a regular file", src)
		}
		in, size = localFile{f}, st.Size()
	}
	defer in.Close()

	var out endpoint
	if isStorePath(dst) {
		p := storePath(dst)
		a, err := c.Lookup(ctx, p)
		if err == nil && a.Kind == meta.KindDir {
			p = path.Join(p, filepath.Base(storePath(src)))
			a, err = c.Lookup(ctx, p)
		}
		// Creating the destination truncates it: copying a file onto
		// itself, under any spelling of its path, would empty it.
		if sf, ok := in.(*client.File); ok && err == nil && a.ID == sf.Attr().ID {
			return 0, fmt.Errorf("cp: %s and %s are the same file", src, dst)
		}
		if err == nil && (!opts.Layout.IsZero() || len(opts.Hints) > 0) {
			// As os.Create: the bytes are replaced, the file is not.
			fmt.Fprintf(os.Stderr, "pario cp: pario:%s exists and keeps its layout %s: --layout and --hint choose a new file's (pario rm it first to change it)\n", p, a.Layout)
		}
		f, err := c.Create(ctx, p, opts)
		if err != nil {
			return 0, err
		}
		out = f
	} else {
		p := dst
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = filepath.Join(p, path.Base(storePath(src)))
		}
		f, err := os.Create(p)
		if err != nil {
			return 0, err
		}
		out = localFile{f}
	}
	defer out.Close()

	var bar *progressbar.ProgressBar
	if co.progress && term.IsTerminal(int(os.Stderr.Fd())) {
		bar = progressbar.DefaultBytes(size, "copying")
	}
	if err := transfer(ctx, in, out, size, co, bar); err != nil {
		if ctx.Err() != nil {
			// The requests' own errors only say "context canceled"; the
			// cause says which signal stopped the copy.
			return 0, fmt.Errorf("cp %s %s: stopped, the copy is incomplete: %w", src, dst, context.Cause(ctx))
		}
		return 0, fmt.Errorf("cp %s %s: %w", src, dst, err)
	}
	if bar != nil {
		bar.Finish()
	}
	return size, out.Close()
}

// transfer copies [0, size) from in to out, syncs out if co says so,
// and checks that another client did not remove a store destination or
// change its layout meanwhile.
func transfer(ctx context.Context, in, out endpoint, size int64, co copyOptions, bar *progressbar.ProgressBar) error {
	err := copyParallel(ctx, in, out, size, co, bar)
	if err == nil && co.sync {
		err = out.SyncContext(ctx)
	}
	if f, ok := out.(*client.File); ok && err == nil {
		// The writes and the sync of a file another client removed
		// meanwhile succeed until its datafiles are reaped, and those of
		// a file given a new layout meanwhile place bytes by the old one:
		// the copy would end with status 0 and nothing, or scrambled
		// bytes, in the store.
		err = f.Check(ctx)
	}
	return err
}

// copyParallel moves [0, size) from in to out in chunks, several at a time.
func copyParallel(ctx context.Context, in, out endpoint, size int64, co copyOptions, bar *progressbar.ProgressBar) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < max(1, co.workers); w++ {
		wg.Go(func() {
			buf := make([]byte, co.chunk)
			for ctx.Err() == nil {
				off := next.Add(co.chunk) - co.chunk
				if off >= size {
					return
				}
				b := buf[:min(co.chunk, size-off)]
				n, err := in.ReadAtContext(ctx, b, off)
				if err == io.EOF && n == len(b) {
					err = nil
				}
				if err == io.EOF {
					// Another client truncated the source meanwhile: a
					// bare "EOF" said neither that nor where.
					err = fmt.Errorf("the source has no byte %d any more: it had %d bytes when the copy began and was cut meanwhile: %w", off+int64(n), size, io.ErrUnexpectedEOF)
				}
				if err == nil {
					_, err = out.WriteAtContext(ctx, b, off)
				}
				if err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
				if bar != nil {
					_ = bar.Add(len(b))
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return parent.Err()
}
