//go:build !unix

package backend

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where process groups are not available.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills only the command itself where process groups are
// not available.
func killProcessGroup(p *os.Process) {
	p.Kill() // fails only when it has already exited
}
