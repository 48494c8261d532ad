package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// A pario bench whose write phase fills the disk removes the test file(s)
// it created, and says so, so that a full disk does not stay full; with
// -k it keeps them, and says that. (IOR aborts on the failed write and
// leaves the file; before, pario bench did the same.)
func TestBenchFullDiskRemovesTestFile(t *testing.T) {
	disk := testenv.Tmpfs(t, "8m")
	for _, c := range []struct {
		name string
		args []string
		want string
		left int
		pre  bool // the test file is there before the run
	}{
		{"shared file", nil, "pario: bench: removed the test file " + filepath.Join(disk, "x"), 0, false},
		{"file per process", []string{"-F"}, "pario: bench: removed the test files " + filepath.Join(disk, "x") + ".00000000 to " + filepath.Join(disk, "x") + ".00000001 (-k keeps them)", 0, false},
		{"in process", []string{"-N", "1", "-b", "16m"}, "pario: bench: removed the test file " + filepath.Join(disk, "x"), 0, false},
		{"-k", []string{"-k"}, "pario: bench: kept the test file " + filepath.Join(disk, "x") + " (-k)", 1, false},
		// -E writes into a file the run did not create: left alone.
		{"-E", []string{"-E"}, "no space left on device", 1, true},
		{"-E, no file before", []string{"-E"}, "pario: bench: removed the test file " + filepath.Join(disk, "x"), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.pre {
				if err := os.WriteFile(filepath.Join(disk, "x"), []byte("the user's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"bench", "-a", "POSIX", "-N", "2", "-b", "8m", "-t", "1m", "-w", "-o", filepath.Join(disk, "x")}, c.args...)
			out, err := runErr("", args...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("pario %s on an 8 MiB disk: %v, want exit status 1\n%s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(out, "no space left on device") {
				t.Errorf("the failure does not say the disk is full:\n%s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("the output does not say %q:\n%s", c.want, out)
			}
			if c.pre && strings.Contains(out, "removed") {
				t.Errorf("a file that was there before the run is said to be removed:\n%s", out)
			}
			left, _ := os.ReadDir(disk)
			if len(left) != c.left {
				t.Errorf("after the failed run the disk holds %d files, want %d", len(left), c.left)
			}
			for _, e := range left {
				os.Remove(filepath.Join(disk, e.Name()))
			}
		})
	}
}

// Ctrl-C (SIGINT to the process group, as a terminal sends it) or a
// SIGTERM to the launcher alone, in the middle of the write phase: pario
// bench stops, removes the test file it was writing, says so, and exits
// 130. Before, it left gigabytes behind, and with local ranks said only
// "2 of 2 ranks failed (their messages are above)" with no message above.
func TestBenchInterruptRemovesTestFile(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks string
		sig   syscall.Signal
		group bool
	}{
		{"Ctrl-C, local ranks", "2", syscall.SIGINT, true},
		{"SIGTERM to the launcher", "2", syscall.SIGTERM, false},
		{"Ctrl-C, in process", "1", syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "x")
			// 4 GiB a rank: far more than the write phase gets to before
			// the signal.
			cmd := exec.Command(parioBin, "bench", "-a", "POSIX", "-N", c.ranks, "-b", "4g", "-t", "1m", "-w", "-o", file)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}()
			// Mid-write: the file has data.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if st, err := os.Stat(file); err == nil && st.Size() >= 1<<20 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no data written after 30 s:\n%s", buf.String())
				}
			}
			pid := cmd.Process.Pid
			if c.group {
				pid = -pid
			}
			if err := syscall.Kill(pid, c.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("pario bench still running 60 s after %v:\n%s", c.sig, buf.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("interrupted: %v, want exit status 130", err)
			}
			out := buf.String()
			if want := "pario: bench: interrupted; removed the test file " + file + " (-k keeps it)"; !strings.Contains(out, want) {
				t.Errorf("the output does not say %q:\n%s", want, out)
			}
			if strings.Contains(out, "messages are above") || strings.Contains(out, "context canceled") {
				t.Errorf("the output reads as a failure, not an interruption:\n%s", out)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("the interrupted run left %d file(s) (%s)", len(left), left[0].Name())
			}
		})
	}
}

// The default run interrupted: its embedded cluster stays up until the
// ranks have removed their file through it, and its directory goes.
// Before, the cluster stopped with the first Ctrl-C, under the ranks.
func TestBenchDefaultRunInterrupted(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(parioBin, "bench", "-b", "2g")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PARIO_HOME="+t.TempDir(), "PARIO_CLUSTER=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &watchBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Mid-write: the I/O servers hold data.
	for deadline := time.Now().Add(60 * time.Second); treeBytes(tmp) < 4<<20; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("pario bench ended before its write phase: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no data written after 60 s:\n%s", out.String())
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("pario bench still running 60 s after Ctrl-C:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("interrupted: %v, want exit status 130", err)
	}
	for _, want := range []string{"pario: bench: interrupted; removed the test file pario:/pario-bench.dat", "embedded cluster stopped and " + tmp} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, out.String())
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the interrupted default run left %s in $TMPDIR", left[0].Name())
	}
}

// treeBytes is the size of the files under dir but the metadata
// server's database (16 MiB from the start).
func treeBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Ext(path) != ".db" {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// watchBuffer collects output, safe for two writers.
type watchBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A write phase whose create failed made no file: the failure says
// nothing of removing one (it said "removed the test file /proc/x").
func TestBenchCreateFailedRemovesNothing(t *testing.T) {
	out, err := runErr("", "bench", "-a", "POSIX", "-w", "-o", "/proc/pario-bench-test")
	if err == nil || !strings.Contains(out, "no such file or directory") {
		t.Fatalf("bench -o /proc/pario-bench-test: %v, want the create to fail\n%s", err, out)
	}
	if strings.Contains(out, "removed") {
		t.Errorf("a run that created no file says it removed one:\n%s", out)
	}
}

// A directory given to -o is refused before anything is removed: it was
// removed (when empty) and replaced by the test file.
func TestBenchTestFileIsADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runErr("", "bench", "-a", "POSIX", "-w", "-o", dir)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "test file "+dir+" is a directory, not a regular file") {
		t.Errorf("bench -o DIR: %v, want exit status 1 saying it is a directory\n%s", err, out)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("the directory given to -o is gone: %v", err)
	}
}
