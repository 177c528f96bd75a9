// Package reference holds the float64 implementations of the operators:
// the truth that every backend is judged against. Each is the plainest
// correct code for its contract, on the exact values of the inputs. Where
// a faster form is used (MatMul's packed kernels), it computes the plain
// loop's bits, and a test holds the two together.
package reference

import "gonum.org/v1/gonum/floats"

// VectorAdd returns x[i] + y[i] in float64. For fp16, bf16 and int8
// inputs the float64 sum is exact; for fp32 it is within 2^-53 relative,
// and the output rounding to fp32 of that sum equals the correctly rounded
// sum (53 ≥ 2·24 + 2, so rounding twice is innocuous).
func VectorAdd(x, y []float64) []float64 {
	z := make([]float64, len(x))
	VectorAddInto(z, x, y)
	return z
}

// VectorAddInto is VectorAdd into z (len(z) ≤ len(x), len(y); z may be x
// or y), for callers that work through long vectors a block at a time.
// It is gonum's floats.AddTo, SIMD assembly on amd64: each sum is one
// IEEE addition, the same bits as the plain loop (TestVectorAddInto).
func VectorAddInto(z, x, y []float64) {
	floats.AddTo(z, x[:len(z)], y[:len(z)])
}
