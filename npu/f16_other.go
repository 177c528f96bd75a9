//go:build !amd64 || purego

package npu

import (
	"github.com/x448/float16"

	"github.com/npuverify/npuverify/tensor"
)

// useF16C is false: binF16 converts in software here.
const useF16C = false

// binF16 computes z = a op b element-wise in fp32, rounded to fp16 (ties
// to even, NaN → the default NaN).
func binF16(op binOp, z, a, b []float16.Float16) { binF16Go(op, z, a, b) }

// useFixAVX2 is false: fixBits runs its Go loop only here (a variable
// for the tests, which switch it).
var useFixAVX2 = false

// fixBitsVec takes nothing here.
func fixBitsVec[T ~uint16 | ~uint32](z []T, exp, frac, maxFinite T, sat, flush bool) int {
	return 0
}

// useBinAVX2 is false: binBF16 and binF32 run in Go here.
const useBinAVX2 = false

// binF32 is binF32Go.
func binF32(op binOp, z, a, b []float32) { binF32Go(op, z, a, b) }

// binBF16 is binBF16Go.
func binBF16(op binOp, z, a, b []tensor.BF16) { binBF16Go(op, z, a, b) }
