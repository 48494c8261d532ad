package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
)

// removingReader is a copy's source that runs change at its first read:
// another client changing the copy's destination while cp writes it.
type removingReader struct {
	endpoint
	once   sync.Once
	change func()
}

func (r *removingReader) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	r.once.Do(r.change)
	return r.endpoint.ReadAtContext(ctx, p, off)
}

// TestCpDestinationRemovedMidCopy: a copy whose destination another
// client removes (or replaces, by a rename over it or a new file of its
// name) while cp writes it fails with ESTALE naming the destination. It
// once succeeded, exit status 0, whenever the copy ended before the
// metadata server's reaper removed the old file's datafiles (about 50 ms
// after the remove): its writes and its sync landed in datafiles about
// to go, and nothing in the store held the copy. So did a copy whose
// destination another client gave a new layout (pario layout set, which
// an empty file allows) after cp opened it: cp's bytes went where the
// old layout puts them, and the file read back scrambled.
func TestCpDestinationRemovedMidCopy(t *testing.T) {
	ctx := context.Background()
	l := startLocal(t, cluster.Config{})
	c, other := dialLocal(t, l), dialLocal(t, l)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, bytes.Repeat([]byte("pario"), 200000), 0o644); err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(dst string) error{
		"removed": func(dst string) error { return other.Remove(ctx, dst) },
		"replaced by a rename": func(dst string) error {
			if _, err := other.Create(ctx, dst+".new", client.CreateOptions{Mode: 0o644, Exclusive: true}); err != nil {
				return err
			}
			return other.Rename(ctx, dst+".new", dst)
		},
		"given a new layout": func(dst string) error {
			l, err := dist.ParseLayout("simple_stripe:strip_size=4096")
			if err != nil {
				return err
			}
			return other.SetLayout(ctx, dst, l) // it is empty yet
		},
		"removed and created again": func(dst string) error {
			if err := other.Remove(ctx, dst); err != nil {
				return err
			}
			_, err := other.Create(ctx, dst, client.CreateOptions{Mode: 0o644, Exclusive: true})
			return err
		},
	}
	i := 0
	for name, change := range changes {
		for _, sync := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sync=%v", name, sync), func(t *testing.T) {
				i++
				dst := fmt.Sprintf("/dst%d", i)
				in, err := os.Open(src)
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close()
				out, err := c.Create(ctx, dst, client.CreateOptions{Mode: 0o644})
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
				r := &removingReader{endpoint: localFile{in}, change: func() {
					if err := change(dst); err != nil {
						t.Errorf("the other client: %v", err)
					}
				}}
				err = transfer(ctx, r, out, 1000000, copyOptions{chunk: 64 << 10, workers: 2, sync: sync}, nil)
				if !errors.Is(err, syscall.ESTALE) || !strings.Contains(fmt.Sprint(err), dst) {
					t.Fatalf("copy to %s, %s meanwhile: %v; want ESTALE naming it", dst, name, err)
				}
			})
		}
	}
}

// TestCpSourceTruncatedMidCopy: a store source that another client
// truncates while cp reads it fails the copy (copyFile's error names the
// source), with an error that says where it ended; it said "EOF" alone.
func TestCpSourceTruncatedMidCopy(t *testing.T) {
	ctx := context.Background()
	l := startLocal(t, cluster.Config{})
	c, other := dialLocal(t, l), dialLocal(t, l)
	src, err := c.Create(ctx, "/src", client.CreateOptions{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1000000
	if _, err := src.WriteAt(bytes.Repeat([]byte("pario"), size/5), 0); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r := &removingReader{endpoint: src, change: func() {
		g, err := other.Open(ctx, "/src")
		if err == nil {
			err = g.Truncate(300000)
		}
		if err != nil {
			t.Errorf("the other client's truncate: %v", err)
		}
	}}
	// One worker: the first chunk to fail is the one the cut falls in.
	err = transfer(ctx, r, localFile{out}, size, copyOptions{chunk: 64 << 10, workers: 1, sync: true}, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "no byte 300000") {
		t.Fatalf("copy of a source truncated to 300000 bytes meanwhile: %v; want io.ErrUnexpectedEOF saying where it ended", err)
	}
}
