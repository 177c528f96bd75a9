//go:build amd64 && !purego

package dgemm

import "golang.org/x/sys/cpu"

// kernel and kernelMul are MulAbs's and Mul's micro-kernels on this
// machine: AVX2 with FMA when the CPU has both, else the portable ones.
var kernel, kernelMul kernelFunc = kernelGo, kernelMulGo

// kernelName names the micro-kernel in use, for benchmarks and tests.
var kernelName = "go"

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernel, kernelMul, kernelName = kernelAVX2, kernelMulAVX2, "avx2"
	}
}

// kernelAVX2 is kernelGo (same arguments and bits) in AVX2+FMA assembly.
func kernelAVX2(kcc int, a, b, d, s []float64, ldc int, load bool) {
	if kcc <= 0 {
		kernelGo(kcc, a, b, d, s, ldc, load)
		return
	}
	// The bounds checks the assembly cannot make.
	_, _ = a[kcc*mr-1], b[kcc*2*nr-1]
	_, _ = d[(mr-1)*ldc+nr-1], s[(mr-1)*ldc+nr-1]
	mulAbsAVX2(kcc, &a[0], &b[0], &d[0], &s[0], ldc, load)
}

// mulAbsAVX2 is the 3×8 micro-kernel on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAbsAVX2(kcc int, a, b, d, s *float64, ldc int, load bool)

// kernelMulAVX2 is kernelMulGo (same arguments and bits) in AVX2+FMA
// assembly.
func kernelMulAVX2(kcc int, a, b, d, s []float64, ldc int, load bool) {
	if kcc <= 0 {
		kernelMulGo(kcc, a, b, d, s, ldc, load)
		return
	}
	// The bounds checks the assembly cannot make.
	_, _ = a[kcc*mrMul-1], b[kcc*nr-1]
	_ = d[(mrMul-1)*ldc+nr-1]
	mulAVX2(kcc, &a[0], &b[0], &d[0], ldc, load)
}

// mulAVX2 is the 6×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX2(kcc int, a, b, d *float64, ldc int, load bool)
