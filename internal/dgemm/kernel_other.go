//go:build !amd64 || purego

package dgemm

// kernel and kernelMul are the portable micro-kernels where there are no
// assembly ones.
var kernel, kernelMul kernelFunc = kernelGo, kernelMulGo

// kernelName names the micro-kernel in use, for benchmarks and tests.
const kernelName = "go"
