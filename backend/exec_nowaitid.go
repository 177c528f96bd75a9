//go:build !linux

package backend

import "os/exec"

// waitAndReap waits for the command and reaps it. Without waitid(WNOWAIT)
// the process group cannot be signalled safely once the leader is reaped,
// so processes it left behind are not killed here (Run still stops waiting
// for their output after a short delay).
func waitAndReap(cmd *exec.Cmd, exited func()) error {
	return cmd.Wait()
}
