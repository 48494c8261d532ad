package fusefs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestMountTypeAt(t *testing.T) {
	mi := strings.Join([]string{
		`22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw`,
		`90 30 0:50 / /tmp/a\040b rw,relatime shared:40 master:1 - tmpfs tmpfs rw,size=8192k`,
		`91 30 0:51 / /mnt/p rw,nosuid,nodev - fuse.pario pario rw,user_id=0`,
		`92 91 0:52 / /mnt/p rw - tmpfs tmpfs rw`, // mounted over the pario mount
		`93 30 0:53 / /mnt/q rw - fuse.pario pario rw`,
		`short line`,
	}, "\n")
	for _, tc := range []struct {
		dir, fstype string
		ok          bool
	}{
		{"/proc", "proc", true},
		{"/tmp/a b", "tmpfs", true},
		{"/mnt/p", "tmpfs", true},
		{"/mnt/q", "fuse.pario", true},
		{"/mnt", "", false},
		{"/mnt/q/sub", "", false},
	} {
		fstype, ok := mountTypeAt([]byte(mi), tc.dir)
		if fstype != tc.fstype || ok != tc.ok {
			t.Errorf("mountTypeAt(%q) = %q, %v; want %q, %v", tc.dir, fstype, ok, tc.fstype, tc.ok)
		}
	}
	// The device number, for the read-ahead: from the table, never from a
	// stat of the mount point (a request to the mount's own process).
	for dir, want := range map[string]string{"/mnt/q": "0:53", "/mnt/p": "0:52", "/tmp/a b": "0:50", "/mnt": ""} {
		if got := mountDevAt([]byte(mi), dir); got != want {
			t.Errorf("mountDevAt(%q) = %q, want %q", dir, got, want)
		}
	}
	for _, name := range []string{"fuse", "fuseblk", "fuse.pario", "fuse.sshfs"} {
		if !isFUSE(name) {
			t.Errorf("isFUSE(%q) = false", name)
		}
	}
	for _, name := range []string{"tmpfs", "ext4", "proc", "fusectl", ""} {
		if isFUSE(name) {
			t.Errorf("isFUSE(%q) = true", name)
		}
	}
}

// Unmount leaves a file system that is not FUSE mounted and says so:
// as root, umount2 would otherwise unmount anything (here /proc, which
// every Linux has mounted; the check runs before any unmount is tried).
func TestUnmountRefusesWhatIsNotFUSE(t *testing.T) {
	err := checkUnmountable("/proc")
	if !errors.Is(err, errNotFUSE) || !strings.Contains(err.Error(), "proc file system") {
		t.Fatalf("checkUnmountable(/proc) = %v, want one naming a proc file system, not FUSE", err)
	}
	err = checkUnmountable("/proc/self")
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "not a mount point") {
		t.Fatalf("checkUnmountable(/proc/self) = %v, want not a mount point", err)
	}
	err = checkUnmountable("/nonexistent-pario-mount-point")
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("checkUnmountable(missing) = %v, want ENOENT", err)
	}
}
