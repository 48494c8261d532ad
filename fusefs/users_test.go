package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/server/meta"
)

// testUser is a real user made for one test: alice and bob share the
// group "share", carol does not.
type testUser struct {
	name     string
	uid, gid uint32
}

// makeUsers creates a group and the users alice, bob (both in it) and
// carol with useradd, named after this process so that parallel runs do
// not meet; t.Cleanup deletes them.
func makeUsers(t *testing.T) (share uint32, alice, bob, carol testUser) {
	t.Helper()
	need(t, "useradd", "userdel", "groupadd", "groupdel", "setpriv")
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "making users needs root")
	}
	suffix := strconv.Itoa(os.Getpid() % 100000)
	group := "pario_s" + suffix
	admin(t, "groupadd", group)
	t.Cleanup(func() { adminQuiet("groupdel", group) })
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatalf("look up group %s: %v", group, err)
	}
	gid, _ := strconv.ParseUint(g.Gid, 10, 32)
	mk := func(name string, groups ...string) testUser {
		name += suffix
		args := []string{"-M", "-U", "-s", "/bin/bash"}
		if len(groups) > 0 {
			args = append(args, "-G", strings.Join(groups, ","))
		}
		admin(t, "useradd", append(args, name)...)
		t.Cleanup(func() { adminQuiet("userdel", name) })
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("look up user %s: %v", name, err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		ugid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return testUser{name: name, uid: uint32(uid), gid: uint32(ugid)}
	}
	return uint32(gid), mk("pario_a", group), mk("pario_b", group), mk("pario_c")
}

