//go:build !amd64 || purego

package gemm32

import "unsafe"

// hasAsm is false: no assembly micro-kernels on this platform or build.
const hasAsm = false

func kernelAsm(k int, a []float32, lda int, b, c []float32, ldc int) {
	kernelPortable(k, a, lda, b, c, ldc)
}

func kernelAsmInt(k int, a []int32, lda int, b, c []int32, ldc int) {
	kernelPortableInt(k, a, lda, b, c, ldc)
}

func packFull(bp, b unsafe.Pointer, ldb, k, panels int) {
	packFullPortable(bp, b, ldb, k, panels)
}
