//go:build !amd64 || purego

package tensor

import "github.com/x448/float16"

// useF16C is false: fp16 values are looked up in f16Table here.
const useF16C = false

// useAVX2 is false: bf16 and fp32 values widen one at a time here.
const useAVX2 = false

// f16ToF64 converts src to float64 into dst (as long as src) by table.
func f16ToF64(dst []float64, src []float16.Float16) { widenF16Go(dst, src) }

// F16ToF32s sets dst[i] to the fp32 value of src[i] for every i of src
// (dst at least as long): exact, every pattern as float16's Float32
// gives it (a signaling NaN quieted, its payload kept). The emulator's
// cube widens its fp16 operands here, and the decode_attention kernel its
// casts.
func F16ToF32s(dst []float32, src []float16.Float16) { widenF16Go(dst, src) }

// bf16ToF64 converts src to float64 into dst (as long as src).
func bf16ToF64(dst []float64, src []BF16) { bf16ToF64Go(dst, src) }

// f32ToF64 converts src to float64 into dst (as long as src).
func f32ToF64(dst []float64, src []float32) { f32ToF64Go(dst, src) }

// f16ToF64Grouped8 is never called here (useF16C is false).
func f16ToF64Grouped8(*float64, *uint16, int, int) {}

// f16AddToF64F16C is never called here (useF16C is false).
func f16AddToF64F16C(*float64, *uint16, *uint16, int) {}
