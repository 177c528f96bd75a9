//go:build !unix

package dgemm

// cpuTime is 0 where getrusage is not available: the benchmark's
// cpu-ns/op metric then reads 0.
func cpuTime() int64 { return 0 }
