//go:build amd64 && !purego

package ops

import (
	"github.com/x448/float16"
	"golang.org/x/sys/cpu"
)

// magUseF16C is whether absF16s converts by F16C (absF16F32F16C) rather
// than by absF16sGo: the same bits for every fp16 pattern, NaNs quieted
// as float16.Float32 quiets them (TestAbsF16sMatchesTable).
var magUseF16C = cpu.X86.HasAVX && cpu.X86.HasF16C

// absF16F32F16C stores |src[i]| as fp32 at dst for i < n (n a positive
// multiple of 8): VPAND clears each fp16 sign, VCVTPH2PS widens exactly.
//
//go:noescape
func absF16F32F16C(dst *float32, src *uint16, n int)

// absF16s stores |src[i]| as fp32 into dst[i] (dst as long as src).
func absF16s(dst []float32, src []float16.Float16) {
	n := 0
	if magUseF16C {
		if n = len(src) &^ 7; n > 0 {
			absF16F32F16C(&dst[0], (*uint16)(&src[0]), n)
		}
	}
	absF16sGo(dst[n:len(src)], src[n:])
}

// absF16F32Panel16 stores |src[r·ld + c]| as fp32 at dst[16·r + c] for
// c < 16 and r < rows (rows positive): a piece of a packed panel of |B|,
// as absF16F32F16C converts.
//
//go:noescape
func absF16F32Panel16(dst *float32, src *uint16, rows, ld int)

// absF16Panel stores |src[r·ld + c]| as fp32 into dst[16·r + c] for
// c < 16 and r < rows (gemm32's panel width is 16: TestAbsF16Panel).
func absF16Panel(dst []float32, src []float16.Float16, rows, ld int) {
	_, _ = dst[16*rows-1], src[(rows-1)*ld+15]
	absF16F32Panel16(&dst[0], (*uint16)(&src[0]), rows, ld)
}
