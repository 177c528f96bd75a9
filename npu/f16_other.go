//go:build !amd64 || purego

package npu

import "github.com/x448/float16"

// useF16C is false: binF16 converts in software here.
const useF16C = false

// binF16 computes z = a op b element-wise in fp32, rounded to fp16 (ties
// to even, NaN → the default NaN).
func binF16(op binOp, z, a, b []float16.Float16) { binF16Go(op, z, a, b) }
