//go:build unix

package harness_test

import "syscall"

// processCPU returns the process's user plus system CPU time in
// nanoseconds, every thread's.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
