package fusefs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// errNotFUSE marks a mount point whose file system is not FUSE: Unmount
// leaves it alone. As root, umount2(2) would unmount anything (a tmpfs,
// /home, /), and `pario umount` is only for what `pario mount` made.
var errNotFUSE = errors.New("not a pario (FUSE) mount")

// mountTypeAt returns the file system type of the topmost mount on dir
// (an absolute, symlink-free path) in mountinfo, the text of
// /proc/self/mountinfo, and whether dir is a mount point at all.
func mountTypeAt(mountinfo []byte, dir string) (fstype string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != dir {
			continue
		}
		t := ""
		for i := 5; i < len(fields)-1; i++ {
			if fields[i] == "-" {
				t = fields[i+1]
				break
			}
		}
		// Later lines are mounted over earlier ones: the last one is what
		// an unmount of dir removes.
		fstype, ok = t, true
	}
	return fstype, ok
}

// mountDevAt returns the device number ("MAJ:MIN") of the topmost mount
// on dir in mountinfo, "" if dir is not a mount point.
func mountDevAt(mountinfo []byte, dir string) string {
	dev := ""
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && unescapeMountinfo(fields[4]) == dir {
			dev = fields[2]
		}
	}
	return dev
}

// unescapeMountinfo undoes the octal escapes the kernel writes for the
// characters that would break mountinfo's fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// isFUSE says whether a mountinfo file system type is FUSE's: "fuse",
// "fuseblk", or "fuse.NAME" (pario's is fuse.pario).
func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.")
}

// checkUnmountable says why abs must not be unmounted by `pario umount`:
// it does not exist, is not a mount point, or holds a file system other
// than FUSE. It returns nil when it is a FUSE mount, or when the mount
// table cannot be read (umount2 and fusermount3 then decide). The path
// is resolved through its parent, so that a mount whose process died
// (where any stat of the mount point itself fails with ENOTCONN) is
// still found.
func checkUnmountable(abs string) error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	fstype, ok := mountTypeAt(mi, resolveMountPoint(abs))
	if !ok {
		if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unmount %s: %w", abs, syscall.ENOENT)
		}
		return fmt.Errorf("unmount %s: not a mount point: %w", abs, syscall.EINVAL)
	}
	if !isFUSE(fstype) {
		return fmt.Errorf("unmount %s: %w: it holds a %s file system, left mounted (use umount(8) for it)", abs, errNotFUSE, fstype)
	}
	return nil
}

// errAlreadyMounted marks a mount point that already holds a FUSE mount:
// mounting again would hide it under a second one (a `pario mount` run
// twice), and `pario umount` would then take away only the top one.
var errAlreadyMounted = errors.New("already a FUSE mount point")

// resolveMountPoint returns abs with its symbolic links resolved, as
// mountinfo names mount points. The last component is resolved without
// a stat of its own (a symbolic link is read, up to 40 times): a stat of
// a mount whose process died fails with ENOTCONN, and it must still be
// found.
func resolveMountPoint(abs string) string {
	p := abs
	for range 40 {
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		p = filepath.Join(dir, filepath.Base(p))
		target, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return p
}

// checkMountable refuses a directory on which a FUSE file system (pario's
// or another's) is mounted already. The mount table unreadable, it says
// nothing.
func checkMountable(abs string) error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	dir := abs
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		dir = real
	}
	if fstype, ok := mountTypeAt(mi, dir); ok && isFUSE(fstype) {
		// A mount whose process died may still answer stat from the
		// kernel's cache; anything that asks it says ENOTCONN.
		var st syscall.Statfs_t
		if err := syscall.Statfs(abs, &st); errors.Is(err, syscall.ENOTCONN) {
			return fmt.Errorf("mount %s: %w (%s, its process gone)", abs, err, fstype)
		}
		return fmt.Errorf("mount %s: %w (%s): unmount it first", abs, errAlreadyMounted, fstype)
	}
	return nil
}
