//go:build !linux

package child

import (
	"os/exec"
	"syscall"
)

// Elsewhere the child stays in the parent's group and only it is
// killed on cancel; nothing kills it when the parent dies.
func attr() *syscall.SysProcAttr { return nil }

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
