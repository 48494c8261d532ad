package meta

import (
	"context"
	"fmt"
	"slices"
	"syscall"
)

// This file is the permission logic of the metadata server, as POSIX and
// Linux have it: pure functions of an entry's attributes and the caller's
// credentials, so that the rules are tested by table (perm_test.go) and
// the store only calls them.

// Cred is who makes a request: the calling process's user, group and
// supplementary groups. The server trusts it as NFS trusts AUTH_SYS: the
// client host authenticated itself with the cluster's secret, and vouches
// for its users.
type Cred struct {
	Uid, Gid uint32
	Groups   []uint32
	// Watcher is the watcher ID (WatchResponse.Watcher) of the mount that
	// asks, 0 for other clients: publish does not wait for that mount's
	// acknowledgement of the change, since its kernel applied the change
	// itself (watch.go).
	Watcher uint64
	// Mount is the watcher ID of the mount that asks, for every request
	// it makes (Watcher only for the kernel's own changes): the holder of
	// a directory's delegation reaches into it without recalling it
	// (deleg.go). 0 for other clients.
	Mount uint64
}

// Nobody is the uid and gid root becomes under root squash.
const Nobody = 65534

// MaxGroups bounds a Cred's supplementary groups (Linux's NGROUPS_MAX).
const MaxGroups = 65536

// Root reports whether c is the superuser, to whom permission bits do not
// apply (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_FSETID, CAP_MKNOD).
func (c Cred) Root() bool { return c.Uid == 0 }

// InGroup reports whether g is c's group or one of its supplementary ones.
func (c Cred) InGroup(g uint32) bool { return c.Gid == g || slices.Contains(c.Groups, g) }

// Squash maps root to nobody, as NFS's root_squash does: uid 0 and gid 0
// become Nobody, and group 0 leaves the supplementary groups.
func (c Cred) Squash() Cred {
	if c.Uid == 0 {
		c.Uid = Nobody
	}
	if c.Gid == 0 {
		c.Gid = Nobody
	}
	if slices.Contains(c.Groups, 0) {
		c.Groups = slices.DeleteFunc(slices.Clone(c.Groups), func(g uint32) bool { return g == 0 })
	}
	return c
}

// The access a request wants, as access(2)'s mask: R_OK, W_OK, X_OK.
const (
	MayExec  uint32 = 1
	MayWrite uint32 = 2
	MayRead  uint32 = 4
)

// The mode bits beyond rwx.
const (
	modeSetuid = 0o4000
	modeSetgid = 0o2000
	modeSticky = 0o1000
)

// permits reports whether c may access a as want asks. Owner, group and
// other bits are exclusive, as in POSIX: an owner without a bit is denied
// even if others have it. Root may read and write anything, and execute
// a directory, or a file some x bit allows.
func permits(a *Attr, c Cred, want uint32) bool {
	if c.Root() {
		return want&MayExec == 0 || a.Kind == KindDir || a.Mode&0o111 != 0
	}
	var bits uint32
	switch {
	case c.Uid == a.Uid:
		bits = a.Mode >> 6 & 7
	case c.InGroup(a.Gid):
		bits = a.Mode >> 3 & 7
	default:
		bits = a.Mode & 7
	}
	return want&^bits == 0
}

// checkAccess is permits as an error: EACCES.
func checkAccess(a *Attr, c Cred, want uint32) error {
	if permits(a, c, want) {
		return nil
	}
	return syscall.EACCES
}

// checkDelete says whether c may remove (or rename away) the entry victim
// of directory dir: it needs write and search permission on dir and, if dir
// is sticky, must own victim or dir, or be root (EPERM otherwise, as Linux).
func checkDelete(dir, victim *Attr, c Cred) error {
	if err := checkAccess(dir, c, MayWrite|MayExec); err != nil {
		return err
	}
	if dir.Mode&modeSticky != 0 && !c.Root() && c.Uid != victim.Uid && c.Uid != dir.Uid {
		return fmt.Errorf("sticky directory: only the owner of the entry or of the directory removes it: %w", syscall.EPERM)
	}
	return nil
}

// MayRemoveFrom checks, as the metadata server would, that c may remove
// victim from dir: for a mount that answers unlinks in a directory
// delegated to it (deleg.go).
func MayRemoveFrom(dir, victim *Attr, c Cred) error { return checkDelete(dir, victim, c) }

// MayAddTo checks, as the metadata server would, that c may add a name to
// dir (search and write permission): for a mount that answers creates in
// a directory delegated to it (reserve.go). Whether the name is free is
// the caller's to know.
func MayAddTo(dir *Attr, c Cred) error {
	if err := checkAccess(dir, c, MayExec); err != nil {
		return err
	}
	return checkAccess(dir, c, MayWrite)
}

