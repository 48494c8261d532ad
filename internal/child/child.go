// Package child starts programs that must not outlive what started them:
// the programs medic's plugins run to regenerate an output, and the
// command pario farm runs over each segment.
//
//   - A child runs in a process group of its own, and the whole group is
//     killed (SIGKILL) when its context is done, so that a cancelled run
//     takes the program's own children with it (a shell's sleep, say).
//   - On Linux the kernel kills it when its parent dies (Pdeathsig), which
//     also covers a SIGKILL of the parent, when nothing of the parent runs
//     any more to clean up.
//
// In a group of its own a child does not get the terminal's Ctrl-C: its
// parent stops it through the context.
package child

import (
	"context"
	"os/exec"
	"runtime"
	"time"
)

// Command returns an exec.Cmd for name set up as the package doc says.
// Run it with Run.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = attr()
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A grandchild that keeps the output pipes open must not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs cmd (made by Command) as cmd.Run does, holding the calling
// goroutine on its OS thread meanwhile: Linux sends Pdeathsig when the
// thread that started the child exits, not the process, and the Go
// runtime ends a thread when a goroutine locked to it exits, so an
// unrelated goroutine could otherwise take the child down with that
// thread (golang.org/issue/27505).
func Run(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Run()
}
