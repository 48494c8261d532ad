package rank

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a launched rank when the launcher
// dies, so that no rank outlives a killed `pario bench -N`.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
