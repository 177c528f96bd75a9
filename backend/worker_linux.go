//go:build linux

package backend

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBuffered returns how many bytes wait to be read from pipe f (0 when
// that cannot be told). SyscallConn rather than Fd: Fd would put f in
// blocking mode, and finish could then not end a Read of it by closing it.
func pipeBuffered(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
	})
	return n
}
