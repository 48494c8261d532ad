package template

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/template/annot"
)

// fullFile is a file whose writes at or past full fail as on a full disk.
type fullFile struct {
	*os.File
	full int64
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.full {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

// A photocopy block whose writes the owner cannot make (its disk is full)
// fails at End for its writer alone, as a single write does (the next may
// fit): the writer goes on with a block that fits, and the other ranks'
// blocks follow.
func TestPhotocopyBlockOwnerWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "photo")
	a := ann(t, "p PHOTOCOPY rc wc b main=0")
	if a.Tx != annot.Block {
		t.Fatal("the annotation is not a block transaction")
	}
	ended := make(chan struct{})
	errs := make([]error, 3)
	full := func(r int, f *os.File) File {
		if r == 0 {
			return fullFile{f, 1000}
		}
		return f
	}
	runRanksWrapped(t, 3, path, full, func(ctx context.Context, g *Group, f File) error {
		return ownerFailRank(ctx, g, a, f, ended, errs)
	})
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "no space left on device") {
		t.Errorf("End of a block the owner could not write: %v, want the owner's ENOSPC", errs[1])
	}
	if errs[2] != nil {
		t.Errorf("another rank's block after it: %v", errs[2])
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "fits") {
		t.Errorf("the file holds %q, want the block that fit", b)
	}
}

func ownerFailRank(ctx context.Context, g *Group, a annot.Annotation, f File, ended chan struct{}, errs []error) error {
	s, err := g.Open(ctx, a, f, Bounds{})
	if err != nil {
		return err
	}
	defer s.Close()
	switch g.Comm().Rank() {
	case 1:
		defer close(ended)
		if err := s.Begin(ctx); err != nil {
			return err
		}
		if err := s.WriteAt(ctx, []byte("past the end of the disk"), 2000); err != nil {
			return err
		}
		errs[1] = s.End(ctx)
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := s.Begin(bctx); err != nil {
			return err
		}
		if err := s.WriteAt(ctx, []byte("fits"), 0); err != nil {
			return err
		}
		if err := s.End(ctx); err != nil {
			return err
		}
	case 2:
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.Begin(ctx); err != nil {
			return err
		}
		errs[2] = s.End(ctx)
	}
	return nil
}