// NewOwner gives a new entry of kind k, made in parent by c with the
// requested mode bits, its owner, group and mode. The group is the
// parent's when the parent is setgid (BSD semantics), and a directory made
// there is setgid too; otherwise the caller's. A file whose setgid bit
// names a group the caller is not in loses the bit, unless root.
func NewOwner(parent *Attr, c Cred, k Kind, mode uint32) (uid, gid, m uint32) {
	uid, gid, m = c.Uid, c.Gid, mode&0o7777
	if parent.Mode&modeSetgid != 0 {
		gid = parent.Gid
		if k == KindDir {
			m |= modeSetgid
		}
	}
	if k != KindDir && m&modeSetgid != 0 && !c.Root() && !c.InGroup(gid) {
		m &^= modeSetgid
	}
	return uid, gid, m
}

// checkMknod refuses device nodes to all but root (CAP_MKNOD).
func checkMknod(k Kind, c Cred) error {
	if (k == KindCharDev || k == KindBlockDev) && !c.Root() {
		return fmt.Errorf("only root makes device nodes: %w", syscall.EPERM)
	}
	return nil
}

// chmodMode checks chmod(a, mode) by c and returns the mode to store.
// Only the owner or root changes the mode (EPERM). A non-root caller not
// in the file's group loses the setgid bit it asks for, as Linux does.
//
// One exception: a caller with write permission may clear the setuid and
// setgid bits and change nothing else. That is what a kernel without
// FUSE's killpriv asks on a write by such a caller, which the write
// would have done anyway.
func chmodMode(a *Attr, c Cred, mode uint32) (uint32, error) {
	mode &= 0o7777
	if !c.Root() && c.Uid != a.Uid {
		cleared := a.Mode &^ mode
		if mode&^a.Mode == 0 && cleared != 0 && cleared&^(modeSetuid|modeSetgid) == 0 && permits(a, c, MayWrite) {
			return mode, nil
		}
		return 0, fmt.Errorf("only the owner or root changes the mode: %w", syscall.EPERM)
	}
	if !c.Root() && !c.InGroup(a.Gid) {
		mode &^= modeSetgid
	}
	return mode, nil
}

// chownAttr checks chown(a, uid, gid) by c (nil: unchanged) and returns
// the new owner, group and mode. Only root gives a file away (EPERM); the
// owner may change the group to one of its own groups. A change clears
// the setuid bit of a non-directory, and its setgid bit if group-executable
// (without it the bit means mandatory locking), as Linux's chown does.
func chownAttr(a *Attr, c Cred, uid, gid *uint32) (newUid, newGid, mode uint32, err error) {
	newUid, newGid, mode = a.Uid, a.Gid, a.Mode
	if uid == nil && gid == nil {
		return newUid, newGid, mode, nil
	}
	if !c.Root() {
		if uid != nil && (*uid != a.Uid || c.Uid != a.Uid) {
			return 0, 0, 0, fmt.Errorf("only root changes the owner: %w", syscall.EPERM)
		}
		if gid != nil && (c.Uid != a.Uid || *gid != a.Gid && !c.InGroup(*gid)) {
			return 0, 0, 0, fmt.Errorf("only the owner changes the group, to one of its groups: %w", syscall.EPERM)
		}
	}
	if uid != nil {
		newUid = *uid
	}
	if gid != nil {
		newGid = *gid
	}
	if a.Kind != KindDir {
		mode = killPriv(mode)
	}
	return newUid, newGid, mode, nil
}

// killPriv clears what a write or chown by an unprivileged caller clears:
// setuid, and setgid when group-executable.
func killPriv(mode uint32) uint32 {
	mode &^= modeSetuid
	if mode&(modeSetgid|0o010) == modeSetgid|0o010 {
		mode &^= modeSetgid
	}
	return mode
}

// checkKillPriv says whether c may clear a's setuid and setgid bits (a
// write does): the owner, root, or anyone allowed to write.
func checkKillPriv(a *Attr, c Cred) error {
	if c.Root() || c.Uid == a.Uid {
		return nil
	}
	return checkAccess(a, c, MayWrite)
}

// checkTimes says whether c may set a's times: to given values only the
// owner or root (EPERM); to now (utimensat's UTIME_NOW, touch) also
// anyone with write permission (EACCES otherwise).
func checkTimes(a *Attr, c Cred, now bool) error {
	if c.Root() || c.Uid == a.Uid {
		return nil
	}
	if now {
		return checkAccess(a, c, MayWrite)
	}
	return fmt.Errorf("only the owner or root sets times: %w", syscall.EPERM)
}

// checkOwnerOrWrite is for changes to a file's own attributes that a
// writer may make (its layout): the owner, root, or write permission.
func checkOwnerOrWrite(a *Attr, c Cred) error { return checkKillPriv(a, c) }

type credKey struct{}

// WithCred returns a context that carries c: the Store checks its calls
// made with it on c's behalf, and the client sends c with them. A Store
// call whose context carries none is the server's own and is not checked.
func WithCred(ctx context.Context, c Cred) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// CredFrom returns the credentials ctx carries, if any.
func CredFrom(ctx context.Context) (Cred, bool) {
	c, ok := ctx.Value(credKey{}).(Cred)
	return c, ok
}

func credOf(ctx context.Context) *Cred {
	if c, ok := CredFrom(ctx); ok {
		return &c
	}
	return nil
}
