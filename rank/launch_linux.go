package rank

import (
	"errors"
	"os"
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

// stopGently makes the end of the launch's context send a rank SIGTERM
// rather than SIGKILL (cmd.WaitDelay later kills what is left), so that it
// can stop the programs it runs and remove what it leaves half-done, as it
// would on a Ctrl-C in its terminal. A rank killed at once left its
// commands (pario farm's) running, orphaned.
func stopGently(cmd *exec.Cmd) {
	cmd.Cancel = func() error {
		err := cmd.Process.Signal(syscall.SIGTERM)
		if errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		return err
	}
}
