package meta

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/wire"
)

// Symbolic links are metadata only: the target is kept in the link's
// attribute record (Attr.Target) and never interpreted here. Path
// resolution in the metadata server does not follow links: a link as a
// directory of a path is ENOTDIR, like any other non-directory. Following
// is the job of whoever resolves paths for a program (the kernel on a
// mount).

// Symlink creates a symbolic link at path pointing to target, owned by the
// caller with mode 0777 (the mode of a link is never checked). An empty
// target is ENOENT and one with a NUL byte EINVAL, as Linux answers; one
// longer than MaxPathLen is ENAMETOOLONG. An existing entry is EEXIST.
func (s *Store) Symlink(ctx context.Context, target, path string) (Attr, error) {
	switch {
	case target == "":
		return Attr{}, wrapErr("symlink", path, fmt.Errorf("empty target: %w", syscall.ENOENT))
	case len(target) > MaxPathLen:
		return Attr{}, wrapErr("symlink", path, fmt.Errorf("target longer than %d bytes: %w", MaxPathLen, syscall.ENAMETOOLONG))
	case strings.IndexByte(target, 0) >= 0:
		return Attr{}, wrapErr("symlink", path, fmt.Errorf("target contains a NUL byte: %w", syscall.EINVAL))
	}
	id, err := s.allocID(ctx)
	if err != nil {
		return Attr{}, wrapErr("symlink", path, err)
	}
	var a Attr
	err = s.update(ctx, "symlink", path, func(t *txn, comps []string) error {
		if len(comps) == 0 {
			return syscall.EEXIST
		}
		parent, err := t.parentToAdd(comps)
		if err != nil {
			return err
		}
		now := time.Now().UnixNano()
		a = Attr{ID: id, Kind: KindSymlink, Nlink: 1, Target: target, Mtime: now, Ctime: now, Atime: now}
		a.Uid, a.Gid, _ = newOwner(&parent, t.caller(), KindSymlink, 0)
		a.Mode = 0o777
		return t.add(&parent, comps[len(comps)-1], &a)
	})
	if err != nil {
		return Attr{}, err
	}
	return a, nil
}

// Readlink returns the target of the symbolic link at path; any other
// kind of entry is EINVAL, as readlink(2) answers.
func (s *Store) Readlink(ctx context.Context, path string) (string, error) {
	var target string
	err := s.view(ctx, "readlink", path, func(t *txn, comps []string) error {
		a, err := t.lookup(comps)
		if err != nil {
			return err
		}
		if a.Kind != KindSymlink {
			return fmt.Errorf("not a symbolic link: %w", syscall.EINVAL)
		}
		target = a.Target
		return nil
	})
	return target, err
}

// SymlinkRequest creates the symbolic link Path pointing to Target.
type SymlinkRequest struct {
	Target, Path string
	Cred         Cred
}

func (r SymlinkRequest) Encode(e *wire.Enc) {
	e.String(r.Target)
	e.String(r.Path)
	putCred(e, r.Cred)
}

func (r *SymlinkRequest) Decode(d *wire.Dec) error {
	r.Target, r.Path = d.String("target"), d.String("path")
	r.Cred = getCred(d)
	return d.Done()
}

// ReadlinkRequest asks for the target of the symbolic link Path.
type ReadlinkRequest struct {
	Path string
	Cred Cred
}

func (r ReadlinkRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putCred(e, r.Cred)
}

func (r *ReadlinkRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Cred = getCred(d)
	return d.Done()
}

// ReadlinkResponse is a symbolic link's target.
type ReadlinkResponse struct{ Target string }

func (r ReadlinkResponse) Encode(e *wire.Enc) { e.String(r.Target) }

func (r *ReadlinkResponse) Decode(d *wire.Dec) error {
	r.Target = d.String("target")
	return d.Done()
}
