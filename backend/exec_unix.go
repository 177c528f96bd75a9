//go:build unix

package backend

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the command the leader of a new process group, so
// that it and everything it starts can be killed together.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to the command's process group. It is
// harmless when the group is already gone.
func killProcessGroup(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL) // ESRCH: nothing left to kill
}
