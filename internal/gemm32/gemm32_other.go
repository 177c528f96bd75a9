//go:build !amd64 || purego

package gemm32

import "unsafe"

// hasAsm is false: no assembly micro-kernels on this platform or build.
const hasAsm = false

func kernelAsm(k int, a []float32, lda int, b, c []float32, ldc int) {
	kernelPortable(k, a, lda, b, c, ldc)
}

// kernelAsmPair is nil: no kernel for two tiles at once here.
func kernelAsmPair() microKernel[float32] { return nil }

func kernelAsmInt(k int, a []int32, lda int, b, c []int32, ldc int) {
	kernelPortableInt(k, a, lda, b, c, ldc)
}

func packFull(bp, b unsafe.Pointer, ldb, k, panels int) {
	packFullPortable(bp, b, ldb, k, panels)
}

// fp32Kernels names the fp32 micro-kernels this machine runs, for the
// tests; with each the tests run, kernelAsm is it (only the portable one
// here).
func fp32Kernels() []string { return []string{"portable"} }

// useFP32Kernel makes kernelAsm the fp32 micro-kernel named (by
// fp32Kernels) and returns a function that restores the previous one.
func useFP32Kernel(string) (restore func()) { return func() {} }
