package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --layout applies to an --io mfg output that already exists: before,
// the store's create kept the old file's layout, so a second run with
// another --layout (or varstrip strips for another shape) silently wrote
// with the first one's.
func TestMcmcLayoutOfExistingFile(t *testing.T) {
	cf := up(t)
	run(t, cf, "mcmc", "--np", "2", "--layout", "simple_stripe:strip_size=64k", "-o", "pario:/lay.mfg")
	out := run(t, cf, "mcmc", "--np", "2", "--layout", "simple_stripe:strip_size=1k", "-o", "pario:/lay.mfg")
	if !strings.Contains(out, "strip_size=1024") {
		t.Errorf("the report names another layout:\n%s", out)
	}
	if got := run(t, cf, "layout", "get", "/lay.mfg"); !strings.Contains(got, "strip_size=1024") {
		t.Errorf("second run with --layout simple_stripe:strip_size=1k: %s", got)
	}
}

// An interrupted --io mfg run leaves nothing under its output's name and
// an older file there whole: the parallel file is written under a
// temporary name and renamed into place at the end. Before, the older
// file was truncated at the start, and the interrupted one (full-sized
// as soon as the last run's first line was written) stayed under the
// name.
func TestMcmcParallelFileAllOrNothing(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	local := filepath.Join(dir, "run.mfg")
	older := []byte("an older, complete output\n")
	if err := os.WriteFile(local, older, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "mcmc", "--runs", "2", "--taxa", "8", "--gens", "3", "-o", "pario:/run.mfg")
	oldStat := run(t, cf, "stat", "/run.mfg")
	for _, tc := range []struct {
		name, out string
		changed   func() bool // the run has begun writing
		left      func() string
	}{
		{"local", local, func() bool {
			ents, _ := os.ReadDir(dir)
			return !sameSmall(local, older) || len(ents) > 1
		}, func() string {
			var names []string
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !sameSmall(local, older) {
				names = append(names, "run.mfg changed")
			}
			return strings.Join(names, " ")
		}},
		{"store", "pario:/run.mfg", func() bool {
			out, _ := runErr(cf, "ls", "/")
			st, _ := runErr(cf, "stat", "/run.mfg")
			return strings.Contains(out, ".tmp") || st != oldStat
		}, func() string {
			out, _ := runErr(cf, "ls", "/")
			if st, _ := runErr(cf, "stat", "/run.mfg"); st != oldStat {
				out += " run.mfg changed"
			}
			return strings.Join(strings.Fields(out), " ")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(parioBin, "--cluster", cf, "mcmc", "--np", "2", "--runs", "2", "--taxa", "8", "--gens", "1000000000", "-o", tc.out)
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(20 * time.Second); !tc.changed(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the run wrote nothing in 20 s:\n%s", buf.String())
				}
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(buf.String(), "interrupted; no output written") {
				t.Errorf("interrupted: %v, want exit status 130 saying no output was written:\n%s", err, buf.String())
			}
			if got, want := tc.left(), map[string]string{"local": "run.mfg", "store": "run.mfg"}[tc.name]; got != want {
				t.Errorf("after the interrupted run: %q, want the older %s alone, unchanged", got, want)
			}
		})
	}
}

// sameSmall says whether file holds want, without reading a file larger
// than it (an interrupted run's sparse file has gigabytes).
func sameSmall(file string, want []byte) bool {
	st, err := os.Stat(file)
	if err != nil || st.Size() != int64(len(want)) {
		return false
	}
	b, err := os.ReadFile(file)
	return err == nil && bytes.Equal(b, want)
}

