package meta

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/wire"
)

// MaxLinks is the most names a file may have (ext4's limit); a link
// beyond it is EMLINK.
const MaxLinks = 65000

// Link counts (Attr.Nlink): a file, special file or symbolic link counts
// its names, and its inode and datafiles go with the last one (dropName);
// a directory counts 2 + its subdirectories (its name, its ".", and each
// subdirectory's ".."), kept by add, dropName and Rename. A directory
// recorded before link counts has 0 (unknown), kept so: clients show 1,
// which tells find(1) not to count on it.
//
// The metadata server removes an inode with its last name even while a
// mount holds the file open; the mount then asks it to keep the datafiles
// (WithKeepData) and removes them at its last release (fusefs), so a
// crash of that mount leaves orphan datafiles, which pario fsck finds and
// --repair removes. Otherwise the removal is recorded in the same
// transaction and the reaper removes the datafiles (reaper.go).

// dropName accounts for a removed name of a, whose entry in parent is
// already deleted: a file with names left keeps its inode, one fewer
// name and a new ctime; otherwise the inode goes (a removed directory
// also takes its ".." from parent). It returns a as it now is, Nlink the
// names left: 0 when the inode is gone, and only then are a file's
// datafiles removed (recorded for the reaper, unless t.keepData).
func (t *txn) dropName(parent *Attr, a Attr, now int64) (Attr, error) {
	if a.Kind != KindDir && a.Nlink > 1 {
		a.Nlink--
		a.Ctime = now
		return a, t.put(&a)
	}
	if a.Kind == KindDir && parent.Nlink > 2 {
		parent.Nlink--
	}
	if err := t.inodes.Delete(idKey(a.ID)); err != nil {
		return Attr{}, err
	}
	if err := t.intendRemoval(a); err != nil {
		return Attr{}, err
	}
	a.Nlink = 0
	return a, t.addCounter(countFor(a.Kind), -1)
}

// moveSubdir moves a subdirectory's ".." from one parent's count to the
// other's (unknown counts stay unknown).
func moveSubdir(from, to *Attr) {
	if from.Nlink > 2 {
		from.Nlink--
	}
	if to.Nlink > 0 {
		to.Nlink++
	}
}

// Link gives the file (or special file, or symbolic link) id one more
// name, newpath, and returns its attributes. A directory is EPERM, as
// link(2) answers; an existing newpath EEXIST; a file of MaxLinks names
// EMLINK. The caller must be allowed to add to newpath's directory; the
// file's own permissions are not checked (the kernel of a mount has
// looked the file up as the caller already).
func (s *Store) Link(ctx context.Context, id FileID, newpath string) (Attr, error) {
	var a Attr
	err := s.update(ctx, "link", newpath, func(t *txn, comps []string) error {
		if len(comps) == 0 {
			return syscall.EEXIST
		}
		var err error
		if a, err = t.get(id); err != nil {
			return err
		}
		if a.Kind == KindDir {
			return fmt.Errorf("a directory cannot have another name: %w", syscall.EPERM)
		}
		parent, err := t.parentToAdd(comps)
		if err != nil {
			return err
		}
		if a.Nlink >= MaxLinks {
			return fmt.Errorf("file %d has %d names already: %w", id, a.Nlink, syscall.EMLINK)
		}
		now := time.Now().UnixNano()
		a.Nlink = max(a.Nlink, 1) + 1
		a.Ctime = now
		if err := t.put(&a); err != nil {
			return err
		}
		if err := t.dirents.Put(direntKey(parent.ID, comps[len(comps)-1]), idKey(a.ID)); err != nil {
			return err
		}
		return t.touchDir(&parent, now)
	})
	if err != nil {
		return Attr{}, err
	}
	return a, nil
}

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
		a.Uid, a.Gid, _ = NewOwner(&parent, t.caller(), KindSymlink, 0)
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
	Expect       Expect
	Cred         Cred
}

func (r SymlinkRequest) Encode(e *wire.Enc) {
	e.String(r.Target)
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *SymlinkRequest) Decode(d *wire.Dec) error {
	r.Target, r.Path = d.String("target"), d.String("path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}

// ReadlinkRequest asks for the target of the symbolic link Path.
type ReadlinkRequest struct {
	Path   string
	Expect Expect
	Cred   Cred
}

func (r ReadlinkRequest) Encode(e *wire.Enc) {
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *ReadlinkRequest) Decode(d *wire.Dec) error {
	r.Path = d.String("path")
	r.Expect = getExpect(d)
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

// LinkRequest gives the file ID the new name Path.
type LinkRequest struct {
	ID     FileID
	Path   string
	Expect Expect
	Cred   Cred
}

func (r LinkRequest) Encode(e *wire.Enc) {
	e.U64(uint64(r.ID))
	e.String(r.Path)
	putExpect(e, r.Expect)
	putCred(e, r.Cred)
}

func (r *LinkRequest) Decode(d *wire.Dec) error {
	r.ID, r.Path = FileID(d.U64("id")), d.String("path")
	r.Expect = getExpect(d)
	r.Cred = getCred(d)
	return d.Done()
}
