//go:build amd64 && !purego

package dgemm

import "golang.org/x/sys/cpu"

// kernel is the micro-kernel of this machine: AVX2 with FMA when the CPU
// has both, else the portable one.
var kernel = kernelGo

// kernelName names the micro-kernel in use, for benchmarks and tests.
var kernelName = "go"

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernel, kernelName = kernelAVX2, "avx2"
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
