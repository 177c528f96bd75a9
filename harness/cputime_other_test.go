//go:build !unix

package harness_test

// processCPU is not measured here (0: the cpu-ms/op metric reads 0).
func processCPU() int64 { return 0 }