// admin runs a user-database command, retrying while another process
// holds /etc/passwd's lock.
func admin(t *testing.T, prog string, args ...string) {
	t.Helper()
	var out []byte
	var err error
	for range 20 {
		if out, err = exec.Command(prog, args...).CombinedOutput(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
}

func adminQuiet(prog string, args ...string) {
	for range 20 {
		if exec.Command(prog, args...).Run() == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountForUsers mounts p's store for every user (--allow-other) and lets
// them reach the mount point through the test's temporary directories.
func mountForUsers(t *testing.T, p *cluster.Processes) *mounted {
	t.Helper()
	m := mount(t, p, fusefs.Options{AllowOther: true})
	waitLease(t, m)
	for d := filepath.Dir(m.Dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// as runs a bash script as u (its uid, gid and groups) and returns its
// combined output.
func as(u testUser, script string) (string, error) {
	cmd := exec.Command("setpriv", "--reuid", u.name, "--regid", strconv.Itoa(int(u.gid)), "--init-groups",
		"bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustAs(t *testing.T, u testUser, script string) string {
	t.Helper()
	out, err := as(u, script)
	if err != nil {
		t.Fatalf("as %s: %s: %v\n%s", u.name, script, err, out)
	}
	return out
}

// mustFailAs checks that the script fails as u with the given error text.
func mustFailAs(t *testing.T, u testUser, script, want string) {
	t.Helper()
	out, err := as(u, script)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("as %s: %s: %v, output %q; want a failure with %q", u.name, script, err, out, want)
	}
}

// Two (three) real users on one --allow-other mount: each does everything
// with its own files and nothing with the other's private ones; group
// permissions, a sticky scratch directory, a setgid project directory and
// the clearing of setuid work as on a local disk. The metadata server
// checks on its own: a native client acting for one user is refused the
// other's files as the mount is.
func TestTwoUsers(t *testing.T) {
	share, alice, bob, carol := makeUsers(t)
	p := spawn(t)
	m := mountForUsers(t, p)
	mp := m.Dir
	// Root sets up a sticky scratch directory and a project directory of
	// the shared group, as an administrator would.
	sh(t, fmt.Sprintf(`cd / && mkdir -m 1777 %[1]s/tmp && mkdir %[1]s/proj && chgrp %[2]d %[1]s/proj && chmod 2770 %[1]s/proj`, mp, share))

	// Each user does everything with its own files.
	for _, u := range []testUser{alice, bob} {
		dir := mp + "/tmp/" + u.name
		out := mustAs(t, u, fmt.Sprintf(`
			umask 022
			mkdir %[1]s && chmod 700 %[1]s
			echo one > %[1]s/f && echo two >> %[1]s/f && cat %[1]s/f
			chmod 640 %[1]s/f && truncate -s 2 %[1]s/f && touch -d @1000000000 %[1]s/f
			chgrp %[2]d %[1]s/f
			mkdir %[1]s/sub && mv %[1]s/f %[1]s/sub/g
			stat -c '%%U %%G %%a %%s %%Y' %[1]s/sub/g
			echo private > %[1]s/secret && chmod 600 %[1]s/secret
			echo shared > %[3]s/tmp/%[4]s.pub && chmod 644 %[3]s/tmp/%[4]s.pub
			rm -r %[1]s/sub && ls %[1]s`, dir, share, mp, u.name))
		want := fmt.Sprintf("one\ntwo\n%s %s 640 2 1000000000\nsecret\n", u.name, groupName(t, share))
		if out != want {
			t.Errorf("%s with its own files:\n%s\nwant\n%s", u.name, out, want)
		}
	}

	// Nothing with the other's private files.
	a := mp + "/tmp/" + alice.name
	mustFailAs(t, bob, "cat "+a+"/secret", "Permission denied")
	mustFailAs(t, bob, "ls "+a, "Permission denied")
	mustFailAs(t, bob, "touch "+a+"/x", "Permission denied")
	mustFailAs(t, bob, "echo x >> "+mp+"/tmp/"+alice.name+".pub", "Permission denied")
	mustFailAs(t, bob, "chmod 666 "+mp+"/tmp/"+alice.name+".pub", "Operation not permitted")
	mustFailAs(t, bob, "rm -f "+mp+"/tmp/"+alice.name+".pub", "Operation not permitted")
	mustFailAs(t, bob, "mv "+mp+"/tmp/"+alice.name+".pub "+mp+"/tmp/stolen", "Operation not permitted")
	mustFailAs(t, bob, "rmdir "+a, "Operation not permitted")
	mustFailAs(t, bob, fmt.Sprintf("chown %d %s/tmp/%s.pub", alice.uid, mp, bob.name), "Operation not permitted")
	mustFailAs(t, bob, fmt.Sprintf("chgrp %d %s/tmp/%s.pub", carol.gid, mp, bob.name), "Operation not permitted")
	if out := mustAs(t, bob, "cat "+mp+"/tmp/"+alice.name+".pub"); out != "shared\n" {
		t.Errorf("bob reads alice's public file: %q", out)
	}

	// Group permissions: the setgid project directory gives its group to
	// what is made in it; members share, others cannot enter.
	mustAs(t, alice, fmt.Sprintf("umask 007 && echo plan > %[1]s/proj/plan && mkdir %[1]s/proj/d", mp))
	if out := mustAs(t, bob, fmt.Sprintf("echo more >> %[1]s/proj/plan && cat %[1]s/proj/plan && stat -c '%%G %%a' %[1]s/proj/plan %[1]s/proj/d", mp)); out != fmt.Sprintf("plan\nmore\n%[1]s 660\n%[1]s 2770\n", groupName(t, share)) {
		t.Errorf("bob in alice's group file:\n%s", out)
	}
	// A writer sets times to now, only the owner to other values.
	mustAs(t, bob, "touch "+mp+"/proj/plan")
	mustFailAs(t, bob, "touch -d @5 "+mp+"/proj/plan", "Operation not permitted")
	mustFailAs(t, carol, "cat "+mp+"/proj/plan", "Permission denied")
	mustFailAs(t, carol, "ls "+mp+"/proj", "Permission denied")

	// A write by another user clears setuid.
	mustAs(t, alice, fmt.Sprintf("echo '#!/bin/sh' > %[1]s/tmp/tool && chmod 4777 %[1]s/tmp/tool", mp))
	mustAs(t, bob, fmt.Sprintf("echo 'id' >> %s/tmp/tool", mp))
	if out := mustAs(t, alice, "stat -c %a "+mp+"/tmp/tool"); out != "777\n" {
		t.Errorf("setuid file after bob's write: mode %s, want 777", out)
	}

	// So does a truncate by another user, and the owner's truncating open
	// (only root keeps the bits: CAP_FSETID).
	mustAs(t, alice, "chmod 4777 "+mp+"/tmp/tool")
	mustAs(t, bob, "truncate -s 2 "+mp+"/tmp/tool")
	if out := mustAs(t, alice, "stat -c '%a %s' "+mp+"/tmp/tool"); out != "777 2\n" {
		t.Errorf("setuid file after bob's truncate: %q, want mode 777, 2 bytes", out)
	}
	mustAs(t, alice, fmt.Sprintf("chmod 2775 %[1]s/tmp/tool && echo '#!/bin/sh' > %[1]s/tmp/tool", mp))
	if out := mustAs(t, alice, "stat -c %a "+mp+"/tmp/tool"); out != "775\n" {
		t.Errorf("setgid group-executable file after its owner's truncating open: mode %s, want 775", out)
	}

	// Root gives a file away; chown clears setuid.
	sh(t, fmt.Sprintf("cd / && chmod 4755 %[1]s/tmp/tool && chown %[2]d:%[3]d %[1]s/tmp/tool", mp, bob.uid, bob.gid))
	if out := mustAs(t, bob, "stat -c '%U %a' "+mp+"/tmp/tool"); out != bob.name+" 755\n" {
		t.Errorf("after root's chown: %q, want %q", out, bob.name+" 755")
	}

	// The metadata server itself refuses: a native client acting for bob.
	c := dial(t, p)
	ctx := meta.WithCred(context.Background(), meta.Cred{Uid: bob.uid, Gid: bob.gid, Groups: []uint32{share}})
	if err := c.Remove(ctx, "/tmp/"+alice.name+".pub"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("native client as bob removes alice's file: %v, want EPERM", err)
	}
	if _, err := c.Lookup(ctx, "/tmp/"+alice.name+"/secret"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("native client as bob looks into alice's directory: %v, want EACCES", err)
	}
	if fi, err := c.Stat(context.Background(), "/tmp/"+alice.name+"/secret"); err != nil || fi.Uid != alice.uid || fi.Gid != alice.gid {
		t.Errorf("owner of alice's secret: %+v, %v; want %d:%d", fi.Attr, err, alice.uid, alice.gid)
	}
}

func groupName(t *testing.T, gid uint32) string {
	t.Helper()
	g, err := user.LookupGroupId(strconv.Itoa(int(gid)))
	if err != nil {
		t.Fatal(err)
	}
	return g.Name
}

// TestUnlinksHereCheckPermissions: unlinks and rmdirs that the mount
// answers itself (delegated.go) obey the directory's owner, group and
// mode: alice's group may remove from her group-writable directory, not
// from her private one; carol, outside the group, from neither. (With
// --allow-other the kernel checks first; the mount checks again before
// it queues, and the metadata server when it applies the batch as the
// caller.) What was refused is still there for the metadata server, and
// what was allowed, applied as bob, is gone from it.
func TestUnlinksHereCheckPermissions(t *testing.T) {
	share, alice, bob, carol := makeUsers(t)
	p := spawn(t)
	m := mountForUsers(t, p)
	mp := m.Dir
	sh(t, fmt.Sprintf(`cd / && mkdir -m 0777 %s/top`, mp))
	// alice makes both directories through this mount, so both are
	// delegated to it, and files and a subdirectory in each.
	mustAs(t, alice, fmt.Sprintf(`
		umask 022
		cd %[1]s/top
		mkdir shared private && chgrp %[2]d shared && chmod 2775 shared && chmod 755 private
		for d in shared private; do
			for i in 1 2 3 4; do echo x > $d/f$i; done
			mkdir $d/sub
		done`, mp, share))
	waitReleased(t, m)
	before := m.Stats().UnlinksHere

	top := mp + "/top"
	mustAs(t, bob, fmt.Sprintf("rm %[1]s/shared/f1 %[1]s/shared/f2 && rmdir %[1]s/shared/sub", top))
	mustFailAs(t, bob, "rm -f "+top+"/private/f1", "Permission denied")
	mustFailAs(t, bob, "rmdir "+top+"/private/sub", "Permission denied")
	mustFailAs(t, carol, "rm -f "+top+"/shared/f3", "Permission denied")
	mustAs(t, alice, fmt.Sprintf("rm %[1]s/private/f1 && rmdir %[1]s/private/sub", top))

	if here := m.Stats().UnlinksHere - before; here != 5 {
		t.Errorf("%d unlinks and rmdirs answered by the mount, want the 5 allowed (the directories are delegated to it)", here)
	}
	c := dial(t, p)
	for dir, want := range map[string]string{
		"/top/shared":  "f3 f4",
		"/top/private": "f2 f3 f4",
	} {
		list, err := c.Readdir(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range list {
			names = append(names, e.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("the metadata server lists %s as %q, want %q", dir, got, want)
		}
	}
}

// TestDirectoryModeAnsweredHere: a chmod of a directory the mount made in
// a directory it holds is answered by the mount (dirChangeHere) and
// guards the directory at once, as on a local disk: after chmod 555 its
// owner can neither create nor remove in it, nor can the group; after
// chmod 775 a user of its group can. The metadata server ends with the
// last mode and the names the allowed requests left.
func TestDirectoryModeAnsweredHere(t *testing.T) {
	share, alice, bob, _ := makeUsers(t)
	p := spawn(t)
	m := mountForUsers(t, p)
	top := m.Dir + "/top"
	sh(t, "cd / && mkdir -m 0777 "+top)
	mustAs(t, alice, fmt.Sprintf("cd %s && mkdir -m 0755 d && chgrp %d d && echo x > d/f", top, share))
	waitReleased(t, m)
	before := m.Stats().SetattrsHere
	mustAs(t, alice, "chmod 555 "+top+"/d")
	mustFailAs(t, alice, "echo y > "+top+"/d/g", "Permission denied")
	mustFailAs(t, alice, "rm "+top+"/d/f", "Permission denied")
	mustFailAs(t, bob, "echo y > "+top+"/d/g", "Permission denied")
	mustAs(t, alice, "chmod 775 "+top+"/d")
	if here := m.Stats().SetattrsHere - before; here != 2 {
		t.Errorf("%d attribute changes answered by the mount, want the two chmods", here)
	}
	mustAs(t, bob, fmt.Sprintf("echo y > %[1]s/d/g && rm %[1]s/d/f", top))
	c := dial(t, p)
	got, err := c.Lookup(context.Background(), "/top/d")
	if err != nil || got.Mode != 0o775 || got.Gid != share {
		t.Fatalf("the metadata server has /top/d as %+v (%v), want mode 775, group %d", got, err, share)
	}
	list, err := c.Readdir(context.Background(), "/top/d")
	if err != nil || len(list) != 1 || list[0].Name != "g" {
		t.Fatalf("the metadata server lists /top/d as %v (%v), want only g", list, err)
	}
}

// TestDirectoryModeHereGovernsPathsThroughIt: while a directory's chmod
// answered here waits in the queue, the mount's requests to the metadata
// server by a path through that directory, which the server checks as
// the caller at every directory the path walks, are judged by the new
// mode, as the kernel judged them: a listing of it, and a FIFO made in
// it (with the setgid group it now passes on), each with the chmod alone
// in the queue. pjdfstest's open/06.t found the listing refused by the
// mode before the chmod.
func TestDirectoryModeHereGovernsPathsThroughIt(t *testing.T) {
	t.Cleanup(fusefs.SetRemoveBatchDelay(time.Second))
	share, alice, bob, carol := makeUsers(t)
	p := spawn(t)
	m := mountForUsers(t, p)
	top := m.Dir + "/top"
	sh(t, "cd / && mkdir -m 0777 "+top)
	// touch: the mount knows d's times again (the chgrp, the server's,
	// moved them), so the kernel keeps d's attributes from the chmod
	// answered here on and asks nothing before it lists d.
	mustAs(t, alice, fmt.Sprintf("cd %s && mkdir -m 0700 d && chgrp %d d && mkdir d/e && touch d", top, share))
	waitReleased(t, m)
	applied := func() {
		t.Helper()
		eventually(t, "the queue applied", func() error {
			if n := m.Stats().PendingHere; n != 0 {
				return fmt.Errorf("%d operations queued", n)
			}
			return nil
		})
	}
	// Each check follows a chmod that opens d, alone in the queue.
	open := func() {
		t.Helper()
		applied()
		mustAs(t, alice, "chmod 0700 "+top+"/d")
		applied()
		before := m.Stats().SetattrsHere
		mustAs(t, alice, "chmod 2775 "+top+"/d")
		if here := m.Stats().SetattrsHere - before; here != 1 {
			t.Fatalf("%d attribute changes answered by the mount, want the chmod", here)
		}
	}
	open()
	if out, err := as(carol, fmt.Sprintf(`python3 -c 'import os, sys; print(*os.listdir(sys.argv[1]))' %s/d`, top)); err != nil || out != "e\n" {
		t.Errorf("carol lists d (opendir, no stat before it): %v, %q; want e", err, out)
	}
	open()
	if out, err := as(bob, "mkfifo "+top+"/d/p"); err != nil {
		t.Errorf("bob makes a FIFO in d: %v, %q", err, out)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(top+"/d/p", &st); err != nil || st.Gid != share {
		t.Errorf("d/p: group %d (%v), want d's group %d (setgid)", st.Gid, err, share)
	}
}
