package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testbin"
)

// `pario mount` and `pario umount`, end to end, as a user runs them.

// mountCommand starts `pario ARGS... DIR` (ARGS include "mount") and waits until DIR is
// mounted; t.Cleanup makes sure the process is gone and DIR unmounted.
func mountCommand(t *testing.T, dir string, args ...string) (*exec.Cmd, *testbin.LockedBuffer, chan error) {
	t.Helper()
	need(t, "fusermount3")
	out := &testbin.LockedBuffer{}
	cmd := exec.Command(parioBin, append(args, dir)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if mountInfo(dir) != "" {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
			if mountInfo(dir) != "" {
				_ = exec.Command(parioBin, "umount", "--lazy", dir).Run()
			}
		}
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("pario mount output:\n%s", out.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); mountInfo(dir) == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("pario mount exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not mounted after 15 s:\n%s", dir, out.String())
		}
	}
	return cmd, out, exited
}

// exitCode is the exit status a command's error says (0 for nil, -1 for
// one that did not exit).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// exitsCleanly waits for the mount process to exit 0 with dir unmounted.
func exitsCleanly(t *testing.T, exited chan error, dir string) {
	t.Helper()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("pario mount exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("pario mount did not exit")
	}
	if mountInfo(dir) != "" {
		t.Fatalf("%s still mounted", dir)
	}
}

func TestParioMountCommand(t *testing.T) {
	need(t, "cp", "cmp")
	p := spawn(t)
	cf := p.ClusterFile
	dir := t.TempDir()
	local := filepath.Join(t.TempDir(), "data")
	writeFile(t, local, randomBytes(t, 3<<20+1))

	// Mount, copy in, see it with the native tools, `pario umount`.
	_, out, exited := mountCommand(t, dir, "--cluster", cf, "mount")
	sh(t, fmt.Sprintf("cp %[1]s %[2]s/copy && cmp %[1]s %[2]s/copy", local, dir))
	if ls, err := exec.Command(parioBin, "--cluster", cf, "ls", "-l", "/").CombinedOutput(); err != nil || !bytes.Contains(ls, []byte("3145729")) {
		t.Fatalf("pario ls -l /: %v\n%s", err, ls)
	}
	if info := mountInfo(dir); !strings.Contains(info, "fuse.pario") {
		t.Fatalf("mountinfo: %s", info)
	}
	if umount, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("pario umount: %v\n%s", err, umount)
	}
	exitsCleanly(t, exited, dir)
	if !strings.Contains(out.String(), "was unmounted") {
		t.Errorf("output:\n%s", out.String())
	}

	// A busy mount is refused, and detached with --lazy; the mount
	// process exits once its last user is gone.
	_, _, exited = mountCommand(t, dir, "--cluster", cf, "mount")
	busy := exec.Command("bash", "-c", "cd "+dir+" && exec sleep 60")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer busy.Process.Kill()
	time.Sleep(200 * time.Millisecond)
	// One error, said once (not umount2's and then fusermount3's), with
	// the way out.
	umount, err := exec.Command(parioBin, "umount", dir).CombinedOutput()
	if code := exitCode(err); code != 1 || strings.Count(strings.ToLower(string(umount)), "busy") != 1 ||
		strings.Count(string(umount), "\n") != 1 || !strings.Contains(string(umount), "pario umount --lazy "+dir) {
		t.Fatalf("pario umount of a busy mount: exit %d, want 1 and one line saying busy once, with the --lazy hint:\n%s", code, umount)
	}
	if umount, err := exec.Command(parioBin, "umount", "--lazy", dir).CombinedOutput(); err != nil {
		t.Fatalf("pario umount --lazy: %v\n%s", err, umount)
	}
	busy.Process.Kill()
	busy.Wait()
	exitsCleanly(t, exited, dir)

	// SIGTERM and SIGINT unmount and exit 0; the data is still there.
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd, _, exited := mountCommand(t, dir, "--cluster", cf, "mount")
		sh(t, fmt.Sprintf("cmp %s %s/copy", local, dir))
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		exitsCleanly(t, exited, dir)
	}
}

