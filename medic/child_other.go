//go:build !linux

package medic

import (
	"os/exec"
	"syscall"
)

// Elsewhere the child stays in the receiver's group and only it is
// killed on cancel; nothing kills it when the receiver dies.
func childAttr() *syscall.SysProcAttr { return nil }

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
