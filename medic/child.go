package medic

import (
	"context"
	"os/exec"
	"runtime"
	"time"
)

// Command returns an exec.Cmd for a program a plugin runs to regenerate an
// output (BLAST's searches, say), set up so that it cannot outlive the
// regeneration or the receiver:
//
//   - it runs in a process group of its own, and the whole group is
//     killed (SIGKILL) when ctx is done, so a canceled regeneration takes
//     the program's own children with it;
//   - on Linux the kernel kills it when the receiver dies (Pdeathsig),
//     which also covers a SIGKILL of the receiver, when nothing of the
//     receiver runs any more to clean up.
//
// Run it with RunCommand.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A grandchild that keeps the output pipes open must not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// RunCommand runs cmd (made by Command) as cmd.Run does, holding the
// calling goroutine on its OS thread meanwhile: Linux sends Pdeathsig when
// the thread that started the child exits, not the process, and the Go
// runtime ends a thread when a goroutine locked to it exits, so an
// unrelated goroutine could otherwise take the child down with that
// thread (golang.org/issue/27505).
func RunCommand(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Run()
}