func TestParioMountEmbedded(t *testing.T) {
	need(t, "dd", "cmp")
	dir := t.TempDir()
	data := t.TempDir()
	cmd, _, exited := mountCommand(t, dir, "mount", "--embedded", "--dir", data, "--servers", "3")
	sh(t, fmt.Sprintf("dd if=/dev/urandom of=%[1]s/a bs=1M count=2 status=none && cmp %[1]s/a %[1]s/a && df %[1]s", dir))
	if got := strings.TrimSpace(sh(t, "getfattr --absolute-names --only-values -n user.pario.servers "+dir+"/a")); strings.Count(got, ",") != 2 {
		t.Errorf("servers of a file on a 3-server embedded cluster: %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exitsCleanly(t, exited, dir)
	// --dir keeps the data: the cluster file of the embedded cluster is gone
	// (its servers stopped) but the datafiles are there.
	if m, _ := filepath.Glob(filepath.Join(data, "data*", "df", "*", "*")); len(m) == 0 {
		t.Errorf("no datafiles under %s", data)
	}
}

// `pario umount` unmounts FUSE mounts only: as root it used umount2 on
// whatever it was given, so `pario umount` of a tmpfs (or /home) unmounted
// it. A mount whose `pario mount` was killed (every stat of it fails
// with ENOTCONN) is still cleared.
func TestParioUmountLeavesOtherFileSystems(t *testing.T) {
	need(t, "mount", "umount")
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (and, without root, fusermount3 refuses it anyway)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	out, err := exec.Command(parioBin, "umount", dir).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "tmpfs") || !strings.Contains(string(out), "not a pario (FUSE) mount") {
		t.Errorf("pario umount of a tmpfs: exit %d, want 1 and an error naming tmpfs:\n%s", code, out)
	}
	if !strings.Contains(mountInfo(dir), "tmpfs") {
		t.Fatalf("pario umount unmounted the tmpfs on %s", dir)
	}
	out, err = exec.Command(parioBin, "umount", "--lazy", dir).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(mountInfo(dir), "tmpfs") {
		t.Fatalf("pario umount --lazy of a tmpfs: exit %d, mounted %v:\n%s", code, mountInfo(dir) != "", out)
	}

	// Not a mount point, and no such path: one line each, exit 1.
	for _, p := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		out, err := exec.Command(parioBin, "umount", p).CombinedOutput()
		if code := exitCode(err); code != 1 || strings.Count(string(out), "\n") != 1 {
			t.Errorf("pario umount %s: exit %d, want 1 and one line:\n%s", p, code, out)
		}
	}

	// A killed mount: "Transport endpoint is not connected", cleared.
	p := spawn(t)
	mnt := t.TempDir()
	cmd, _, exited := mountCommand(t, mnt, "--cluster", p.ClusterFile, "mount")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed right after the mount appears: before, a stat of its own
	// mount point (for the read-ahead) could be waiting, and the process
	// could then never exit (setReadAhead).
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("pario mount killed with SIGKILL has not exited after 30 s")
	}
	if _, err := os.ReadDir(mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("listing of a killed mount: %v, want ENOTCONN", err)
	}
	// Mounting on it again says how to clear it.
	out, err = exec.Command(parioBin, "--cluster", p.ClusterFile, "mount", mnt).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "pario umount "+mnt) {
		t.Errorf("pario mount on a killed mount: exit %d, want 1 and the way out:\n%s", code, out)
	}
	// Through a symbolic link to it, as umount2 follows one.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(mnt, link); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(parioBin, "umount", link).CombinedOutput(); err != nil {
		t.Fatalf("pario umount of a killed mount, through a symbolic link: %v\n%s", err, out)
	}
	if mountInfo(mnt) != "" {
		t.Fatalf("%s still mounted after pario umount", mnt)
	}
}

// `pario mount` run twice on one directory refused the second time: it
// mounted a second file system over the first, hiding it, and `pario
// umount` then took away only the top one.
func TestParioMountTwiceOnOneDirectory(t *testing.T) {
	p := spawn(t)
	dir := t.TempDir()
	_, _, exited := mountCommand(t, dir, "--cluster", p.ClusterFile, "mount")
	second := exec.Command(parioBin, "--cluster", p.ClusterFile, "mount", dir)
	out := &testbin.LockedBuffer{}
	second.Stdout, second.Stderr = out, out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != 1 || !strings.Contains(out.String(), "already a FUSE mount point") {
			t.Errorf("second pario mount on %s: exit %d, want 1 saying it is mounted already:\n%s", dir, code, out.String())
		}
	case <-time.After(20 * time.Second):
		_ = second.Process.Kill()
		<-done
		_ = exec.Command(parioBin, "umount", "--lazy", dir).Run()
		t.Fatalf("second pario mount on %s still running after 20 s (it mounted over the first):\n%s", dir, out.String())
	}
	if n := strings.Count(allMountInfo(dir), "\n"); n != 1 {
		t.Fatalf("%d mounts on %s, want 1", n, dir)
	}
	if umount, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("pario umount: %v\n%s", err, umount)
	}
	exitsCleanly(t, exited, dir)
}

// allMountInfo returns every mountinfo line of dir, each ending in "\n".
func allMountInfo(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	var b strings.Builder
	for line := range strings.SplitSeq(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && unescapeMountinfo(fields[4]) == dir {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
