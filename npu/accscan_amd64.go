//go:build amd64 && !purego

package npu

import (
	"unsafe"

	"github.com/x448/float16"
	"golang.org/x/sys/cpu"
)

// useScanAVX2 is whether holdsNegZeroOrSNaN tests eight accumulators at a
// time (holdsNegZeroOrSNaNAVX2): the cube's FMA and rank-one paths scan
// their whole fp32 accumulator tile before every Mmad that does not start
// it, whenever A holds a zero anywhere (a 4096³ fp16 gemm: 8% of its CPU
// in the Go loop). A variable for the tests, which switch it.
var useScanAVX2 = cpu.X86.HasAVX2

// holdsNegZeroOrSNaNAVX2 reports whether one of the n (a positive
// multiple of 8) fp32 values at c is −0 or a signalling NaN, with
// holdsNegZeroOrSNaNGo's test on each.
//
//go:noescape
func holdsNegZeroOrSNaNAVX2(c *float32, n int) bool

// holdsNegZeroOrSNaN reports whether c holds a −0 or a signalling NaN:
// eight values at a time by AVX2 where the CPU has it, the tail (and
// everything, without AVX2) in Go.
func holdsNegZeroOrSNaN(c []float32) bool {
	if n := len(c) &^ 7; useScanAVX2 && n > 0 {
		if holdsNegZeroOrSNaNAVX2((*float32)(unsafe.Pointer(unsafe.SliceData(c))), n) {
			return true
		}
		c = c[n:]
	}
	return holdsNegZeroOrSNaNGo(c)
}

// scanF16AVX2 reports whether one of the n (a positive multiple of 16)
// fp16 values at src is Inf or NaN, and whether one is ±0: scanF16Go's
// lane tests, sixteen values at a time in 16-bit lanes (a + 0x0400
// reaches bit 15 exactly when the magnitude a ≥ 0x7C00; a − 1 does
// exactly when a = 0).
//
//go:noescape
func scanF16AVX2(src *uint16, n int) (nonFinite, zero bool)

// scanF16 reports whether src holds Inf or NaN, and whether it holds ±0:
// sixteen values at a time by AVX2 where the CPU has it (an fp16 GEMM
// operand is scanned whole before its first Mmad; at a decoding step's
// 16×4096×11008 the Go word loop was 7% of a run's samples), the tail
// (and everything, without AVX2) in Go.
func scanF16(src []float16.Float16) (nonFinite, zero bool) {
	if n := len(src) &^ 15; useScanAVX2 && n > 0 {
		nonFinite, zero = scanF16AVX2((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), n)
		src = src[n:]
	}
	nf, z := scanF16Go(src)
	return nonFinite || nf, zero || z
}
