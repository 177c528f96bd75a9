package backend

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// waitAndReap waits for the command's process to exit, calls exited while
// it is still an unreaped zombie (so its process group id cannot have been
// reused yet), then reaps it.
func waitAndReap(cmd *exec.Cmd, exited func()) error {
	waitExited(cmd.Process.Pid)
	exited()
	return cmd.Wait()
}

// waitExited blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT, as package os does internally).
func waitExited(pid int) {
	const pPID = 1 // P_PID
	var siginfo [16]uint64
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&siginfo)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}
