package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestVectorAddInto holds VectorAddInto (gonum's SIMD AddTo) to the
// plain loop bit for bit: every pair of special values (signed zeros,
// subnormals, the largest finite values, infinities, quiet and
// signaling NaNs with payloads), random values, every length up to 17,
// and z aliasing x.
func TestVectorAddInto(t *testing.T) {
	specials := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 2.2250738585072014e-308, math.MaxFloat64, -math.MaxFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7FF0000000000001), math.Float64frombits(0xFFF8000000000123), 1, -1, 0.1}
	var x, y []float64
	for _, a := range specials {
		for _, b := range specials {
			x, y = append(x, a), append(y, b)
		}
	}
	const seed = 7
	r := rand.New(rand.NewPCG(seed, seed))
	for range 1000 {
		x, y = append(x, r.NormFloat64()*math.Ldexp(1, r.IntN(200)-100)), append(y, r.NormFloat64())
	}
	for n := range len(x) + 1 {
		if n > 17 && n != len(x) {
			continue
		}
		z, zx := make([]float64, n), append([]float64(nil), x[:n]...)
		VectorAddInto(z, x, y)
		VectorAddInto(zx, zx, y) // z is x
		for i := range n {
			want := x[i] + y[i]
			if math.Float64bits(z[i]) != math.Float64bits(want) || math.Float64bits(zx[i]) != math.Float64bits(want) {
				t.Fatalf("VectorAddInto seed=%d n=%d: element %d: %v + %v = %#x (aliased %#x), want %#x",
					seed, n, i, x[i], y[i], math.Float64bits(z[i]), math.Float64bits(zx[i]), math.Float64bits(want))
			}
		}
	}
}
