package verify

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTermsMatchPortable holds terms (termsAVX2 where the CPU has it) to
// termsGo bit for bit: every term and the largest relative error, at
// lengths around the vector width, on seeded values of every magnitude
// with ±0, subnormals, ±Inf, NaN, huge values whose difference overflows,
// and zero, subnormal, infinite and ordinary scales.
func TestTermsMatchPortable(t *testing.T) {
	const seed = 41
	r := rand.New(rand.NewPCG(seed, 0))
	val := func() float64 {
		switch r.IntN(12) {
		case 0:
			return math.Copysign(0, -1)
		case 1:
			return 0
		case 2:
			return math.Inf(1 - 2*r.IntN(2))
		case 3:
			return math.NaN()
		case 4:
			return math.Float64frombits(r.Uint64N(1 << 52)) // subnormal
		case 5:
			return math.Copysign(math.MaxFloat64/(1+r.Float64()), r.NormFloat64())
		case 6:
			return math.Float64frombits(r.Uint64())
		}
		return r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20)
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	scales := []float64{1, 0, 3.7, 0x1p-1070, math.MaxFloat64, math.Inf(1), 1e-300}
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 64, 1001} {
		for _, sE := range scales {
			for _, sV := range scales {
				g, rr := make([]float64, n), make([]float64, n)
				for i := range n {
					g[i], rr[i] = val(), val()
				}
				out := func(f func(g, r, mere, es, gs, rs []float64, scaleE, scaleV float64) float64) ([4][]float64, float64) {
					var o [4][]float64
					for k := range o {
						o[k] = make([]float64, n)
						for i := range o[k] {
							o[k][i] = 42 // every entry must be written
						}
					}
					m := f(g, rr, o[0], o[1], o[2], o[3], sE, sV)
					return o, m
				}
				got, gm := out(terms)
				want, wm := out(termsGo)
				if !same(gm, wm) {
					t.Fatalf("verify terms n=%d scaleE=%g scaleV=%g seed=%d (AVX2 %v): got mare %g / want %g", n, sE, sV, seed, useAVX2, gm, wm)
				}
				for k := range got {
					for i := range n {
						if !same(got[k][i], want[k][i]) {
							t.Fatalf("verify terms n=%d scaleE=%g scaleV=%g seed=%d (AVX2 %v): term %d of element %d (g=%g r=%g): got %g (%#x) / want %g (%#x)",
								n, sE, sV, seed, useAVX2, k, i, g[i], rr[i], got[k][i], math.Float64bits(got[k][i]), want[k][i], math.Float64bits(want[k][i]))
						}
					}
				}
			}
		}
	}
}
