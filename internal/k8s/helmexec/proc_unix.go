//go:build unix

package helmexec

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the helper in a process group of its own and makes
// the end of its context kill the whole group: `go run` (from a checkout)
// dies of SIGTERM without passing it on, and its child must not outlive it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
