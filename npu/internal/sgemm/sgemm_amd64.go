//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// hasAsm reports whether the AVX2+FMA micro-kernel can run here.
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16AVX2 is the assembly micro-kernel of kernel6x16 (see there):
// C[6×16] (row stride ldc) += A[6×k] (row stride lda) · the packed panel
// b (16 floats per k), one VFMADD231PS per element and k, k ascending.
//
//go:noescape
func kernel6x16AVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// fma32AVX2 is one VFMADD231SS, RN32(a·b + c): the hardware reference of
// fma32 in the tests.
//
//go:noescape
func fma32AVX2(a, b, c float32) float32

func kernelAsm(k int, a []float32, lda int, b, c []float32, ldc int) {
	kernel6x16AVX2(k, &a[0], lda, &b[0], &c[0], ldc)
}

// packFullAVX2 packs the full column panels of B (see packB) with 32-byte
// moves.
//
//go:noescape
func packFullAVX2(k, panels int, b *float32, ldb int, bp *float32)

func packFull(bp, b []float32, ldb, k, panels int) {
	if hasAsm {
		packFullAVX2(k, panels, &b[0], ldb, &bp[0])
		return
	}
	packFullPortable(bp, b, ldb, k, panels)
}
