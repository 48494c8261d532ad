package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
)

// TestSecretCommand: `pario secret` writes a secret the servers accept,
// never over an existing one, and the servers refuse a secret file that
// others may read.
func TestSecretCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	run(t, "", "secret", p)
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("pario secret: %v %v", st, err)
	}
	if out, err := runErr("", "secret", p); err == nil || !strings.Contains(out, "exists") {
		t.Fatalf("pario secret over an existing file: %v %q", err, out)
	}
	// Into a directory that does not exist yet, as in its --help
	// (/etc/pario/secret on a new host): made, for the owner alone.
	nested := filepath.Join(dir, "etc", "pario", "secret")
	run(t, "", "secret", nested)
	if st, err := os.Stat(filepath.Dir(nested)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("pario secret %s: its directory %v %v, want mode 0700", nested, st, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runErr("", "data", "--name", "d0", "--dir", filepath.Join(dir, "d0"), "--listen", "127.0.0.1:0", "--secret-file", p)
	if err == nil || !strings.Contains(out, p) || !strings.Contains(out, "chmod 600") {
		t.Fatalf("pario data with a 0644 secret: %v %q", err, out)
	}
}

// TestSmallCLIDefects: cp onto itself, rm of several paths with failures
// among them, and names that would break a listing.
func TestSmallCLIDefects(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	data := bytes.Repeat([]byte("0123456789"), 10000)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "mkdir", "/d")
	run(t, cf, "cp", "-q", src, "pario:/d/f")

	t.Run("cp onto itself", func(t *testing.T) {
		for _, dst := range []string{"pario:/d/f", "pario://d/f", "pario:/d//f", "pario:/d", "pario:/d/"} {
			out, err := runErr(cf, "cp", "-q", "pario:/d/f", dst)
			if err == nil || !strings.Contains(out, "same file") {
				t.Errorf("cp pario:/d/f %s: %v %q; want a same-file refusal", dst, err, out)
			}
			if out := run(t, cf, "stat", "/d/f"); !strings.Contains(out, fmt.Sprintf("size:      %d", len(data))) {
				t.Fatalf("after cp pario:/d/f %s the file changed:\n%s", dst, out)
			}
		}
		// A copy to another name still works.
		run(t, cf, "cp", "-q", "pario:/d/f", "pario:/d/g")
		back := filepath.Join(dir, "back")
		run(t, cf, "cp", "-q", "pario://d/g", back)
		if b, err := os.ReadFile(back); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("copy of a copy differs (%v)", err)
		}
	})

	t.Run("cp --layout onto an existing file", func(t *testing.T) {
		// The copy replaces the bytes, not the layout: cp says so.
		cmd := exec.Command(parioBin, "--cluster", cf, "cp", "-q", "--layout", "simple_stripe:strip_size=1m", src, "pario:/d/f")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "keeps its layout") {
			t.Fatalf("cp --layout onto /d/f: %v %q; want a warning that it keeps its layout", err, out)
		}
		if got := run(t, cf, "layout", "get", "/d/f"); strings.Contains(got, "strip_size=1048576") {
			t.Fatalf("/d/f took the layout: %s", got)
		}
	})

	t.Run("rm goes on", func(t *testing.T) {
		run(t, cf, "mkdir", "/r", "/r/full")
		run(t, cf, "cp", "-q", src, "pario:/r/a")
		run(t, cf, "cp", "-q", src, "pario:/r/b")
		run(t, cf, "cp", "-q", src, "pario:/r/full/x")
		out, err := runErr(cf, "rm", "/r/a", "/r/missing1", "/r/full", "/r/b", "/r/missing2")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("rm with failures: %v, want exit status 1\n%s", err, out)
		}
		for _, want := range []string{"remove /r/missing1: no such file", "remove /r/full: directory not empty", "remove /r/missing2: no such file"} {
			if !strings.Contains(out, want) {
				t.Errorf("rm output lacks %q:\n%s", want, out)
			}
		}
		if got := strings.Fields(run(t, cf, "ls", "/r")); !slices.Equal(got, []string{"full"}) {
			t.Fatalf("after rm, /r holds %q; want only full (a and b removed despite the errors)", got)
		}
	})

	t.Run("ls quotes names", func(t *testing.T) {
		run(t, cf, "mkdir", "/q")
		for _, name := range []string{"two\nlines", "red\x1b[31mtext", "plain"} {
			run(t, cf, "cp", "-q", src, "pario:/q/"+name)
		}
		out := run(t, cf, "ls", "/q")
		want := "plain\n'red'$'\\033''[31mtext'\n'two'$'\\n''lines'\n"
		if out != want {
			t.Fatalf("ls /q:\n%s\nwant:\n%s", out, want)
		}
		long := run(t, cf, "ls", "-l", "/q")
		if strings.Count(long, "\n") != 3 || strings.ContainsAny(long, "\x1b") {
			t.Fatalf("ls -l /q: %q", long)
		}
	})
}

// TestUpWithFewerServers: pario up on a store made with 4 I/O servers
// refuses to start with 2 and says how many it needs.
func TestUpWithFewerServers(t *testing.T) {
	dir := t.TempDir()
	upIn := func(servers string) *exec.Cmd {
		cmd := exec.Command(parioBin, "up", "--dir", dir, "--servers", servers)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	cmd := upIn("4")
	cf := filepath.Join(dir, "cluster")
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(cf); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	src := filepath.Join(t.TempDir(), "f")
	os.WriteFile(src, bytes.Repeat([]byte("x"), 1<<20), 0o644)
	run(t, cf, "cp", "-q", src, "pario:/f")
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	// Before the fix it started and served errors: give up after a while.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, parioBin, "up", "--dir", dir, "--servers", "2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "I/O servers 2 to 3") || !strings.Contains(string(out), "--servers 4") {
		t.Fatalf("pario up --servers 2 on a 4-server store: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "cluster up") {
		t.Fatalf("pario up started:\n%s", out)
	}
}

// TestMetaDamagedDatabase: pario meta on a meta.db with a bad page exits
// with an error naming the file, not a bbolt panic trace.
func TestMetaDamagedDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "meta.db")
	s, err := meta.Open(db, meta.Options{Servers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, err := s.Create(context.Background(), fmt.Sprintf("/a-file-with-a-name-long-enough-to-fill-pages-%04d", i), 0o644, dist.Layout{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// Every branch page (flag 1 in the page header) sends its first child
	// far past the end of the file.
	size := int(binary.LittleEndian.Uint32(b[16+8:]))
	n := 0
	for pg := 2; (pg+1)*size <= len(b); pg++ {
		if binary.LittleEndian.Uint16(b[pg*size+8:]) == 1 {
			binary.LittleEndian.PutUint64(b[pg*size+16+8:], 1<<40)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no branch page to damage")
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	run(t, "", "secret", secret)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, parioBin, "meta", "--dir", dir, "--listen", "127.0.0.1:0",
		"--secret-file", secret, "--data", "data0=127.0.0.1:1").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), db) || !strings.Contains(string(out), "damaged") ||
		strings.Contains(string(out), "goroutine") {
		t.Fatalf("pario meta on a damaged meta.db: %v\n%s", err, out)
	}
}
