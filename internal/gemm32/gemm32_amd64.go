//go:build amd64 && !purego

package gemm32

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAsm reports whether the AVX2+FMA micro-kernels can run here.
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useAVX512 is whether the fp32 micro-kernel is kernel6x16AVX512 rather
// than kernel6x16AVX2: where the CPU has AVX-512 (a variable for the
// tests, which run both).
var useAVX512 = hasAsm && cpu.X86.HasAVX512F

// kernel6x16AVX2 is the assembly fp32 micro-kernel (see microKernel): one
// VFMADD231PS per element and k, k ascending.
//
//go:noescape
func kernel6x16AVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// kernel6x16IntAVX2 is the assembly int32 micro-kernel: VPMULLD, VPADDD.
//
//go:noescape
func kernel6x16IntAVX2(k int, a *int32, lda int, b *int32, c *int32, ldc int)

// fma32AVX2 is one VFMADD231SS, RN32(a·b + c): the hardware reference of
// fma32 in the tests.
//
//go:noescape
func fma32AVX2(a, b, c float32) float32

// packFullAVX2 packs the full column panels of B (see packB) with 32-byte
// moves.
//
//go:noescape
func packFullAVX2(k, panels int, b unsafe.Pointer, ldb int, bp unsafe.Pointer)

// kernel6x16AVX512 is kernel6x16AVX2 (same arguments and bits) with one
// zmm register per row of the tile: six multiply-adds per k where AVX2
// takes twelve.
//
//go:noescape
func kernel6x16AVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// kernel12x16AVX512 is kernel6x16AVX512 on two tiles of six rows at
// once (twelve rows of A and C).
//
//go:noescape
func kernel12x16AVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// kernelAsmPair returns the fp32 micro-kernel for two tiles of six rows at
// once (mulPacked's kern2), or nil where there is none (AVX2: the
// six-row kernel has enough independent sums to fill the FMA units).
func kernelAsmPair() microKernel[float32] {
	if !useAVX512 {
		return nil
	}
	return func(k int, a []float32, lda int, b, c []float32, ldc int) {
		_, _ = a[(2*mr-1)*lda+k-1], c[(2*mr-1)*ldc+nr-1]
		kernel12x16AVX512(k, &a[0], lda, &b[0], &c[0], ldc)
	}
}

func kernelAsm(k int, a []float32, lda int, b, c []float32, ldc int) {
	// NaN → the default NaN in either kernel's epilogue.
	if useAVX512 {
		kernel6x16AVX512(k, &a[0], lda, &b[0], &c[0], ldc)
		return
	}
	kernel6x16AVX2(k, &a[0], lda, &b[0], &c[0], ldc)
}

func kernelAsmInt(k int, a []int32, lda int, b, c []int32, ldc int) {
	kernel6x16IntAVX2(k, &a[0], lda, &b[0], &c[0], ldc)
}

func packFull(bp, b unsafe.Pointer, ldb, k, panels int) {
	if hasAsm {
		packFullAVX2(k, panels, b, ldb, bp)
		return
	}
	packFullPortable(bp, b, ldb, k, panels)
}

// fp32Kernels names the fp32 micro-kernels this machine runs, for the
// tests; with each the tests run, kernelAsm is it.
func fp32Kernels() []string {
	switch {
	case useAVX512:
		return []string{"avx512", "avx2"}
	case hasAsm:
		return []string{"avx2"}
	}
	return []string{"portable"}
}

// useFP32Kernel makes kernelAsm the fp32 micro-kernel named (by
// fp32Kernels) and returns a function that restores the previous one.
func useFP32Kernel(name string) (restore func()) {
	saved := useAVX512
	useAVX512 = name == "avx512"
	return func() { useAVX512 = saved }
}
