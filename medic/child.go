package medic

import (
	"context"
	"os/exec"

	"github.com/pario/pario/internal/child"
)

// Command returns an exec.Cmd for a program a plugin runs to regenerate an
// output (BLAST's searches, say), set up so that it cannot outlive the
// regeneration or the receiver: it runs in a process group of its own,
// killed whole when ctx is done, and on Linux dies with the receiver
// (package internal/child). Run it with RunCommand.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return child.Command(ctx, name, args...)
}

// RunCommand runs cmd (made by Command) as cmd.Run does, on a locked OS
// thread so that the kernel's kill-with-parent signal follows the
// receiver's life, not one of its threads' (child.Run).
func RunCommand(cmd *exec.Cmd) error { return child.Run(cmd) }
