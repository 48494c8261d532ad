package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock returns the first ```sh block after the heading of
// README.md at the repository's root.
func readmeBlock(t *testing.T, root, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("README.md: no ```sh block after %q", heading)
	}
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("README.md: the block after %q does not end", heading)
	}
	return block
}

// TestReadmeStoreQuickStart runs README.md's "Using the store" block as a
// user pasting it into a fresh shell would: in an empty directory that
// looks like a checkout (the repository's entries linked into it), with a
// fresh home directory (so the default data directory is empty), under
// bash -e so that any failing line fails the test. It failed at `layout
// set`, which ran before `pario up &` had written its cluster file, and
// at `cp big.dat`, a file the block never made.
func TestReadmeStoreQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pario and copies 64 MiB through a cluster")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, root, "## Using the store")

	work, home := t.TempDir(), t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case ".git", "bin", "big.dat", "copy.dat":
			continue // what the block writes stays in work
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// The go command keeps its caches (a fresh home would rebuild every
	// dependency) and never fetches a toolchain.
	var goEnv []string
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		goEnv = append(goEnv, v+"="+strings.TrimSpace(string(out)))
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GOTOOLCHAIN=local", "GOFLAGS=" + os.Getenv("GOFLAGS")}
	env = append(env, goEnv...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-c", block)
	cmd.Dir, cmd.Env = work, env
	// Its own process group, so that a `pario up &` the block leaves
	// running can be stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A `pario up &` still running holds the output pipe open after bash
	// exits: stop waiting for it then.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // bash succeeded; the cluster it stopped was still syncing
	}
	clusterFile := filepath.Join(home, ".local", "share", "pario", "cluster")
	defer func() {
		// Whatever happened, nothing of the block keeps running.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(clusterFile); os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Errorf("the block's pario up did not stop on SIGTERM within a minute")
				return
			}
		}
	}()
	if err != nil {
		t.Fatalf("README's block failed: %v\n%s\nthe block:\n%s", err, out.String(), block)
	}
	if !strings.Contains(out.String(), "copied back intact") {
		t.Errorf("README's block did not copy the file back intact:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "pario", "meta")); err != nil {
		t.Errorf("the cluster did not keep its data in the fresh home's default data directory: %v", err)
	}
}
