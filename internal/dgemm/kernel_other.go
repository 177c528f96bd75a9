//go:build !amd64 || purego

package dgemm

// kernel is the portable micro-kernel where there is no assembly one.
var kernel = kernelGo

// kernelName names the micro-kernel in use, for benchmarks and tests.
const kernelName = "go"
