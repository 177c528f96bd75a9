// Package testgen generates seeded test inputs for the npu packages and
// checks elementwise results bit-exactly against a float64 expectation.
package testgen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/tensor"
)

// Rand returns a PCG source for seed (stable across Go versions).
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e7075)) }

// Values returns a tensor of n values of dt drawn from a mix that reaches
// every corner of the format: random bit patterns (subnormals, huge
// values, ±Inf and NaN when specials is true), values of moderate
// magnitude, and values near the overflow threshold.
func Values(r *rand.Rand, dt tensor.DType, n int, specials bool) *tensor.Tensor {
	t := tensor.MustNew(dt, n)
	f, isFloat := dt.FloatFormat()
	for i := range n {
		switch k := r.IntN(4); {
		case !isFloat:
			t.SetBits(i, r.Uint64())
		case k == 0:
			for {
				t.SetBits(i, r.Uint64())
				if v := t.Float64(i); specials || !(math.IsNaN(v) || math.IsInf(v, 0)) {
					break
				}
			}
		case k == 1:
			t.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		case k == 2:
			t.SetFloat64(i, r.NormFloat64()*math.Ldexp(1, r.IntN(f.Emax-f.Emin)+f.Emin), tensor.Numerics{})
		default:
			t.SetFloat64(i, (float64(r.Float64()*0.5)+0.5)*f.MaxFinite()*float64(1-2*r.IntN(2)), tensor.Numerics{})
		}
	}
	return t
}

// Check compares got with want(i) for every element: bit-exact (−0 ≠ +0)
// for numbers, class-only for NaN. It returns a message for the first
// mismatch, or "".
func Check(got *tensor.Tensor, n int, want func(i int) float64) string {
	if got.Len() != n {
		return fmt.Sprintf("got %d elements, want %d", got.Len(), n)
	}
	for i := range n {
		g, w := got.Float64(i), want(i)
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if math.Float64bits(g) != math.Float64bits(w) {
			return fmt.Sprintf("element %d: got %v (bits %#x) want %v", i, g, got.Bits(i), w)
		}
	}
	return ""
}
