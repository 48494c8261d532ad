package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// An interrupted pario farm leaves none of its commands' processes
// behind, grandchildren included (a shell's sleep), whether the signal
// comes from the terminal (the whole foreground process group) or to the
// launcher alone (kill -INT PID, timeout(1)). Before, `kill -INT` of the
// launcher left every command running with init as its parent: the ranks
// were killed, and their commands were not.
func TestFarmInterruptLeavesNoCommands(t *testing.T) {
	for _, how := range []string{"launcher", "group"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{"in.txt": "a\nb\nc\nd\n", "io.ann": "in NEWSPAPER ro wo b farm=Lines\nout NEWSPAPER rc wo b farm=0\n"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pids := filepath.Join(dir, "pids")
			// Each command starts a sleep of its own (a grandchild of its
			// rank) and records its process ID.
			cmd := exec.Command(parioBin, "farm", "-N", "2", "--in", "in.txt", "--out", "out.txt", "--annotations", "io.ann", "--",
				"sh", "-c", `sleep 321 & echo $! >> "$0"; wait`, pids)
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a foreground job of its own
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var sleepers []int
			deadline := time.Now().Add(30 * time.Second)
			for len(sleepers) < 2 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				b, _ := os.ReadFile(pids)
				sleepers = sleepers[:0]
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						sleepers = append(sleepers, pid)
					}
				}
			}
			t.Cleanup(func() {
				for _, pid := range sleepers {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if len(sleepers) < 2 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the commands did not start within 30 s:\n%s", out.String())
			}
			target := cmd.Process.Pid
			if how == "group" {
				target = -target // as the terminal's Ctrl-C does
			}
			if err := syscall.Kill(target, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
					t.Errorf("interrupted farm: %v, want exit status 130\n%s", err, out.String())
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("farm still running 60 s after SIGINT:\n%s", out.String())
			}
			// An orphan's zombie is reaped by init; testenv.Alive counts
			// it as gone either way.
			deadline = time.Now().Add(10 * time.Second)
			for _, pid := range sleepers {
				for testenv.Alive(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("the sleep (pid %d) a farm command started still runs after the farm ended:\n%s", pid, out.String())
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}
