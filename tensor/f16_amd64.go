//go:build amd64 && !purego

package tensor

import (
	"unsafe"

	"github.com/x448/float16"
	"golang.org/x/sys/cpu"
)

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

// f16ToF64Grouped8 stores runs groups of eight fp16 values from src, one
// after another, as float64 values at dst, dst + stride, dst + 2·stride,
// … (stride in float64s): VCVTPH2PS then VCVTPS2PD, both exact.
//
//go:noescape
func f16ToF64Grouped8(dst *float64, src *uint16, runs, stride int)

// f16AddToF64F16C stores x[i] + y[i] for the n fp16 values at x and y
// (n a multiple of 8) as float64 values at dst: each widened exactly
// (VCVTPH2PS, VCVTPS2PD), then one VADDPD with x's value first.
//
//go:noescape
func f16AddToF64F16C(dst *float64, x, y *uint16, n int)

// f16ToF64 converts src to float64 into dst (as long as src), by F16C
// where the CPU has it and by f16Table otherwise.
func f16ToF64(dst []float64, src []float16.Float16) {
	widenF16(dst, src, 4, f16ToF64F16C)
}

// f16ToF32F16C stores the n fp16 values at src (n a multiple of 8) as
// fp32 values at dst by VCVTPH2PS (exact).
//
//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n int)

// F16ToF32s sets dst[i] to the fp32 value of src[i] for every i of src
// (dst at least as long): exact, every pattern as float16's Float32
// gives it (a signaling NaN quieted, its payload kept). F16C converts
// eight at a time where the CPU has it, float16 the last few; the table
// otherwise. The emulator's cube widens its fp16 operands here, and the
// decode_attention kernel its casts.
func F16ToF32s(dst []float32, src []float16.Float16) {
	widenF16(dst, src, 8, f16ToF32F16C)
}

// widenF16 is f16ToF64 and F16ToF32s: f16c on the whole groups of group
// values (a power of two), and the last few through float16's own
// conversion, which is what the table holds, so that no table is built
// for them; widenF16Go (the table) where the CPU lacks F16C.
func widenF16[D float32 | float64](dst []D, src []float16.Float16, group int, f16c func(*D, *uint16, int)) {
	if !useF16C {
		widenF16Go(dst, src)
		return
	}
	dst = dst[:len(src)]
	n := len(src) &^ (group - 1)
	if n > 0 {
		f16c(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), n) // float16.Float16 is a uint16
	}
	for i, v := range src[n:] {
		dst[n+i] = D(v.Float32())
	}
}

// useAVX2 is whether bf16 and fp32 values widen to float64 by AVX2
// (bf16ToF64AVX2, f32ToF64AVX2) rather than one at a time: the same exact
// conversion, a signaling NaN quieted as CVTSS2SD quiets it
// (TestWidenMatchesPortable).
var useAVX2 = cpu.X86.HasAVX2

// bf16ToF64AVX2 stores the n bf16 values at src (n a multiple of 8) as
// float64 values at dst: each shifted into the high half of an fp32, then
// VCVTPS2PD.
//
//go:noescape
func bf16ToF64AVX2(dst *float64, src *uint16, n int)

// f32ToF64AVX2 stores the n fp32 values at src (n a multiple of 8) as
// float64 values at dst by VCVTPS2PD.
//
//go:noescape
func f32ToF64AVX2(dst *float64, src *float32, n int)

// bf16ToF64 converts src to float64 into dst (as long as src).
func bf16ToF64(dst []float64, src []BF16) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		if n = len(src) &^ 7; n > 0 {
			bf16ToF64AVX2(&dst[0], (*uint16)(&src[0]), n)
		}
	}
	bf16ToF64Go(dst[n:], src[n:])
}

// f32ToF64 converts src to float64 into dst (as long as src).
func f32ToF64(dst []float64, src []float32) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		if n = len(src) &^ 7; n > 0 {
			f32ToF64AVX2(&dst[0], &src[0], n)
		}
	}
	f32ToF64Go(dst[n:], src[n:])
}
