//go:build amd64 && !purego

package npu

import (
	"unsafe"

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