// Outputs that cannot be written are refused before any rank starts,
// said once (not once per rank, followed by "N of N ranks failed"), with
// exit status 2 for an -o that names the wrong kind of thing and 1 for a
// directory or cluster that is not there. A named pipe as --io mfg's
// output hung the run for good, deaf to SIGTERM, in its open.
func TestMcmcOutputTargets(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "mkdir", "/d")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--np", "4", "--layout", "bogus", "-o", "pario:/x"}, 2, `unknown distribution "bogus"`},
		{[]string{"--np", "3", "-o", dir}, 2, "is a directory, not a regular file"},
		{[]string{"-o", dir}, 2, "is a directory, not a regular file"},
		{[]string{"--np", "2", "-o", fifo}, 2, "is a named pipe, not a regular file"},
		{[]string{"-o", fifo}, 2, "is a named pipe, not a regular file"},
		{[]string{"--np", "3", "-o", "pario:/d"}, 2, "is a directory"},
		{[]string{"--np", "3", "-o", filepath.Join(dir, "no", "x")}, 1, "no directory"},
		{[]string{"--np", "3", "-o", "pario:/no/x"}, 1, "the store has no directory /no"},
		{[]string{"--io", "serial", "-o", dir + "/"}, 2, "names a directory"},
		{[]string{"--io", "serial", "--np", "2", "-o", filepath.Join(dir, "no", "s")}, 1, "no directory"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, parioBin, append([]string{"--cluster", cf, "mcmc"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || strings.Count(string(out), tc.want) != 1 || strings.Contains(string(out), "ranks failed") {
			t.Errorf("pario mcmc %q: %v\n%s\nwant exit status %d and one line saying %q", tc.args, err, out, tc.code, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("refused runs left %d files in the directory", len(ents)-1)
	}
	// Serial files on emulated nodes need the cluster file (node 0's disk).
	out, err := runErr(filepath.Join(dir, "none"), "mcmc", "--io", "serial", "--np", "2", "--nodes", "2", "-o", filepath.Join(dir, "s"))
	if err == nil || strings.Count(out, "no cluster file") != 1 || strings.Contains(out, "ranks failed") {
		t.Errorf("serial on --nodes with no cluster: %v\n%s\nwant one line saying so", err, out)
	}
}

// pario mcmc split: bad flags are bad usage (exit status 2) before the
// file is opened, an empty -o or -o DIR/ is refused (it wrote hidden
// .run1.t files), and a named pipe is refused instead of waited on.
func TestMcmcSplitBadInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nosuch.mfg", "--runs", "0"}, 2, "runs must be at least 1"},
		{[]string{"nosuch.mfg", "--samplefreq", "0"}, 2, "sample frequency"},
		{[]string{"nosuch.mfg", "-o", ""}, 2, `-o ""`},
		{[]string{"nosuch.mfg", "-o", dir + "/"}, 2, "want the base of the files' names"},
		{[]string{fifo, "-o", filepath.Join(dir, "s")}, 1, "is a named pipe, not a regular file"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, parioBin, append([]string{"mcmc", "split"}, tc.args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("pario mcmc split %q: %v\n%s\nwant exit status %d saying %q", tc.args, err, out, tc.code, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("refused splits left %d files", len(ents)-1)
	}
}

// An interrupted split exits 130 and writes nothing; before, it went on
// to the end and wrote every file. The first output is a named pipe
// (written as it is), so the test knows when the split is writing: once
// the pipe's read end opens.
func TestMcmcSplitInterrupted(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big.mfg")
	shape := []string{"--runs", "8", "--taxa", "1024", "--gens", "200"}
	run(t, "", append([]string{"mcmc", "-o", src}, shape...)...)
	base := filepath.Join(dir, "sp")
	if err := syscall.Mkfifo(base+".run1.t", 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parioBin, append([]string{"mcmc", "split", src, "-o", base}, shape...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pipe, err := os.Open(base + ".run1.t") // returns once split opens it to write
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, pipe)
	pipe.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(buf.String(), "interrupted; no output written") {
		t.Errorf("interrupted split: %v\n%s\nwant exit status 130 saying no output was written", err, buf.String())
	}
	if m, _ := filepath.Glob(base + "*"); len(m) != 1 {
		t.Errorf("an interrupted split left %v", m)
	}
}

// pario mcmc matrix: settings of the mrbayes block are checked (and are
// only for --mrbayes), a matrix past 4 Gi characters is refused at once,
// and Ctrl-C stops one being written with exit status 130 (it ran on,
// up to a terabyte, until a second Ctrl-C).
func TestMcmcMatrixBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mrbayes", "--runs", "0"}, "--runs 0"},
		{[]string{"--mrbayes", "--samplefreq", "0"}, "--samplefreq 0"},
		{[]string{"--runs", "3"}, "--runs is for the mrbayes block"},
		{[]string{"--taxa", "65536", "--nchar", "16777216"}, "more than 4294967296"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, parioBin, append([]string{"mcmc", "matrix"}, tc.args...)...)
		var stdout countWriter
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) || stdout > 0 {
			t.Errorf("pario mcmc matrix %q: %v, %d B out\n%s\nwant exit status 2 saying %q and no matrix", tc.args, err, stdout, stderr.String(), tc.want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, parioBin, "mcmc", "matrix", "--taxa", "65536", "--nchar", "65536")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, make([]byte, 1<<20)); err != nil { // it is writing
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("interrupted matrix: %v\n%s\nwant exit status 130", err, stderr.String())
	}
}

// countWriter counts what is written to it and keeps none of it.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}
