package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An empty argument names nothing. As a store path it used to mean the
// root: pario rm -r ” went for /, pario mv /f ” moved /f into / and
// exited 0, pario ls ” listed /.
func TestEmptyArgumentIsNoPath(t *testing.T) {
	cf := up(t)
	run(t, cf, "mkdir", "/keep")
	local := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(local, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ls", ""}, {"stat", "/keep", ""}, {"mkdir", ""}, {"rm", "-r", ""},
		{"mv", "/keep", ""}, {"cp", local, ""}, {"layout", "get", ""},
		{"viewdist", ""}, {"layout", "set", "", "simple_stripe:strip_size=1m"},
	} {
		out, err := runErr(cf, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "is empty") {
			t.Errorf("pario %q: err %v, output %q; want exit status 2 saying the argument is empty", args, err, out)
		}
	}
	// An empty --dir too: pario up used the default data directory.
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // before, it served
	defer cancel()
	cmd := exec.CommandContext(ctx, parioBin, "up", "--dir", "")
	cmd.Env = append(os.Environ(), "PARIO_HOME="+home)
	upOut, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(upOut), "--dir is empty") {
		t.Errorf("pario up --dir '': err %v, output %q; want exit status 2 saying --dir is empty", err, upOut)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("pario up --dir '' made %d entries in the default data directory", len(ents))
	}
	if out := run(t, cf, "ls", "/"); !strings.Contains(out, "keep") {
		t.Errorf("/keep is gone after the refused calls: ls / = %q", out)
	}
	// A farm's command line is the command's: grep '' is grep's business.
	out, _ := runErr(cf, "farm", "-N", "1", "--in", local, "--out", filepath.Join(t.TempDir(), "o"), "--", "grep", "")
	if strings.Contains(out, "is empty") {
		t.Errorf("pario farm -- grep '': refused as an empty path: %q", out)
	}
}
