//go:build amd64 && !purego

package tensor

import "golang.org/x/sys/cpu"

// useF16C is whether fp16 values are converted by the CPU's F16C
// instructions (f16ToF64F16C) rather than looked up in f16Table: F16C
// converts exactly, as the table does (TestF16CMatchesTable, every one of
// the 2^16 patterns).
var useF16C = cpu.X86.HasAVX && cpu.X86.HasF16C

// f16ToF64F16C stores the n fp16 values at src (n a multiple of 4) as
// float64 values at dst: VCVTPH2PS then VCVTPS2PD, both exact.
//
//go:noescape
func f16ToF64F16C(dst *float64, src *uint16, n int)

// f16ToF64 converts src to float64 into dst (as long as src), by F16C
// where the CPU has it and the table otherwise.
func f16ToF64(dst []float64, src []uint16, tab *[1 << 16]float64) {
	dst = dst[:len(src)]
	n := 0
	if useF16C {
		n = len(src) &^ 3
		if n > 0 {
			f16ToF64F16C(&dst[0], &src[0], n)
		}
	}
	for i, v := range src[n:] {
		dst[n+i] = tab[v]
	}
}
