//go:build !amd64 || purego

package sgemm

// hasAsm is false: no assembly micro-kernel on this platform or build.
const hasAsm = false

func kernelAsm(k int, a []float32, lda int, b, c []float32, ldc int) {
	kernelPortable(k, a, lda, b, c, ldc)
}

func packFull(bp, b []float32, ldb, k, panels int) {
	packFullPortable(bp, b, ldb, k, panels)
}
