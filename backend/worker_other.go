//go:build !linux

package backend

import "os"

// pipeBuffered cannot tell what waits in a pipe here: settleStderr waits
// for the stderr tail to stop growing instead.
func pipeBuffered(*os.File) int { return 0 }
